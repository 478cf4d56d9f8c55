// Domain facts: where a domain's mail goes (RFC 5321 §5.1), cached per engine with a TTL.
import type { DnsAnswer, DnsPort } from "./dns.ts";
import { TtlCache } from "./ttl-cache.ts";

/** A mail host to try, with the addresses its name resolved to. */
export interface MailHost {
  /** Lowercase host name without the trailing dot. */
  name: string;
  preference: number;
  addresses: string[];
}

export type NoMailCause = "nxdomain" | "no_records" | "null_mx" | "no_host_address";

/** `hasMxRecords` is true only when real MX records exist (a null MX is not one). */
export type DomainResolution =
  | { kind: "mail_hosts"; hasMxRecords: boolean; hosts: MailHost[] }
  | { kind: "no_mail"; hasMxRecords: boolean; cause: NoMailCause }
  | { kind: "dns_error"; hasMxRecords: boolean; code: string }
  | { kind: "dns_timeout"; hasMxRecords: boolean };

export interface DomainResolverDeps {
  dns: DnsPort;
  nowMs: () => number;
  random: () => number;
  cacheTtlMs: number;
}

/** Resolves domains and PTRs with a TTL cache and one in-flight lookup per name. */
export class DomainResolver {
  private readonly domains: TtlCache<string, DomainResolution>;
  private readonly ptrs: TtlCache<string, boolean>;
  private readonly inFlight = new Map<string, Promise<DomainResolution>>();

  constructor(private readonly deps: DomainResolverDeps) {
    this.domains = new TtlCache(deps.cacheTtlMs, deps.nowMs);
    this.ptrs = new TtlCache(deps.cacheTtlMs, deps.nowMs);
  }

  resolve(domain: string): Promise<DomainResolution> {
    const cached = this.domains.get(domain);
    if (cached !== undefined) return Promise.resolve(cached);
    const running = this.inFlight.get(domain);
    if (running !== undefined) return running;
    const lookup = resolveMailHosts(domain, this.deps.dns, this.deps.random).then((resolution) => {
      // Failures are not cached: the next attempt (a retry minutes later) must ask again.
      if (resolution.kind === "mail_hosts" || resolution.kind === "no_mail")
        this.domains.set(domain, resolution);
      return resolution;
    });
    this.inFlight.set(domain, lookup);
    const forget = (): void => {
      this.inFlight.delete(domain);
    };
    lookup.then(forget, forget);
    return lookup;
  }

  /** Whether the IP has a PTR record; a failed lookup counts as "no" and is not cached. */
  async hasReverseDns(ip: string): Promise<boolean> {
    const cached = this.ptrs.get(ip);
    if (cached !== undefined) return cached;
    const answer = await this.deps.dns.reverse(ip);
    if (answer.kind === "found" || answer.kind === "nodata" || answer.kind === "nxdomain") {
      const has = answer.kind === "found" && answer.records.some((name) => name !== "");
      this.ptrs.set(ip, has);
      return has;
    }
    return false;
  }

  clear(): void {
    this.domains.clear();
    this.ptrs.clear();
  }
}

/** The uncached resolution: MX by preference, else implicit MX, with null MX and failures told apart. */
export async function resolveMailHosts(
  domain: string,
  dns: DnsPort,
  random: () => number,
): Promise<DomainResolution> {
  const mx = await dns.mx(domain);
  switch (mx.kind) {
    case "nxdomain":
      return { kind: "no_mail", hasMxRecords: false, cause: "nxdomain" };
    case "timeout":
      return { kind: "dns_timeout", hasMxRecords: false };
    case "error":
      return { kind: "dns_error", hasMxRecords: false, code: mx.code };
    case "nodata":
      return resolveImplicitMx(domain, dns);
    case "found":
      break;
  }

  const records = mx.records.map((r) => ({ name: normaliseHost(r.exchange), preference: r.priority }));
  const real = records.filter((r) => r.name !== "");
  // RFC 7505 §3: a null MX ("0 ." — node shows the exchange as "") means "accepts no mail".
  // A null MX published next to real ones is a misconfiguration; the real ones win.
  if (real.length === 0) return { kind: "no_mail", hasMxRecords: false, cause: "null_mx" };

  const ordered = orderByPreference(dedupe(real), random);
  const answers = await Promise.all(ordered.map((r) => dns.addresses(r.name)));
  const hosts: MailHost[] = [];
  ordered.forEach((r, i) => {
    const a = answers[i];
    if (a?.kind === "found") hosts.push({ ...r, addresses: a.records });
  });
  if (hosts.length > 0) return { kind: "mail_hosts", hasMxRecords: true, hosts };
  // No host has an address. If a lookup failed we can't call the domain mail-less.
  if (answers.some((a) => a.kind === "timeout")) return { kind: "dns_timeout", hasMxRecords: true };
  const failed = answers.find((a): a is { kind: "error"; code: string } => a.kind === "error");
  if (failed !== undefined) return { kind: "dns_error", hasMxRecords: true, code: failed.code };
  return { kind: "no_mail", hasMxRecords: true, cause: "no_host_address" };
}

// RFC 5321 §5.1: no MX → the domain itself is the mail host (implicit MX) if it has an address.
async function resolveImplicitMx(domain: string, dns: DnsPort): Promise<DomainResolution> {
  const a: DnsAnswer<string[]> = await dns.addresses(domain);
  switch (a.kind) {
    case "found":
      return {
        kind: "mail_hosts",
        hasMxRecords: false,
        hosts: [{ name: domain, preference: 0, addresses: a.records }],
      };
    case "nodata":
      return { kind: "no_mail", hasMxRecords: false, cause: "no_records" };
    case "nxdomain":
      return { kind: "no_mail", hasMxRecords: false, cause: "nxdomain" };
    case "timeout":
      return { kind: "dns_timeout", hasMxRecords: false };
    case "error":
      return { kind: "dns_error", hasMxRecords: false, code: a.code };
  }
}

function normaliseHost(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, "");
}

function dedupe<T extends { name: string }>(items: T[]): T[] {
  const seen = new Set<string>();
  return items.filter((i) => (seen.has(i.name) ? false : (seen.add(i.name), true)));
}

// RFC 5321 §5.1: lowest preference first; hosts of equal preference in random order, which
// spreads our sessions over a provider's equal MX hosts.
function orderByPreference<T extends { preference: number }>(items: T[], random: () => number): T[] {
  return items
    .map((item) => ({ item, tie: random() }))
    .sort((a, b) => a.item.preference - b.item.preference || a.tie - b.tie)
    .map((x) => x.item);
}
