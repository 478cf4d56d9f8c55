/**
 * Which mail host serves each domain, as learned from sessions. A claim skips the domains whose
 * host this process already works at its limit, so session slots go to domains that can start
 * now instead of queueing behind one provider hosting many domains.
 */
export function createDomainHosts(isSaturated: (host: string) => boolean) {
  const MAX_KNOWN = 10_000;
  const MAX_SKIPPED = 500;
  const hostOf = new Map<string, string>();
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
      hostOf.delete(domain);
      hostOf.set(domain, host);
      if (hostOf.size > MAX_KNOWN) hostOf.delete(hostOf.keys().next().value!);
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
