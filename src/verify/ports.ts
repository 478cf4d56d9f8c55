// The outside world as the engine sees it. Every port has a default; tests replace them. The
// bottom of verify/: the implementations import their port from here, never the other way.
import type net from "node:net";

// DNS (default: dns.ts on node:dns). Answers are values: "no such name" and "no records" are
// normal outcomes, not exceptions.

/** One DNS lookup's outcome. `nodata`: the name exists without records of that type. */
export type DnsAnswer<T> =
  | { kind: "found"; records: T }
  | { kind: "nodata" }
  | { kind: "nxdomain" }
  | { kind: "error"; code: string }
  | { kind: "timeout" };

export interface MxRecord {
  /** Target host, as published ("" or "." for a null MX, RFC 7505). */
  exchange: string;
  priority: number;
}

/** DNS as the engine needs it. Implementations never throw for DNS outcomes. */
export interface DnsPort {
  mx(domain: string): Promise<DnsAnswer<MxRecord[]>>;
  /** IPv4 addresses, or IPv6 ones when the name has no A record. */
  addresses(host: string): Promise<DnsAnswer<string[]>>;
  /** PTR names of an IP address. */
  reverse(ip: string): Promise<DnsAnswer<string[]>>;
  /** Whether the resolvers themselves answer (asked after a lookup failed); absent: assume they do. */
  resolverHealth?(): Promise<ResolverHealth>;
}

/**
 * Our resolvers, as seen from one question any resolver can answer: `answers` (any reply, even
 * NXDOMAIN or SERVFAIL: the resolver is there), `timeout` (no reply within the tries) or
 * `unavailable` (the port is closed, or the resolver refuses to resolve for us).
 */
export type ResolverHealth = "answers" | "timeout" | "unavailable";

// TCP to a mail host's port 25 (defaults: smtp/connect.ts direct, smtp/socks-connect.ts SOCKS5).

/** Opens a TCP connection to host:port; rejects with ConnectError, or AbortedError when `signal` aborts. */
export interface ConnectPort {
  connect(host: string, port: number, signal: AbortSignal): Promise<net.Socket>;
  /**
   * For a port that goes through a dependency of ours (the SOCKS proxy): whether that dependency
   * itself answers, asked after connections failed. Absent for a direct connection.
   */
  dependencyHealth?(): Promise<ProxyHealth>;
}

/**
 * Our proxy, as seen from its own greeting: `answers` (it negotiated), `timeout` (no reply),
 * `unavailable` (closed port, unreachable, or it accepts none of our authentication methods),
 * `rate_limit` (it accepted the connection and closed it without a word: what proxies do to
 * clients beyond their connection or rate limits).
 */
export type ProxyHealth = "answers" | "timeout" | "unavailable" | "rate_limit";

// A provider's pace (docs/pacing.md): the app plugs in one kept in the database.

/** What a pace lets one session ask. */
export interface PaceGrant {
  /** RCPTs the session may send (at least 1); its recipients past them are left unasked. */
  granted: number;
  /** The provider refused us and its window is not known yet: this session finds out whether it answers again. */
  probe: boolean;
  /** The reservation's handle, lowered to what the session really asked. */
  spend: string | null;
}

export type PaceAnswer =
  /** Not paced: ask freely (the session still reports what it asked). */
  | { kind: "free" }
  | { kind: "granted"; grant: PaceGrant }
  /** No room now: the next RCPT fits at `roomAt`. */
  | { kind: "no_room"; roomAt: Date };

/** What one session asked of a provider, reported at its end. */
export interface PaceUsage {
  provider: string;
  egress: string;
  /** When the session took its place at the server (its reservation, when paced). */
  startedAt: Date;
  /** RCPT commands sent. */
  asked: number;
  /** RCPTs the provider answered (any reply but a volume refusal). */
  accepted: number;
  /** A RCPT drew a refusal of our volume (client-scope rate limit: Gmail's 421 4.7.0, [TSS04], 4.7.650). */
  throttled: boolean;
  grant: PaceGrant | null;
}

export interface ProviderPace {
  /**
   * No room: "defer" makes the session throw PaceRefusal before connecting (the worker pool puts
   * the group back, untried); "answer" makes it answer `unknown` (rate_limited) without asking
   * (a realtime request has no later).
   */
  readonly whenNoRoom: "defer" | "answer";
  /** Whether `provider` is paced for `egress`, from a view at most about a second old: only then is reserve worth a round trip. */
  isPaced(provider: string, egress: string): Promise<boolean>;
  /** Reserves up to `want` RCPTs. */
  reserve(provider: string, egress: string, want: number): Promise<PaceAnswer>;
  /** Learns from a session (a throttle teaches the pace). When the provider is paced: when it has room again. Never throws. */
  report(usage: PaceUsage): Promise<Date | null>;
}

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

/**
 * The default guard when none is plugged in: nothing is known to be public, so nothing is
 * connected to (fail closed; the engine keeps no range table of its own).
 */
export const noAddressPolicy: AddressPolicy = () => ({ public: false, range: "unclassified" });
