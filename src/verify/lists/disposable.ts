// Disposable (throw-away inbox) domains, from `disposable-email-domains-js`, which republishes
// the community-maintained disposable-email-domains/disposable-email-domains list.
import { disposableEmailBlocklist } from "disposable-email-domains-js";

let domains: ReadonlySet<string> | null = null;

// Built on first use (the list has ~5000 entries), once per process.
function disposableDomains(): ReadonlySet<string> {
  domains ??= new Set(disposableEmailBlocklist().map((d) => d.trim().toLowerCase()));
  return domains;
}

/**
 * True when the domain or one of its parent domains is listed: throw-away services hand out
 * random subdomains ("x7k2.mailinator.com") that no list can enumerate.
 */
export function isDisposableDomain(domain: string): boolean {
  const set = disposableDomains();
  const labels = domain.trim().toLowerCase().replace(/\.$/, "").split(".");
  // Stop before the bare TLD: a listed "com" would be a list bug, not a verdict.
  for (let i = 0; i < labels.length - 1; i++) {
    if (set.has(labels.slice(i).join("."))) return true;
  }
  return false;
}
