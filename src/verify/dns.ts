// The default implementation of the DNS port (ports.ts) on node:dns (c-ares). Answers are
// values: "no such name" and "no records" are normal outcomes, not exceptions.
import { Resolver } from "node:dns/promises";
import { isIPv4 } from "node:net";
import type { DnsAnswer, DnsPort } from "./ports.ts";

export interface NodeDnsOptions {
  /** "host:port" or "host" strings; empty = the system's resolvers. */
  servers: readonly string[];
  timeoutMs: number;
  tries: number;
}

/**
 * The default DnsPort: one c-ares Resolver with its own servers, timeout and tries. PTRs are
 * asked of DNS as a PTR query: Resolver.reverse() (c-ares gethostbyaddr) answers from /etc/hosts
 * first (127.0.0.1 → "localhost" whatever DNS_SERVERS say), and receivers only ever see DNS.
 */
export function createNodeDns(options: NodeDnsOptions): DnsPort & {
  /** AAAA records alone (addresses() returns them only for names without an A record). */
  addresses6(host: string): Promise<DnsAnswer<string[]>>;
  close(): void;
} {
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
    addresses6: (host) => answer(resolver.resolve6(host)),
    reverse: (ip) => answer(resolver.resolvePtr(reverseName(ip))),
    // The root's NS: every recursive resolver has it from its priming query, so a working one
    // answers at once, and the question leaks nothing about the lists being verified.
    resolverHealth: async () => {
      const outcome = await answer(resolver.resolveNs("."));
      if (outcome.kind === "timeout") return "timeout";
      if (outcome.kind === "error" && (outcome.code === "ECONNREFUSED" || outcome.code === "EREFUSED"))
        return "unavailable";
      return "answers";
    },
    close: () => resolver.cancel(),
  };
}

/** The 32 hex nibbles of an IPv6 address (zone id dropped, embedded IPv4 converted). */
export function expandIpv6(ip: string): string {
  let s = ip.toLowerCase().replace(/%.*$/, "");
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (v4 !== null) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    s = `${s.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = s.split("::");
  const h = head === "" ? [] : head.split(":");
  const t = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t];
  return groups.map((g) => g.padStart(4, "0")).join("");
}

/** The PTR owner name of an IP: 192.0.2.1 → 1.2.0.192.in-addr.arpa; IPv6 → nibbles.ip6.arpa. */
export function reverseName(ip: string): string {
  if (isIPv4(ip)) return `${ip.split(".").reverse().join(".")}.in-addr.arpa`;
  return `${[...expandIpv6(ip)].reverse().join(".")}.ip6.arpa`;
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
