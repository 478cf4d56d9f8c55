// The DNS port and its default implementation on node:dns (c-ares). Answers are values:
// "no such name" and "no records" are normal outcomes, not exceptions.
import { Resolver } from "node:dns/promises";

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
}

export interface NodeDnsOptions {
  /** "host:port" or "host" strings; empty = the system's resolvers. */
  servers: readonly string[];
  timeoutMs: number;
  tries: number;
}

/** The default DnsPort: one c-ares Resolver with its own servers, timeout and tries. */
export function createNodeDns(options: NodeDnsOptions): DnsPort {
  const resolver = new Resolver({ timeout: options.timeoutMs, tries: options.tries });
  if (options.servers.length > 0) resolver.setServers([...options.servers]);

  return {
    mx: (domain) => answer(resolver.resolveMx(domain)),
    addresses: async (host) => {
      // A first: our egress is IPv4 in every deployment we know of; AAAA only as a fallback,
      // which saves a round trip per host in the common case.
      const v4 = await answer(resolver.resolve4(host));
      if (v4.kind !== "nodata") return v4;
      return answer(resolver.resolve6(host));
    },
    reverse: (ip) => answer(resolver.reverse(ip)),
  };
}

async function answer<T extends unknown[]>(lookup: Promise<T>): Promise<DnsAnswer<T>> {
  try {
    const records = await lookup;
    return records.length === 0 ? { kind: "nodata" } : { kind: "found", records };
  } catch (error) {
    return toAnswer(error);
  }
}

/** Maps c-ares error codes (node:dns constants) to outcomes. */
export function toAnswer(
  error: unknown,
): { kind: "nodata" } | { kind: "nxdomain" } | { kind: "error"; code: string } | { kind: "timeout" } {
  const code =
    typeof error === "object" && error !== null && "code" in error ? String(error.code) : "EUNKNOWN";
  switch (code) {
    case "ENODATA":
      return { kind: "nodata" };
    case "ENOTFOUND":
      return { kind: "nxdomain" };
    case "ETIMEOUT":
      return { kind: "timeout" };
    default:
      // ESERVFAIL, EREFUSED, ECONNREFUSED (resolver unreachable), EBADRESP, …
      return { kind: "error", code };
  }
}
