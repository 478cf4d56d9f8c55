// A minimal SMTP client for tests of the simulator itself: reads whole (multi-line) replies,
// nothing more, from a chosen source address if asked.
import { once } from "node:events";
import net from "node:net";
import tls from "node:tls";
import type { MailWorld } from "./mail-world/index.ts";

export interface Reply {
  code: number;
  lines: string[];
  text: string;
}

export class RawSmtp {
  private buffer = "";
  private closed = false;
  private waiter: (() => void) | undefined;

  private constructor(private socket: net.Socket) {
    this.listen(socket);
  }

  private listen(socket: net.Socket): void {
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      this.buffer += chunk;
      this.wake();
    });
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
    socket.on("error", () => undefined);
  }

  /**
   * allowHalfOpen: keep writing after the server closed its side (to send what a client must not);
   * localAddress: the loopback address to connect from (servers count per client IP).
   */
  static open(
    world: MailWorld,
    host: string,
    opts: { allowHalfOpen?: boolean; localAddress?: string } = {},
  ): Promise<RawSmtp> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({
        port: world.smtpPort,
        host: world.addressOf(host),
        allowHalfOpen: opts.allowHalfOpen ?? false,
        localAddress: opts.localAddress,
      });
      socket.once("connect", () => resolve(new RawSmtp(socket)));
      socket.once("error", reject);
    });
  }

  /** TLS handshake over the connection (after a 220 to STARTTLS); the simulator's cert is self-signed. */
  async startTls(): Promise<tls.TLSSocket> {
    const secure = tls.connect({ socket: this.socket, rejectUnauthorized: false });
    await once(secure, "secureConnect");
    this.socket = secure;
    this.listen(secure);
    return secure;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  write(raw: string): void {
    this.socket.write(raw);
  }

  async command(line: string): Promise<Reply> {
    this.write(`${line}\r\n`);
    return this.reply();
  }

  /** The next complete reply; rejects if the server closes first or nothing comes in time. */
  async reply(timeoutMs = 3000): Promise<Reply> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const reply = this.takeReply();
      if (reply) return reply;
      if (this.closed) throw new Error(`connection closed; unread: ${JSON.stringify(this.buffer)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no reply within ${timeoutMs.toString()} ms`);
      await this.wait(left);
    }
  }

  async waitClosed(timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("connection still open");
      await this.wait(left);
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  private takeReply(): Reply | undefined {
    const lines: string[] = [];
    let offset = 0;
    for (;;) {
      const end = this.buffer.indexOf("\r\n", offset);
      if (end < 0) return undefined;
      const line = this.buffer.slice(offset, end);
      offset = end + 2;
      lines.push(line);
      if (line.charAt(3) !== "-") break;
    }
    this.buffer = this.buffer.slice(offset);
    const text = lines.map((l) => l.slice(4)).join("\n");
    return { code: Number(lines[0]?.slice(0, 3)), lines, text };
  }

  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve();
      }, ms);
      this.waiter = () => {
        clearTimeout(timer);
        this.waiter = undefined;
        resolve();
      };
    });
  }

  private wake(): void {
    this.waiter?.();
  }
}
