import type { Database } from "../db/client.ts";
import {
  inReportTransaction,
  sumCreditUsage,
  type CreditAmounts,
  type UsageSourceFilter,
} from "../db/queries/reports.ts";
import { validationError } from "../lib/app-error.ts";
import { utcDaysOf, windowOf, type DateRangeInput } from "./date-range.ts";
import { requireRange } from "./validation.ts";

/** The `source` values of GET /credits/usage; `operator` is ours (the spec lists the first three). */
const USAGE_SOURCES: readonly UsageSourceFilter[] = ["all", "frontend", "api_key", "operator"];

/** Credits of a period: `netCredits` = used − granted (the spec's sample). */
export interface UsageTotals {
  usedCredits: number;
  grantedCredits: number;
  netCredits: number;
}

export interface UsagePoint extends UsageTotals {
  /** UTC calendar day, YYYY-MM-DD. */
  date: string;
}

export interface CreditUsageQuery extends DateRangeInput {
  /** Default `all`. */
  source?: string | undefined;
}

export interface CreditUsageReport {
  userId: string;
  from: Date;
  to: Date;
  totals: UsageTotals;
  /** Every UTC day from date(from) to date(to), zeros included. */
  series: UsagePoint[];
}

export const toUsageTotals = (a: CreditAmounts): UsageTotals => ({
  usedCredits: a.used,
  grantedCredits: a.granted,
  netCredits: a.used - a.granted,
});

const NO_AMOUNTS: CreditAmounts = { used: 0, granted: 0 };

/** The zero-filled daily series of per-day amounts. */
export const usageSeries = (days: string[], byDay: Map<string, CreditAmounts>): UsagePoint[] =>
  days.map((date) => ({ date, ...toUsageTotals(byDay.get(date) ?? NO_AMOUNTS) }));

function readSource(value: string | undefined): UsageSourceFilter {
  if (value === undefined) return "all";
  const found = USAGE_SOURCES.find((s) => s === value);
  if (!found)
    throw validationError("Invalid source", [
      { field: "source", reason: `must be one of ${USAGE_SOURCES.join(", ")}` },
    ]);
  return found;
}

/** GET /credits/usage: the ledger of one user over [from, to), optionally one source only. */
export async function reportCreditUsage(
  db: Database,
  userId: string,
  query: CreditUsageQuery,
): Promise<CreditUsageReport> {
  const range = requireRange(query);
  const source = readSource(query.source);
  const grouped = await inReportTransaction(db, (q) => sumCreditUsage(q, userId, windowOf(range), source));
  return {
    userId,
    from: range.from,
    to: range.to,
    totals: toUsageTotals(grouped.totals),
    series: usageSeries(utcDaysOf(range), grouped.byDay),
  };
}
