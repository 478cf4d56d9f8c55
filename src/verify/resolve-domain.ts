// Domain facts: where a domain's mail goes (RFC 5321 §5.1), cached per engine with a TTL.
import { SharedProbe } from "../lib/shared-probe.ts";
import { AbortedError, raceSignal } from "./abort.ts";
import { checkError, dnsCodeReason, failed, passed } from "./checks.ts";
import type { DnsAnswer, DnsPort, ResolverHealth } from "./ports.ts";
import { TtlCache } from "./ttl-cache.ts";
import type { Check } from "./types.ts";

/** An MX target in the order to try. */
export interface MxTarget {
  /** Lowercase host name without the trailing dot. */
  name: string;
  preference: number;
}

/** A mail host to try, with the addresses its name resolved to. */
export interface MailHost extends MxTarget {
  addresses: string[];
}

// The MX records considered at all, best preference first; the rest are never looked at. A
// session tries at most five hosts (smtp/open-session.ts); the other five stand in for hosts that have
// no address or only a refused one. Real providers publish five or fewer (Google five, Yahoo
// three, Microsoft 365 one), while a zone may publish hundreds to make every verifier resolve them.
export const MAX_MX_TARGETS = 10;

/**
 * The dns_error code of a domain whose MAX_MX_TARGETS best hosts have no address while it
 * publishes more: we don't look beyond the bound, so we can't call the domain mail-less either.
 */
export const MX_LIMIT_CODE = "EMXLIMIT";

// How long one answer to "do our resolvers answer?" stands for the failures that follow it.
const RESOLVER_HEALTH_TTL_MS = 1_000;

export type NoMailCause = "nxdomain" | "no_records" | "null_mx" | "no_host_address";

/**
 * `hasMxRecords` is true only when real MX records exist (a null MX is not one). `hosts` are the
 * targets whose addresses were looked up to find the first usable one (that one, in practice);
 * `fallbacks` are the MX targets after it, in order, looked up only when a session falls back to
 * them (DomainResolver.mailHosts).
 */
export type DomainResolution =
  | { kind: "mail_hosts"; hasMxRecords: boolean; hosts: MailHost[]; fallbacks: MxTarget[] }
  | { kind: "no_mail"; hasMxRecords: boolean; cause: NoMailCause }
  | { kind: "dns_error"; hasMxRecords: boolean; code: string }
  | { kind: "dns_timeout"; hasMxRecords: boolean };

export interface DomainResolverDeps {
  dns: DnsPort;
  nowMs: () => number;
  random: () => number;
  cacheTtlMs: number;
}

export type MailHostsResolution = Extract<DomainResolution, { kind: "mail_hosts" }>;

/** Resolves domains, mail host addresses and PTRs with a TTL cache and one in-flight lookup per domain. */
export class DomainResolver {
  private readonly domains: TtlCache<string, DomainResolution>;
  private readonly hostAddresses: TtlCache<string, DnsAnswer<string[]>>;
  private readonly ptrs: TtlCache<string, Check>;
  private readonly inFlight = new Map<string, Promise<DomainResolution>>();
  /** Null when the DNS port cannot be asked (test doubles): it counts as answering. */
  private readonly health: SharedProbe<ResolverHealth> | null;
  /** The DNS port with host addresses answered from the cache. */
  private readonly dns: DnsPort;

  constructor(private readonly deps: DomainResolverDeps) {
    this.domains = new TtlCache(deps.cacheTtlMs, deps.nowMs);
    this.hostAddresses = new TtlCache(deps.cacheTtlMs, deps.nowMs);
    this.ptrs = new TtlCache(deps.cacheTtlMs, deps.nowMs);
    this.dns = { ...deps.dns, addresses: (host) => this.addressesOf(host) };
    const ask = deps.dns.resolverHealth?.bind(deps.dns);
    this.health = ask ? new SharedProbe(RESOLVER_HEALTH_TTL_MS, ask, deps.nowMs) : null;
  }

  resolve(domain: string): Promise<DomainResolution> {
    const cached = this.domains.get(domain);
    if (cached !== undefined) return Promise.resolve(cached);
    const running = this.inFlight.get(domain);
    if (running !== undefined) return running;
    const lookup = resolveMailHosts(domain, this.dns, this.deps.random).then((resolution) => {
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

  /**
   * The mail hosts of a resolution in the order to try: those already looked up, then each
   * fallback looked up only when the caller asks for the next one, so a session that is answered
   * by its first host costs one address lookup however many MX records the domain publishes.
   * Targets without an address, or whose lookup failed, are skipped; an abort ends the sequence.
   */
  async *mailHosts(resolution: MailHostsResolution, signal?: AbortSignal): AsyncGenerator<MailHost> {
    yield* resolution.hosts;
    for (const target of resolution.fallbacks) {
      let answer: DnsAnswer<string[]>;
      try {
        answer = await raceSignal(this.addressesOf(target.name), signal);
      } catch (error) {
        if (error instanceof AbortedError) return;
        throw error;
      }
      if (answer.kind === "found") yield { ...target, addresses: answer.records };
    }
  }

  /** A host's addresses; definite answers are cached, failures asked again next time. */
  private async addressesOf(host: string): Promise<DnsAnswer<string[]>> {
    const cached = this.hostAddresses.get(host);
    if (cached !== undefined) return cached;
    const answer = await this.deps.dns.addresses(host);
    if (answer.kind === "found" || answer.kind === "nodata" || answer.kind === "nxdomain")
      this.hostAddresses.set(host, answer);
    return answer;
  }

  /** The reverse DNS check of an IP: a PTR (passed), none (failed), or no answer (error, not cached). */
  async reverseDns(ip: string): Promise<Check> {
    const cached = this.ptrs.get(ip);
    if (cached !== undefined) return cached;
    const answer = await this.deps.dns.reverse(ip);
    if (answer.kind === "found" || answer.kind === "nodata" || answer.kind === "nxdomain") {
      const has = answer.kind === "found" && answer.records.some((name) => name !== "");
      const check = has ? passed() : failed("no_ptr");
      this.ptrs.set(ip, check);
      return check;
    }
    return checkError(answer.kind === "timeout" ? "timeout" : dnsCodeReason(answer.code));
  }

  /**
   * Whether our own resolvers answer at all, asked after a lookup failed in a way that could be
   * theirs (a timeout, a refusal). One question serves every failure within a second: when the
   * resolvers are down, hundreds of domains fail at once. A DnsPort without the question (test
   * doubles) counts as answering.
   */
  resolverHealth(): Promise<ResolverHealth> {
    return this.health?.get() ?? Promise.resolve("answers");
  }

  clear(): void {
    this.domains.clear();
    this.hostAddresses.clear();
    this.ptrs.clear();
    this.health?.forget();
  }
}

/**
 * The uncached resolution: MX by preference, else implicit MX, with null MX and failures told
 * apart. Of the MX targets only the best MAX_MX_TARGETS are considered, and their addresses are
 * looked up one at a time, in order, until one has an address (Postfix's smtp_addr_list also
 * looks them up one after the other); the ones after it are left to DomainResolver.mailHosts.
 */
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
  const targets = ordered.slice(0, MAX_MX_TARGETS);
  const answers: DnsAnswer<string[]>[] = [];
  for (const [i, target] of targets.entries()) {
    const a = await dns.addresses(target.name);
    if (a.kind === "found")
      return {
        kind: "mail_hosts",
        hasMxRecords: true,
        hosts: [{ ...target, addresses: a.records }],
        fallbacks: targets.slice(i + 1),
      };
    answers.push(a);
  }
  // No host has an address. If a lookup failed we can't call the domain mail-less.
  if (answers.some((a) => a.kind === "timeout")) return { kind: "dns_timeout", hasMxRecords: true };
  const failed = answers.find((a): a is { kind: "error"; code: string } => a.kind === "error");
  if (failed !== undefined) return { kind: "dns_error", hasMxRecords: true, code: failed.code };
  // Nor when there are records we did not look at.
  if (ordered.length > targets.length) return { kind: "dns_error", hasMxRecords: true, code: MX_LIMIT_CODE };
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
        fallbacks: [],
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
