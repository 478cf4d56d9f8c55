// did_you_mean: "user@gmial.com" → "user@gmail.com". The candidate comes from
// @zootools/email-spell-checker (mailcheck's algorithm, maintained), restricted to popular
// consumer mail domains and to the domain part; the gate on top is ours and decides from what DNS
// and the disposable list said about the typed domain. A domain that receives mail is never
// "corrected": acme.com is one edit from me.com, and it is a real company's domain.
import { POPULAR_DOMAINS, run as spellCheck } from "@zootools/email-spell-checker";
import type { NoMailCause } from "./resolve-domain.ts";

/**
 * Why the typed domain cannot take mail, the only states in which a suggestion is made: DNS said
 * so (NXDOMAIN, no MX and no address, null MX, MX hosts without an address) or the domain is on
 * the disposable list. A domain with working MX, or whose DNS could not be read, has no state here.
 */
export type DeadDomainCause = NoMailCause | "disposable";

/**
 * The domains a typo may be corrected to: the library's list of popular mailbox providers plus
 * the largest ones it leaves out (its secondLevelDomains rule covers those, but that rule rewrites
 * any "mail."/"live." look-alike into names nobody uses, so it is switched off below).
 */
export const SUGGESTION_DOMAINS: readonly string[] = [
  ...new Set([
    ...POPULAR_DOMAINS,
    "hotmail.com",
    "outlook.com",
    "live.com",
    "yahoo.com",
    "hotmail.co.uk",
    "yahoo.co.uk",
    "gmx.com",
    "gmx.de",
    "gmx.net",
    "mail.com",
    "mail.ru",
    "yandex.ru",
  ]),
];

/**
 * How many edits (insert, delete, substitute, swap two neighbours) a typo may be from `candidate`:
 * one, or two for names of ten characters or more. Two edits turn short names into each other
 * (acme.com → me.com, 99.com → qq.com, mail.tm → mail.ru), one does not; the library's own
 * threshold (sift3 ≤ 2) lets all of those through.
 */
export const maxEditsFor = (candidate: string): number => (candidate.length >= 10 ? 2 : 1);

/** Optimal string alignment distance: Levenshtein plus the swap of two adjacent characters ("gmial"). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i]!;
    const above = rows[i - 1]!;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      row[j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/** The popular domain `domain` is likely a typo of, from the library; null when none is close. */
export function suggestDomain(domain: string): string | null {
  const typed = domain.trim().toLowerCase().replace(/\.$/, "");
  if (typed === "" || SUGGESTION_DOMAINS.includes(typed)) return null;
  const hit = spellCheck({
    // Only the domain is looked at: a local part never changes the candidate.
    email: `x@${typed}`,
    domains: [...SUGGESTION_DOMAINS],
    secondLevelDomains: [],
    topLevelDomains: [],
  });
  const candidate = hit?.domain.toLowerCase();
  if (candidate === undefined || candidate === typed || !SUGGESTION_DOMAINS.includes(candidate)) return null;
  return editDistance(typed, candidate) <= maxEditsFor(candidate) ? candidate : null;
}

/**
 * did_you_mean for a canonical address of `domain`: the address on the popular domain the typed
 * one is likely a typo of, only when the typed domain cannot receive mail (`dead`, from the
 * engine's DNS facts or the disposable list). null for a live domain (`dead` null) or no candidate.
 */
export function suggestAddress(address: string, domain: string, dead: DeadDomainCause | null): string | null {
  if (dead === null) return null;
  const at = address.lastIndexOf("@");
  if (at <= 0) return null;
  const suggested = suggestDomain(domain);
  return suggested === null ? null : `${address.slice(0, at)}@${suggested}`;
}
