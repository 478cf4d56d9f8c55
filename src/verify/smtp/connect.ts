// How we reach a mail host's port 25: the direct (net.connect) default of the ConnectPort (ports.ts).
import net from "node:net";
import { AbortedError } from "../abort.ts";
import type { ConnectPort } from "../ports.ts";

/** Why a connection attempt failed; `proxy`: our SOCKS proxy failed, not the mail host. */
export type ConnectFailureKind = "refused" | "timeout" | "unreachable" | "dropped" | "proxy";

export class ConnectError extends Error {
  constructor(
    readonly kind: ConnectFailureKind,
    message: string,
  ) {
    super(message);
    this.name = "ConnectError";
  }
}

/** Maps a socket error to the failure kind the engine reports on. */
function connectFailureKind(error: unknown): ConnectFailureKind {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "";
  switch (code) {
    case "ECONNREFUSED":
      return "refused";
    case "ETIMEDOUT":
      return "timeout";
    case "EHOSTUNREACH":
    case "ENETUNREACH":
    case "EADDRNOTAVAIL":
      return "unreachable";
    default:
      return "dropped";
  }
}

/** The default ConnectPort: a direct TCP connection. */
export const directConnect: ConnectPort = createDirectConnect();

/** A direct TCP connection, from `localAddress` when given (an egress identity's source address). */
export function createDirectConnect(localAddress?: string): ConnectPort {
  return { connect: (host, port, signal) => connectDirect(host, port, signal, localAddress) };
}

function connectDirect(
  host: string,
  port: number,
  signal: AbortSignal,
  localAddress: string | undefined,
): Promise<net.Socket> {
  return new Promise<net.Socket>((resolve, reject) => {
    if (signal.aborted) {
      reject(new AbortedError());
      return;
    }
    // noDelay: our writes are whole pipelined batches; Nagle would only add latency.
    const socket = net.connect({
      host,
      port,
      noDelay: true,
      ...(localAddress === undefined ? {} : { localAddress }),
    });
    const cleanup = (): void => {
      socket.off("connect", onConnect);
      socket.off("error", onError);
      signal.removeEventListener("abort", onAbort);
    };
    const onConnect = (): void => {
      cleanup();
      resolve(socket);
    };
    const onError = (error: Error): void => {
      cleanup();
      socket.destroy();
      reject(new ConnectError(connectFailureKind(error), error.message));
    };
    const onAbort = (): void => {
      cleanup();
      socket.destroy();
      reject(new AbortedError());
    };
    socket.once("connect", onConnect);
    socket.once("error", onError);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
