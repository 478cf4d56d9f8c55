// The three groups a list owner acts on, as commercial verifiers show them. One table, so the
// summary, its help text and the clean-list downloads agree on what "deliverable" means.
import type { ResultStatus } from "./explain.ts";

export const VERDICT_GROUPS = ["deliverable", "risky", "undeliverable"] as const;
export type VerdictGroup = (typeof VERDICT_GROUPS)[number];

export const GROUP_STATUSES: Record<VerdictGroup, readonly ResultStatus[]> = {
  deliverable: ["valid"],
  // A catch-all domain accepts every address and an unknown got no verdict: both may bounce.
  risky: ["catchall", "unknown"],
  // Disposable addresses are abandoned soon after sign-up: counted as lost, like invalid ones.
  undeliverable: ["invalid", "invalid_syntax", "disposable_domain"],
};

export const GROUP_LABEL: Record<VerdictGroup, string> = {
  deliverable: "Deliverable",
  risky: "Risky",
  undeliverable: "Undeliverable",
};

export interface GroupShare {
  group: VerdictGroup;
  count: number;
  /** Whole percent of the addresses with a result; 0 when none has one yet. */
  percent: number;
}

/** Whole percent of `total`, never showing 0 % for a non-zero count or 100 % for a partial one. */
export function percentOf(count: number, total: number): number {
  if (total <= 0 || count <= 0) return 0;
  if (count >= total) return 100;
  return Math.min(99, Math.max(1, Math.round((count / total) * 100)));
}

export function groupShares(counts: Readonly<Record<ResultStatus, number>>): GroupShare[] {
  const total = VERDICT_GROUPS.reduce((n, g) => n + GROUP_STATUSES[g].reduce((m, s) => m + counts[s], 0), 0);
  return VERDICT_GROUPS.map((group) => {
    const count = GROUP_STATUSES[group].reduce((n, s) => n + counts[s], 0);
    return { group, count, percent: percentOf(count, total) };
  });
}
