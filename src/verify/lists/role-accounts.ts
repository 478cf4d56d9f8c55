// Role accounts ("info@", "sales@") reach a team, not a person: senders want them flagged.
// The list is `role-based-email-addresses` (Mixmax, ~1000 prefixes).
import { createRequire } from "node:module";

// The package is CommonJS without type declarations: it exports an array of strings.
const roleList = createRequire(import.meta.url)("role-based-email-addresses") as readonly string[];
const ROLE_ACCOUNTS: ReadonlySet<string> = new Set(roleList.map((r) => r.toLowerCase()));

/** True when the local part (canonical, lowercase) names a role; a `+tag` suffix is ignored. */
export function isRoleAccount(local: string): boolean {
  const unquoted = local.startsWith('"') ? local.slice(1, -1) : local;
  const lower = unquoted.toLowerCase();
  const plus = lower.indexOf("+");
  // "support+billing" is still the support team; a bare "+x" local part has no role base.
  const base = plus > 0 ? lower.slice(0, plus) : lower;
  return ROLE_ACCOUNTS.has(base);
}
