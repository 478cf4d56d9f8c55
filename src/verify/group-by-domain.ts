import type { SyntaxResult } from "./syntax.ts";

/**
 * Most addresses of one domain verified in one engine call (one SMTP session, in transactions of
 * SMTP_MAX_RCPT): the batch workers' claim size and the command line's chunk.
 */
export const DOMAIN_GROUP_MAX = 200;

/**
 * The domain an address is grouped under: its own once it passes syntax; "" for one that fails,
 * which needs no SMTP, so the empty domain keeps it out of every real group.
 */
export const groupDomainOf = (syntax: SyntaxResult): string => (syntax.ok ? syntax.domain : "");

/**
 * Items grouped by domain: domains in first-occurrence order (after `firstDomains`, which come
 * first even while empty), items in input order within each.
 */
export function groupByDomain<T>(
  items: Iterable<T>,
  domainOf: (item: T) => string,
  firstDomains: readonly string[] = [],
): Map<string, T[]> {
  const groups = new Map<string, T[]>(firstDomains.map((d) => [d, []]));
  for (const item of items) {
    const domain = domainOf(item);
    const list = groups.get(domain);
    if (list === undefined) groups.set(domain, [item]);
    else list.push(item);
  }
  return groups;
}

/** Each domain's items cut into runs of at most `max` (one engine call each), domains in order. */
export function chunkGroups<T>(
  groups: ReadonlyMap<string, readonly T[]>,
  max = DOMAIN_GROUP_MAX,
): { domain: string; items: T[] }[] {
  const chunks: { domain: string; items: T[] }[] = [];
  for (const [domain, list] of groups)
    for (let i = 0; i < list.length; i += max) chunks.push({ domain, items: list.slice(i, i + max) });
  return chunks;
}
