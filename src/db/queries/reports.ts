import type { Queryable } from "../client.ts";

// The report aggregations (GET /credits/usage, /credits/usage/api-keys, /metrics/verifications).
// Every sum and count happens here, in SQL that runs unchanged on PGlite and PostgreSQL:
//   - days are UTC calendar days, `(created_at at time zone 'UTC')::date`, whatever the session
//     TimeZone is, and leave the database as text (to_char) so no driver turns them into local
//     midnights;
//   - `group by grouping sets ((day), ())` returns the per-day rows and the totals row (date
//     null) from one scan, so totals are computed by the database, not re-added in JS;
//   - a range is the half-open [from, to) (see reports/date-range.ts).
// Zero days are filled in by the callers (reports/), which own the list of days of a range.
// Which index serves which statement: migrations/0003_reporting_indexes.sql and docs/reporting.md.

/** A time window of rows, [from, to). */
export interface TimeWindow {
  from: Date;
  to: Date;
}

/** Aggregates of one report: the whole window, and each UTC day (YYYY-MM-DD) that had rows. */
export interface Grouped<T> {
  totals: T;
  byDay: Map<string, T>;
}

/** Which ledger rows a usage report reads, by `metadata.source`. */
export type UsageSourceFilter = "all" | "frontend" | "api_key";

export interface CreditAmounts {
  /** Sum of |amount| over deductions. */
  used: number;
  /** Sum of amount over grants (refunds included). */
  granted: number;
}

const UTC_DAY = "(created_at at time zone 'UTC')::date";

/** `metadata.api_key_id` in canonical 8-4-4-4-12 form: the only text cast to uuid (anything else would raise 22P02). */
const UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

// Literal predicates, not `$n = 'all' or …`: a literal lets the planner match the partial
// indexes of 0003 (a predicate proof needs the constant in the query text).
const SOURCE_PREDICATE: Record<UsageSourceFilter, string> = {
  all: "",
  frontend: "and metadata->>'source' = 'frontend'",
  api_key: "and metadata->>'source' = 'api_key'",
};

const AMOUNTS = `coalesce(sum(-amount) filter (where amount < 0), 0) as used,
       coalesce(sum(amount) filter (where amount > 0), 0) as granted`;

function splitGrouped<R extends { date: string | null }, T>(rows: R[], map: (r: R) => T, empty: T): Grouped<T> {
  let totals = empty;
  const byDay = new Map<string, T>();
  for (const row of rows) {
    if (row.date === null) totals = map(row);
    else byDay.set(row.date, map(row));
  }
  return { totals, byDay };
}

/** Credits used and granted per UTC day of the window, for one source filter. */
export async function sumCreditUsage(
  q: Queryable,
  userId: string,
  window: TimeWindow,
  source: UsageSourceFilter,
): Promise<Grouped<CreditAmounts>> {
  const { rows } = await q.query<{ date: string | null; used: number; granted: number }>(
    `select to_char(${UTC_DAY}, 'YYYY-MM-DD') as date,
       ${AMOUNTS}
       from credit_transactions
      where user_id = $1 and created_at >= $2::timestamptz and created_at < $3::timestamptz
        ${SOURCE_PREDICATE[source]}
      group by grouping sets ((${UTC_DAY}), ())`,
    [userId, window.from, window.to],
  );
  return splitGrouped(rows, (r) => ({ used: r.used, granted: r.granted }), { used: 0, granted: 0 });
}

/** One per-key bucket as stored: `keyId` null is the unknown bucket. */
export interface ApiKeyUsageRows extends Grouped<CreditAmounts> {
  keyId: string | null;
  /** Present when the key still exists and belongs to the user. */
  key: { name: string; purpose: string; isActive: boolean } | null;
}

interface KeyUsageRow {
  key_id: string | null;
  date: string | null;
  used: number;
  granted: number;
  name: string | null;
  purpose: string | null;
  is_active: boolean | null;
}

/**
 * Credits per `metadata.api_key_id` and UTC day, over rows with source `api_key` or no source
 * (legacy); frontend rows (and any other source) are left out. Ids that are missing, null or not
 * canonical UUIDs form the unknown bucket. Buckets come ordered by key id, the unknown one last;
 * `onlyKeyId` keeps just that key's bucket.
 */
export async function sumApiKeyUsage(
  q: Queryable,
  userId: string,
  window: TimeWindow,
  onlyKeyId: string | null,
): Promise<ApiKeyUsageRows[]> {
  const { rows } = await q.query<KeyUsageRow>(
    `with included as (
       select case when metadata->>'api_key_id' ~* '${UUID_PATTERN}'
                   then (metadata->>'api_key_id')::uuid end as key_id,
              ${UTC_DAY} as day,
              amount
         from credit_transactions
        where user_id = $1 and created_at >= $2::timestamptz and created_at < $3::timestamptz
          and (metadata->>'source' = 'api_key' or metadata->>'source' is null)
     ), grouped as (
       select key_id, to_char(day, 'YYYY-MM-DD') as date,
              ${AMOUNTS}
         from included
        where $4::uuid is null or key_id = $4::uuid
        group by grouping sets ((key_id, day), (key_id))
     )
     select g.key_id, g.date, g.used, g.granted, k.name, k.purpose, k.is_active
       from grouped g
       left join api_keys k on k.id = g.key_id and k.user_id = $1
      order by g.key_id nulls last, g.date nulls first`,
    [userId, window.from, window.to, onlyKeyId],
  );
  const buckets: ApiKeyUsageRows[] = [];
  let current: ApiKeyUsageRows | null = null;
  for (const r of rows) {
    // Rows of one bucket are contiguous (ordered by key id); its totals row (date null) comes first.
    if (r.date === null) {
      current = {
        keyId: r.key_id,
        key: r.name !== null ? { name: r.name, purpose: r.purpose ?? "", isActive: r.is_active ?? false } : null,
        totals: { used: r.used, granted: r.granted },
        byDay: new Map(),
      };
      buckets.push(current);
    } else {
      current?.byDay.set(r.date, { used: r.used, granted: r.granted });
    }
  }
  return buckets;
}

export interface VerificationCounts {
  total: number;
  valid: number;
  invalid: number;
  catchall: number;
  invalidSyntax: number;
  disposableDomain: number;
  unknown: number;
  /** is_catchall = true (the domain accepts any address), whatever the status. */
  catchallDomain: number;
  roleBased: number;
  disposable: number;
  /** Newest created_at of a realtime verification (a batch result's request is its job). */
  lastRealtimeCreatedAt: Date | null;
  lastValidatedAt: Date | null;
}

export interface JobCounts {
  total: number;
  pending: number;
  processing: number;
  completed: number;
  failed: number;
  lastCreatedAt: Date | null;
}

/** A day (or window) without verifications. */
export const NO_VERIFICATIONS: Readonly<VerificationCounts> = Object.freeze({
  total: 0,
  valid: 0,
  invalid: 0,
  catchall: 0,
  invalidSyntax: 0,
  disposableDomain: 0,
  unknown: 0,
  catchallDomain: 0,
  roleBased: 0,
  disposable: 0,
  lastRealtimeCreatedAt: null,
  lastValidatedAt: null,
});

/** A day (or window) without jobs. */
export const NO_JOBS: Readonly<JobCounts> = Object.freeze({ total: 0, pending: 0, processing: 0, completed: 0, failed: 0, lastCreatedAt: null });

/** The range predicate and day grouping of a metrics statement: per day when a window is given, one lifetime row otherwise. */
function metricsShape(userId: string, window: TimeWindow | null) {
  return window
    ? {
        date: `to_char(${UTC_DAY}, 'YYYY-MM-DD')`,
        where: "user_id = $1 and created_at >= $2::timestamptz and created_at < $3::timestamptz",
        groupBy: `group by grouping sets ((${UTC_DAY}), ())`,
        params: [userId, window.from, window.to],
      }
    : { date: "null::text", where: "user_id = $1", groupBy: "", params: [userId] };
}

interface VerificationCountsRow {
  date: string | null;
  total: number;
  valid: number;
  invalid: number;
  catchall: number;
  invalid_syntax: number;
  disposable_domain: number;
  unknown: number;
  catchall_domain: number;
  role_based: number;
  disposable: number;
  last_realtime_created_at: Date | null;
  last_validated_at: Date | null;
}

/** The user's stored verifications (realtime and batch results) by creation time. */
export async function countVerifications(
  q: Queryable,
  userId: string,
  window: TimeWindow | null,
): Promise<Grouped<VerificationCounts>> {
  const s = metricsShape(userId, window);
  const { rows } = await q.query<VerificationCountsRow>(
    `select ${s.date} as date,
            count(*) as total,
            count(*) filter (where status = 'valid') as valid,
            count(*) filter (where status = 'invalid') as invalid,
            count(*) filter (where status = 'catchall') as catchall,
            count(*) filter (where status = 'invalid_syntax') as invalid_syntax,
            count(*) filter (where status = 'disposable_domain') as disposable_domain,
            count(*) filter (where status = 'unknown') as unknown,
            count(*) filter (where is_catchall) as catchall_domain,
            count(*) filter (where is_role_based) as role_based,
            count(*) filter (where is_disposable) as disposable,
            max(created_at) filter (where origin = 'realtime') as last_realtime_created_at,
            max(validated_at) as last_validated_at
       from email_verifications
      where ${s.where}
      ${s.groupBy}`,
    s.params,
  );
  return splitGrouped(
    rows,
    (r) => ({
      total: r.total,
      valid: r.valid,
      invalid: r.invalid,
      catchall: r.catchall,
      invalidSyntax: r.invalid_syntax,
      disposableDomain: r.disposable_domain,
      unknown: r.unknown,
      catchallDomain: r.catchall_domain,
      roleBased: r.role_based,
      disposable: r.disposable,
      lastRealtimeCreatedAt: r.last_realtime_created_at,
      lastValidatedAt: r.last_validated_at,
    }),
    NO_VERIFICATIONS,
  );
}

/** The user's batch jobs by creation time, counted by their current status. */
export async function countJobs(q: Queryable, userId: string, window: TimeWindow | null): Promise<Grouped<JobCounts>> {
  const s = metricsShape(userId, window);
  const { rows } = await q.query<{
    date: string | null;
    total: number;
    pending: number;
    processing: number;
    completed: number;
    failed: number;
    last_created_at: Date | null;
  }>(
    `select ${s.date} as date,
            count(*) as total,
            count(*) filter (where status = 'pending') as pending,
            count(*) filter (where status = 'processing') as processing,
            count(*) filter (where status = 'completed') as completed,
            count(*) filter (where status = 'failed') as failed,
            max(created_at) as last_created_at
       from email_jobs
      where ${s.where}
      ${s.groupBy}`,
    s.params,
  );
  return splitGrouped(
    rows,
    (r) => ({
      total: r.total,
      pending: r.pending,
      processing: r.processing,
      completed: r.completed,
      failed: r.failed,
      lastCreatedAt: r.last_created_at,
    }),
    NO_JOBS,
  );
}

/** The user's tasks by creation time. */
export async function countTasks(q: Queryable, userId: string, window: TimeWindow | null): Promise<Grouped<number>> {
  const s = metricsShape(userId, window);
  const { rows } = await q.query<{ date: string | null; total: number }>(
    `select ${s.date} as date, count(*) as total from tasks where ${s.where} ${s.groupBy}`,
    s.params,
  );
  return splitGrouped(rows, (r) => r.total, 0);
}

/**
 * Distinct addresses among the user's verifications and jobs, compared trimmed and lowercased:
 * a completed job and the verification it produced count once. Per day it is the distinct
 * addresses of that day; the total is distinct over the whole window (not the sum of the days).
 */
export async function countUniqueAddresses(
  q: Queryable,
  userId: string,
  window: TimeWindow | null,
): Promise<Grouped<number>> {
  const s = metricsShape(userId, window);
  const text = window
    ? `with addresses as (
         select ${UTC_DAY} as day, lower(btrim(email)) as address from email_verifications where ${s.where}
         union
         select ${UTC_DAY}, lower(btrim(email_address)) from email_jobs where ${s.where}
       )
       select to_char(day, 'YYYY-MM-DD') as date, count(*) as total from addresses group by day
       union all
       select null, count(*) from (select distinct address from addresses) a`
    : `select null::text as date, count(*) as total from (
         select lower(btrim(email)) from email_verifications where ${s.where}
         union
         select lower(btrim(email_address)) from email_jobs where ${s.where}
       ) a`;
  const { rows } = await q.query<{ date: string | null; total: number }>(text, s.params);
  return splitGrouped(rows, (r) => r.total, 0);
}
