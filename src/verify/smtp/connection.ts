// One SMTP client connection: writes command batches, hands out replies in order with a
// per-read deadline, upgrades to TLS, and closes politely. Knows nothing about verification.
import type net from "node:net";
import tls from "node:tls";
import { ReplyReader, SmtpProtocolError, type SmtpReply } from "./reply-reader.ts";

/** A read did not complete within its deadline (greeting tarpit, slow command). */
export class SmtpTimeoutError extends Error {
  constructor(readonly step: "greeting" | "command" | "tls") {
    super(`SMTP ${step} timed out`);
    this.name = "SmtpTimeoutError";
  }
}

/** The server closed (or reset) the connection while we waited for a reply. */
export class SmtpClosedError extends Error {
  constructor(message = "connection closed by server") {
    super(message);
    this.name = "SmtpClosedError";
  }
}

type Waiter = { resolve: (reply: SmtpReply) => void; reject: (error: Error) => void; timer: NodeJS.Timeout };

export class SmtpConnection {
  private socket: net.Socket;
  private readonly reader = new ReplyReader();
  private readonly queued: SmtpReply[] = [];
  private waiter: Waiter | null = null;
  private failure: Error | null = null;
  private closedPromise: Promise<void>;
  private markClosed!: () => void;
  private isClosed = false;

  constructor(socket: net.Socket) {
    this.socket = socket;
    this.closedPromise = new Promise<void>((resolve) => {
      this.markClosed = resolve;
    });
    this.attach(socket);
  }

  /** Resolves once the underlying socket is closed. */
  get closed(): Promise<void> {
    return this.closedPromise;
  }

  /**
   * Open, never failed or interrupted, and nothing unread: a later conversation may continue on
   * it. A server that said something unasked (an idle timeout's 421) is not reusable.
   */
  get reusable(): boolean {
    return !this.isClosed && !this.socket.destroyed && this.failure === null && this.queued.length === 0;
  }

  /** Sends commands in ONE write (a PIPELINING group when there are several). */
  send(commands: readonly string[]): void {
    if (this.socket.destroyed) return;
    this.socket.write(commands.map((c) => `${c}\r\n`).join(""));
  }

  /** The next reply, in order. Rejects with SmtpTimeoutError, SmtpClosedError or SmtpProtocolError. */
  read(timeoutMs: number, step: "greeting" | "command" = "command"): Promise<SmtpReply> {
    const next = this.queued.shift();
    if (next !== undefined) return Promise.resolve(next);
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.waiter !== null) return Promise.reject(new Error("concurrent SMTP reads"));
    return new Promise<SmtpReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        reject(new SmtpTimeoutError(step));
      }, timeoutMs);
      timer.unref();
      this.waiter = { resolve, reject, timer };
    });
  }

  /** STARTTLS upgrade (after the server's 220 to STARTTLS). Certificates are not checked: a probe carries no data worth protecting and many MX hosts present self-signed ones. */
  async upgradeToTls(servername: string, timeoutMs: number): Promise<void> {
    const plain = this.socket;
    this.detach(plain);
    // The TLS socket reports the transport's failures; an unlistened 'error' would crash the process.
    plain.on("error", () => undefined);
    this.reader.reset();
    const secure = tls.connect({
      socket: plain,
      servername: isIp(servername) ? undefined : servername,
      rejectUnauthorized: false,
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        reject(new SmtpTimeoutError("tls"));
      }, timeoutMs);
      timer.unref();
      const onSecure = (): void => {
        cleanup();
        resolve();
      };
      const onError = (error: Error): void => {
        cleanup();
        reject(new SmtpProtocolError(`TLS handshake failed: ${error.message}`));
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        secure.off("secureConnect", onSecure);
        secure.off("error", onError);
      };
      secure.once("secureConnect", onSecure);
      secure.once("error", onError);
    }).catch((error: unknown) => {
      secure.destroy();
      plain.destroy();
      this.fail(error instanceof Error ? error : new Error(String(error)));
      // Both sockets are detached from us: without this, `closed` (and so quit()) would never settle.
      this.onClose();
      throw error;
    });
    this.socket = secure;
    this.attach(secure);
    plain.once("close", () => secure.destroy());
  }

  /**
   * QUIT, then wait (bounded) for the server to close after its 221; the socket is destroyed in
   * any case. Replies still in flight are ignored.
   */
  async quit(timeoutMs: number): Promise<void> {
    if (!this.socket.destroyed) {
      this.socket.write("QUIT\r\n");
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.closedPromise,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
    }
    this.destroy();
    await this.closedPromise;
  }

  /** Makes the pending and every later read reject with `error` (caller abort); the socket stays open for QUIT. */
  interrupt(error: Error): void {
    this.fail(error);
  }

  /** Closes at once (abort, protocol failure). Pending reads reject with SmtpClosedError. */
  destroy(): void {
    this.fail(new SmtpClosedError("connection closed by client"));
    this.socket.destroy();
  }

  private readonly onData = (chunk: Buffer): void => {
    let replies: SmtpReply[];
    try {
      replies = this.reader.push(chunk);
    } catch (error) {
      this.fail(error instanceof Error ? error : new SmtpProtocolError(String(error)));
      this.socket.destroy();
      return;
    }
    for (const reply of replies) {
      const waiter = this.waiter;
      if (waiter !== null) {
        this.waiter = null;
        clearTimeout(waiter.timer);
        waiter.resolve(reply);
      } else {
        this.queued.push(reply);
      }
    }
  };

  private readonly onError = (error: Error): void => {
    this.fail(new SmtpClosedError(`connection error: ${error.message}`));
  };

  private readonly onClose = (): void => {
    this.fail(new SmtpClosedError());
    if (!this.isClosed) {
      this.isClosed = true;
      this.markClosed();
    }
  };

  private attach(socket: net.Socket): void {
    socket.on("data", this.onData);
    socket.on("error", this.onError);
    socket.on("close", this.onClose);
  }

  private detach(socket: net.Socket): void {
    socket.off("data", this.onData);
    socket.off("error", this.onError);
    socket.off("close", this.onClose);
  }

  private fail(error: Error): void {
    this.failure ??= error;
    const waiter = this.waiter;
    if (waiter !== null) {
      this.waiter = null;
      clearTimeout(waiter.timer);
      waiter.reject(this.failure);
    }
  }
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(":");
}
