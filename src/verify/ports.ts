// The outside world as the engine sees it. Every port has a default; tests replace them.
import type { Clock } from "../lib/clock.ts";
import type { DnsPort } from "./dns.ts";
import type { ConnectPort } from "./smtp/connect.ts";
import type { IdleConnections } from "./smtp/idle-connections.ts";

/**
 * Cluster-wide politeness: the batch workers plug a per-server concurrency limit in here. The
 * key is the IP address connected to (servers count our connections per IP, whatever MX name led
 * there). The engine acquires before connecting and releases after QUIT (or a failed connect).
 */
export interface HostGate {
  acquire(host: string, signal?: AbortSignal): Promise<() => void>;
}

/** The outbound guard's verdict on one IP address: may we connect, and which range it is in. */
export interface AddressVerdict {
  public: boolean;
  /** The range's name ("unicast", "loopback", "private", "linkLocal", …), for evidence and logs. */
  range: string;
}

/**
 * The outbound guard (DESIGN.md §5): the app plugs in the one shared with webhooks
 * (webhooks/address-policy.ts). Mail hosts whose address is not public are never connected to,
 * unless the engine option `smtpAllowPrivateHosts` is set (test worlds, labs).
 */
export type AddressPolicy = (ip: string) => AddressVerdict;

export interface EnginePorts {
  dns: DnsPort;
  connect: ConnectPort;
  /** The service's clock (lib/clock.ts): one notion of "now" for tests to move. */
  clock: Clock;
  /** Uniform in [0, 1), like Math.random. */
  random: () => number;
  hostGate: HostGate;
  addressPolicy: AddressPolicy;
  /** Idle connections to share between the engines of one process (realtime and batch). */
  idleConnections: IdleConnections;
}

/**
 * The default guard when none is plugged in: nothing is known to be public, so nothing is
 * connected to (fail closed; the engine keeps no range table of its own).
 */
export const noAddressPolicy: AddressPolicy = () => ({ public: false, range: "unclassified" });

/** No limit: every acquire succeeds at once. */
export const openHostGate: HostGate = {
  acquire: () => Promise.resolve(() => undefined),
};
