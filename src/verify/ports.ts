// The outside world as the engine sees it. Every port has a default; tests replace them.
import type { DnsPort } from "./dns.ts";
import type { ConnectPort } from "./smtp/connect.ts";

export interface ClockPort {
  now(): Date;
}

/**
 * Cluster-wide politeness: the batch workers plug a per-mail-host concurrency limit in here.
 * The engine acquires before connecting to a host and releases after QUIT (or a failed connect).
 */
export interface HostGate {
  acquire(host: string, signal?: AbortSignal): Promise<() => void>;
}

export interface EnginePorts {
  dns: DnsPort;
  connect: ConnectPort;
  clock: ClockPort;
  /** Uniform in [0, 1), like Math.random. */
  random: () => number;
  hostGate: HostGate;
}

export const systemClock: ClockPort = { now: () => new Date() };

/** No limit: every acquire succeeds at once. */
export const openHostGate: HostGate = {
  acquire: () => Promise.resolve(() => undefined),
};
