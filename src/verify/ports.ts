// The outside world as the engine sees it. Every port has a default; tests replace them.
import type { Clock } from "../lib/clock.ts";
import type { DnsPort } from "./dns.ts";
import type { ProviderPace } from "./pace.ts";
import type { ConnectPort } from "./smtp/connect.ts";
import type { IdleConnections } from "./smtp/idle-connections.ts";

/**
 * One way out to the mail servers (SMTP_EGRESS): a local source address to bind, or a SOCKS5
 * proxy. Servers count and judge connections per client IP, so each identity has its own slots,
 * idle connections and rests.
 */
export interface EgressIdentity {
  /** Stable name keying its slots, idle connections and rests; '' is the single default identity. */
  id: string;
  connect: ConnectPort;
}

/** Which identities may take a slot, and whom a rest would be about. */
export interface SlotWish {
  /** Identities the session may leave from, in the engine's order (never empty). */
  egress: readonly string[];
  /** The provider the server belongs to (egress-provider.ts): rests are per identity and provider. */
  provider: string;
}

/**
 * Frees the slot (idempotent); `egress` names the identity it was taken for (absent: the first
 * wished). `keepIdle`, when present and false, says the slot is wanted elsewhere (a realtime
 * request waits at the server): a session ending well closes its connection instead of parking it.
 */
export type HostSlot = (() => void) & { readonly egress?: string; readonly keepIdle?: () => boolean };

/** Why an identity rests for a provider: the provider blocklists or throttles it. */
export type RestReason = "ip_blocklisted" | "rate_limited";

/**
 * Cluster-wide politeness: the batch workers plug a per-server concurrency limit in here. The
 * key is the IP address connected to (servers count our connections per IP, whatever MX name led
 * there), per egress identity. The engine acquires before connecting and releases after QUIT (or
 * a failed connect).
 */
export interface HostGate {
  /**
   * A slot at `host` for one of `wish.egress`: a gate with several identities skips those resting
   * for `wish.provider` and takes the least busy of the rest. A gate may refuse with its own
   * error when every identity rests (the batch gate defers the group like a busy host).
   */
  acquire(host: string, signal?: AbortSignal, wish?: SlotWish): Promise<HostSlot>;
  /**
   * `egress` drew a blocklist or throttling reply from `provider`: it rests for that provider
   * (cluster-wide for the batch gate). May refuse like acquire when now every identity rests.
   */
  rest?(egress: string, host: string, provider: string, reason: RestReason): Promise<void>;
}

/** The outbound guard's verdict on one IP address: may we connect, and which range it is in. */
export interface AddressVerdict {
  public: boolean;
  /** The range's name ("unicast", "loopback", "private", "linkLocal", …), for evidence and logs. */
  range: string;
}

/**
 * The outbound guard (DESIGN.md §5): the app plugs in the one shared with webhooks
 * (net/address-policy.ts). Mail hosts whose address is not public are never connected to,
 * unless the engine option `smtpAllowPrivateHosts` is set (test worlds, labs).
 */
export type AddressPolicy = (ip: string) => AddressVerdict;

export interface EnginePorts {
  dns: DnsPort;
  /** The single identity's port when `egress` is absent (SMTP_PROXY or a direct connection). */
  connect: ConnectPort;
  /** Egress identities (SMTP_EGRESS); absent: built from the smtpEgress option, else `connect` alone. */
  egress: readonly EgressIdentity[];
  /** The service's clock (lib/clock.ts): one notion of "now" for tests to move. */
  clock: Clock;
  /** Uniform in [0, 1), like Math.random. */
  random: () => number;
  hostGate: HostGate;
  addressPolicy: AddressPolicy;
  /** Idle connections to share between the engines of one process (realtime and batch). */
  idleConnections: IdleConnections;
  /** Providers' paces (docs/pacing.md); absent: no provider is paced. */
  pace?: ProviderPace;
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
