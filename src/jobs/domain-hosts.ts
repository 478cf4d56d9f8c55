/**
 * Which mail host serves each domain, as learned from sessions, claims and look-ups ahead. A claim
 * skips the domains whose host this process already works at its limit, so session slots go to
 * domains that can start now instead of queueing behind one provider hosting many domains.
 */
export function createDomainHosts(isSaturated: (host: string) => boolean) {
  const MAX_KNOWN = 10_000;
  const MAX_SKIPPED = 500;
  const hostOf = new Map<string, string>();
  // The provider each known domain's host belongs to, when a look-up or a session said.
  const providerOfDomain = new Map<string, string>();
  // The reverse of hostOf: a claim asks by host (the saturated ones, the freed ones), and a
  // queue learnt ahead holds thousands of domains on a few hosts.
  const domainsOf = new Map<string, Set<string>>();
  const forget = (domain: string): void => {
    const host = hostOf.get(domain);
    if (host === undefined) return;
    hostOf.delete(domain);
    providerOfDomain.delete(domain);
    const domains = domainsOf.get(host)!;
    domains.delete(domain);
    if (domains.size === 0) domainsOf.delete(host);
  };
  /** Known domains of `hosts`, at most MAX_SKIPPED. */
  const domainsOfHosts = (hosts: Iterable<string>): string[] => {
    const out: string[] = [];
    for (const host of hosts)
      for (const domain of domainsOf.get(host) ?? []) {
        if (out.length >= MAX_SKIPPED) return out;
        out.push(domain);
      }
    return out;
  };
  const freed = new Set<string>();
  return {
    markFreed(host: string): void {
      freed.add(host);
    },
    /** Known domains of hosts that just freed a slot (consumed: one preferred claim per freed slot). */
    domainsOfFreedHosts(): string[] {
      if (freed.size === 0) return [];
      const hosts = [...freed].filter((h) => !isSaturated(h));
      freed.clear();
      return domainsOfHosts(hosts);
    },
    /** Records where `domain` is served (and by whom); true when that is news (unknown before, moved, or newly named). */
    learn(domain: string, host: string, provider: string | null = null): boolean {
      const named = provider !== null && providerOfDomain.get(domain) !== provider;
      if (hostOf.get(domain) === host) {
        if (named) providerOfDomain.set(domain, provider);
        return named;
      }
      forget(domain);
      hostOf.set(domain, host);
      if (provider !== null) providerOfDomain.set(domain, provider);
      const domains = domainsOf.get(host);
      if (domains) domains.add(domain);
      else domainsOf.set(host, new Set([domain]));
      if (hostOf.size > MAX_KNOWN) forget(hostOf.keys().next().value!);
      return true;
    },
    knows: (domain: string): boolean => hostOf.has(domain),
    /** Known hosts that pass `test`. */
    hostsWhere: (test: (host: string) => boolean): string[] => [...domainsOf.keys()].filter(test),
    /** Known domains served by `host`, other than `domain`. */
    otherDomainsAt(host: string, domain: string): number {
      const domains = domainsOf.get(host);
      return domains === undefined ? 0 : domains.size - (domains.has(domain) ? 1 : 0);
    },
    domainsToSkip(): string[] {
      return domainsOfHosts([...domainsOf.keys()].filter(isSaturated));
    },
  };
}

export type DomainHosts = ReturnType<typeof createDomainHosts>;
