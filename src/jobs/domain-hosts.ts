/**
 * Which mail host serves each domain, as learned from sessions. A claim skips the domains whose
 * host this process already works at its limit, so session slots go to domains that can start
 * now instead of queueing behind one provider hosting many domains.
 */
export function createDomainHosts(isSaturated: (host: string) => boolean) {
  const MAX_KNOWN = 10_000;
  const MAX_SKIPPED = 500;
  const hostOf = new Map<string, string>();
  // How many known domains each host serves (kept with hostOf).
  const domainsAt = new Map<string, number>();
  const forget = (domain: string): void => {
    const host = hostOf.get(domain);
    if (host === undefined) return;
    hostOf.delete(domain);
    const n = (domainsAt.get(host) ?? 1) - 1;
    if (n > 0) domainsAt.set(host, n);
    else domainsAt.delete(host);
  };
  const freed = new Set<string>();
  return {
    markFreed(host: string): void {
      freed.add(host);
    },
    /** Known domains of hosts that just freed a slot (consumed: one preferred claim per freed slot). */
    domainsOfFreedHosts(): string[] {
      if (freed.size === 0) return [];
      const hosts = new Set([...freed].filter((h) => !isSaturated(h)));
      freed.clear();
      if (hosts.size === 0) return [];
      const domains: string[] = [];
      for (const [domain, host] of hostOf) {
        if (hosts.has(host)) domains.push(domain);
        if (domains.length >= MAX_SKIPPED) break;
      }
      return domains;
    },
    learn(domain: string, host: string): void {
      forget(domain);
      hostOf.set(domain, host);
      domainsAt.set(host, (domainsAt.get(host) ?? 0) + 1);
      if (hostOf.size > MAX_KNOWN) forget(hostOf.keys().next().value!);
    },
    knows: (domain: string): boolean => hostOf.has(domain),
    /** Known domains served by `host`, other than `domain`. */
    otherDomainsAt(host: string, domain: string): number {
      const n = domainsAt.get(host) ?? 0;
      return hostOf.get(domain) === host ? n - 1 : n;
    },
    domainsToSkip(): string[] {
      const skip: string[] = [];
      for (const [domain, host] of hostOf) {
        if (isSaturated(host)) skip.push(domain);
        if (skip.length >= MAX_SKIPPED) break;
      }
      return skip;
    },
  };
}
