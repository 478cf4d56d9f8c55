// Caps on open HTTP connections, counted at the socket before any byte is parsed. Measured without
// them: 19,900 connections from one address, each sending its headers a byte at a time, took all
// 20,000 file descriptors of the process; /healthz was refused for about 75 s.
import type { Server, Socket } from "node:net";
import ipaddr from "ipaddr.js";

export interface ConnectionLimits {
  /** Open connections one client address may hold; 0 = no cap. */
  perAddress: number;
  /** Open connections in all; 0 = no cap. */
  total: number;
}

/**
 * Connections still accepted from loopback addresses once `total` is reached: the operator's
 * health checks and CLI on the machine itself keep working while remote clients fill the server.
 * Loopback addresses are counted per address like any other, so a local flood is capped too.
 */
export const LOOPBACK_RESERVE = 16;

export type ConnectionVerdict = "accept" | "per_address" | "total";

/** Whether one more connection from an address is accepted, given what is open now. */
export function admitConnection(
  limits: ConnectionLimits,
  open: { fromAddress: number; total: number },
  isLoopback: boolean,
): ConnectionVerdict {
  if (limits.perAddress > 0 && open.fromAddress >= limits.perAddress) return "per_address";
  if (limits.total > 0 && open.total >= limits.total + (isLoopback ? LOOPBACK_RESERVE : 0)) return "total";
  return "accept";
}

/** The address a client is counted under: IPv4-mapped IPv6 (`::ffff:192.0.2.1`) as IPv4. */
export function clientAddressOf(remoteAddress: string): { key: string; isLoopback: boolean } {
  try {
    const parsed = ipaddr.process(remoteAddress);
    return { key: parsed.toString(), isLoopback: parsed.range() === "loopback" };
  } catch {
    return { key: remoteAddress, isLoopback: false };
  }
}

export interface RefusedConnections {
  reason: Exclude<ConnectionVerdict, "accept">;
  /** The address of the latest refusal. */
  address: string;
  /** Refusals since the previous report. */
  refused: number;
}

/** Reports refusals at most this often: a flood must not become a flood of log lines. */
const REPORT_INTERVAL_MS = 10_000;

/**
 * Applies `limits` to every connection `server` accepts: one over a cap is destroyed at once,
 * before Node reads a byte of it. `report` hears of refusals, at most once per 10 s.
 */
export function limitConnections(
  server: Server,
  limits: ConnectionLimits,
  report: (refused: RefusedConnections) => void,
): void {
  if (limits.perAddress === 0 && limits.total === 0) return;
  const perAddress = new Map<string, number>();
  let total = 0;
  let refused = 0;
  let reportedAt = -Infinity;

  server.on("connection", (socket: Socket) => {
    if (socket.remoteAddress === undefined) {
      // Already gone (reset before we saw it): nothing to count.
      socket.destroy();
      return;
    }
    const { key, isLoopback } = clientAddressOf(socket.remoteAddress);
    const fromAddress = perAddress.get(key) ?? 0;
    const verdict = admitConnection(limits, { fromAddress, total }, isLoopback);
    if (verdict !== "accept") {
      socket.destroy();
      refused++;
      const now = performance.now();
      if (now - reportedAt >= REPORT_INTERVAL_MS) {
        report({ reason: verdict, address: key, refused });
        reportedAt = now;
        refused = 0;
      }
      return;
    }
    perAddress.set(key, fromAddress + 1);
    total++;
    socket.once("close", () => {
      total--;
      const n = (perAddress.get(key) ?? 1) - 1;
      if (n > 0) perAddress.set(key, n);
      else perAddress.delete(key);
    });
  });
}
