import type { Database } from "../db/client.ts";
import { inReportTransaction, sumApiKeyUsage } from "../db/queries/reports.ts";
import { validationError } from "../lib/app-error.ts";
import { isUuid } from "../lib/ids.ts";
import { toUsageTotals, usageSeries, type UsagePoint, type UsageTotals } from "./credit-usage.ts";
import { utcDaysOf, windowOf, type DateRangeInput } from "./date-range.ts";
import { requireRange } from "./validation.ts";

/** A key the ledger names and that still exists for this user. */
export interface KnownKeyFacts {
  name: string;
  purpose: string;
  isActive: boolean;
}

/**
 * One bucket: a key id the ledger names (with its facts when the key still exists, `key` null
 * when it was deleted), or the unknown bucket (missing, null or malformed `metadata.api_key_id`).
 */
export type ApiKeyUsageBucket =
  | {
      isUnknown: false;
      apiKeyId: string;
      key: KnownKeyFacts | null;
      totals: UsageTotals;
      series: UsagePoint[];
    }
  | { isUnknown: true; totals: UsageTotals; series: UsagePoint[] };

export interface ApiKeyUsageQuery extends DateRangeInput {
  apiKeyId?: string | undefined;
}

export interface ApiKeyUsageReport {
  userId: string;
  from: Date;
  to: Date;
  /** Ordered by api_key_id, the unknown bucket last; only buckets with rows in the range. */
  keys: ApiKeyUsageBucket[];
}

function readKeyId(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (!isUuid(value))
    throw validationError("Invalid api_key_id", [{ field: "api_key_id", reason: "must be a valid uuid" }]);
  return value.toLowerCase();
}

/** GET /credits/usage/api-keys: api_key and legacy (no source) ledger rows per key over [from, to). */
export async function reportApiKeyUsage(
  db: Database,
  userId: string,
  query: ApiKeyUsageQuery,
): Promise<ApiKeyUsageReport> {
  const range = requireRange(query);
  const onlyKeyId = readKeyId(query.apiKeyId);
  const days = utcDaysOf(range);
  const buckets = await inReportTransaction(db, (q) => sumApiKeyUsage(q, userId, windowOf(range), onlyKeyId));
  return {
    userId,
    from: range.from,
    to: range.to,
    keys: buckets.map((b): ApiKeyUsageBucket => {
      const totals = toUsageTotals(b.totals);
      const series = usageSeries(days, b.byDay);
      return b.keyId === null
        ? { isUnknown: true, totals, series }
        : { isUnknown: false, apiKeyId: b.keyId, key: b.key, totals, series };
    }),
  };
}
