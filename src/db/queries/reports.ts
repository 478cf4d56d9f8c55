import type { Database, Queryable } from "../client.ts";
import { countsByVerificationStatus, statusCountsOf, type StatusCounts } from "./task-metrics.ts";

// The report aggregations (GET /credits/usage, /credits/usage/api-keys, /metrics/verifications).
// Every sum and count happens here, in SQL that runs unchanged on PGlite and PostgreSQL:
//   - a day is a UTC calendar day, `(created_at at time zone 'UTC')::date` whatever the session
//     TimeZone is, and leaves the database as text (to_char) so no driver turns it into a local
//     midnight;
//   - `group by grouping sets ((day), ())` returns the per-day rows and the totals row (date
//     null) from one scan, so totals are computed by the database, not re-added in JS;
//   - a window is the half-open [from, to) (reports/date-range.ts).
// Days without rows are absent here; reports/ fills them with zeros from its list of days.
// Which index serves which statement: migrations/0003_reporting_indexes.sql, docs/reporting.md.
//
// Rows are joined to the window's days (an integer generate_series, whose row count the planner
// knows exactly) rather than grouped by the bare day expression: PostgreSQL has no statistics
// on `(created_at at time zone 'UTC')::date`, guesses one group per row, and then sorts the
// whole window to disk instead of hashing it into ≤ 91 groups. Bench (bench/reports.ts, 750,000
// ledger rows in 90 days, 4 MB work_mem): external merge sort of 25 MB and 767 ms, against a
// hash join + MixedAggregate of 48 kB and ~450 ms for the same rows.

/** A time window of rows, [from, to), and its UTC days (date(from) … date(to)). */
export interface TimeWindow {
  from: Date;
  to: Date;
  /** date(from), YYYY-MM-DD. */
  firstDay: string;
  /** Number of days after firstDay up to date(to) (0 when both fall on one day). */
  extraDays: number;
}

/**
 * Rows bounded on one side or both, without days (metrics given only `from` or only `to`: spec,
 * "`series` is included only when both are given"); a null end is unbounded.
 */
export interface OpenBounds {
  from: Date | null;
  to: Date | null;
}

/** Aggregates of one report: the whole window, and each UTC day (YYYY-MM-DD) that had rows. */
export interface Grouped<T> {
  totals: T;
  byDay: Map<string, T>;
}

/** Which ledger rows a usage report reads, by `metadata.source` (`operator`: operators' grants). */
export type UsageSourceFilter = "all" | "frontend" | "api_key" | "operator";

export interface CreditAmounts {
  /** Sum of |amount| over deductions. */
  used: number;
  /** Sum of amount over grants (refunds included). */
  granted: number;
}

/**
 * Runs the statements of one report in a read-only REPEATABLE READ transaction (one snapshot:
 * a job completing mid-report can't be counted as pending by one statement and as a stored
 * verification by the next), with JIT compilation off for this transaction only: on the bench
 * PostgreSQL's JIT spent 240-550 ms compiling (inlining + optimisation) statements that then
 * ran in 450-700 ms. These are short scans, not hour-long analytics. (PGlite has no JIT; the
 * setting exists and is a no-op there.)
 */
export async function inReportTransaction<T>(db: Database, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query("set transaction isolation level repeatable read, read only");
    await tx.query("select set_config('jit', 'off', true)");
    return fn(tx);
  });
}

const UTC_DAY = (alias: string) => `(${alias}.created_at at time zone 'UTC')::date`;

/** The window's days as a relation `days(day)`: parameters $4 (first day) and $5 (extra days). */
const DAYS_CTE = "days as (select $4::date + i as day from generate_series(0, $5::int) as g(i))";

const windowParams = (userId: string, w: TimeWindow): unknown[] => [
  userId,
  w.from,
  w.to,
  w.firstDay,
  w.extraDays,
];

/** `alias` rows of user $1 in [$2, $3), each joined to its day `d.day`. */
const inWindow = (table: string, alias: string) =>
  `${table} ${alias} join days d on d.day = ${UTC_DAY(alias)}
    where ${alias}.user_id = $1 and ${alias}.created_at >= $2::timestamptz and ${alias}.created_at < $3::timestamptz`;

/** `metadata.api_key_id` in canonical 8-4-4-4-12 form: the only text cast to uuid (anything else would raise 22P02). */
const UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

// Literal predicates, not `$n = 'all' or …`: a literal lets the planner match the partial
// indexes of 0003 (a predicate proof needs the constant in the query text).
const SOURCE_PREDICATE: Record<UsageSourceFilter, string> = {
  all: "",
  frontend: "and c.metadata->>'source' = 'frontend'",
  api_key: "and c.metadata->>'source' = 'api_key'",
  operator: "and c.metadata->>'source' = 'operator'",
};

const AMOUNTS = `coalesce(sum(-c.amount) filter (where c.amount < 0), 0) as used,
       coalesce(sum(c.amount) filter (where c.amount > 0), 0) as granted`;

function splitGrouped<R extends { date: string | null }, T>(
  rows: R[],
  map: (r: R) => T,
  empty: T,
): Grouped<T> {
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
    `with ${DAYS_CTE}
     select to_char(d.day, 'YYYY-MM-DD') as date,
            ${AMOUNTS}
       from ${inWindow("credit_transactions", "c")}
            ${SOURCE_PREDICATE[source]}
      group by grouping sets ((d.day), ())`,
    windowParams(userId, window),
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
 * (legacy); frontend and operator rows (and any other source) are left out. Ids that are
 * missing, null or not canonical UUIDs form the unknown bucket (key id null). Buckets come
 * ordered by key id, the unknown one last; `onlyKeyId` (lowercase) keeps just that key's bucket.
 *
 * Rows are first summed per raw `api_key_id` text and day; the regex guard and the uuid cast then
 * run once per (raw id, day) group instead of once per row. Bench: the case-insensitive regex
 * costs ~3 µs a row, 2.0 s of the 2.2 s the per-row version took over 630,000 rows.
 */
export async function sumApiKeyUsage(
  q: Queryable,
  userId: string,
  window: TimeWindow,
  onlyKeyId: string | null,
): Promise<ApiKeyUsageRows[]> {
  const { rows } = await q.query<KeyUsageRow>(
    `with ${DAYS_CTE},
     by_raw_id as (
       select c.metadata->>'api_key_id' as raw_id, d.day,
              ${AMOUNTS}
         from ${inWindow("credit_transactions", "c")}
          and (c.metadata->>'source' = 'api_key' or c.metadata->>'source' is null)
          and ($6::uuid is null or lower(c.metadata->>'api_key_id') = $6::uuid::text)
        group by 1, 2
     ), by_key as (
       select case when raw_id ~* '${UUID_PATTERN}' then raw_id::uuid end as key_id, day, used, granted
         from by_raw_id
     ), grouped as (
       select key_id, to_char(day, 'YYYY-MM-DD') as date, sum(used) as used, sum(granted) as granted
         from by_key
        where $6::uuid is null or key_id = $6::uuid
        group by grouping sets ((key_id, day), (key_id))
     )
     select g.key_id, g.date, g.used, g.granted, k.name, k.purpose, k.is_active
       from grouped g
       left join api_keys k on k.id = g.key_id and k.user_id = $1
      order by g.key_id nulls last, g.date nulls first`,
    [...windowParams(userId, window), onlyKeyId],
  );
  const buckets: ApiKeyUsageRows[] = [];
  let current: ApiKeyUsageRows | null = null;
  for (const r of rows) {
    // Rows of one bucket are contiguous (ordered by key id); its totals row (date null) comes first.
    if (r.date === null) {
      current = {
        keyId: r.key_id,
        key:
          r.name !== null ? { name: r.name, purpose: r.purpose ?? "", isActive: r.is_active ?? false } : null,
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
  byStatus: StatusCounts;
  /** is_catchall = true (the domain accepts any address), whatever the status. */
  catchallDomain: number;
  roleBased: number;
  disposable: number;
  /** is_free_provider = true (gmail.com, outlook.com, …); rows from before migration 0009 are false. */
  freeProvider: number;
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
  byStatus: Object.freeze(statusCountsOf(undefined)),
  catchallDomain: 0,
  roleBased: 0,
  disposable: 0,
  freeProvider: 0,
  lastRealtimeCreatedAt: null,
  lastValidatedAt: null,
});

/** A day (or window) without jobs. */
export const NO_JOBS: Readonly<JobCounts> = Object.freeze({
  total: 0,
  pending: 0,
  processing: 0,
  completed: 0,
  failed: 0,
  lastCreatedAt: null,
});

/** Which rows a metrics statement reads: a window (with its days), open bounds, or all (null). */
export type MetricsScope = TimeWindow | OpenBounds | null;

const hasDays = (scope: MetricsScope): scope is TimeWindow => scope !== null && "firstDay" in scope;

/**
 * The FROM … GROUP BY frame of a metrics statement over `table` (alias t): per day with the
 * totals row when a window is given, else a single row (date null) of the rows within the
 * bounds given (the lifetime without any). An absent bound adds no predicate at all, so the
 * statement is the same as before bounds existed.
 */
function metricsFrame(table: string, userId: string, scope: MetricsScope) {
  if (hasDays(scope)) {
    return {
      with: `with ${DAYS_CTE}`,
      date: "to_char(d.day, 'YYYY-MM-DD')",
      from: inWindow(table, "t"),
      groupBy: "group by grouping sets ((d.day), ())",
      params: windowParams(userId, scope),
    };
  }
  const params: unknown[] = [userId];
  let from = `${table} t where t.user_id = $1`;
  if (scope?.from) {
    params.push(scope.from);
    from += ` and t.created_at >= $${params.length}::timestamptz`;
  }
  if (scope?.to) {
    params.push(scope.to);
    from += ` and t.created_at < $${params.length}::timestamptz`;
  }
  return { with: "", date: "null::text", from, groupBy: "", params };
}

interface VerificationCountsRow extends StatusCounts {
  date: string | null;
  total: number;
  catchall_domain: number;
  role_based: number;
  disposable: number;
  free_provider: number;
  last_realtime_created_at: Date | null;
  last_validated_at: Date | null;
}

/** The user's stored verifications (realtime answers and batch results) by creation time. */
export async function countVerifications(
  q: Queryable,
  userId: string,
  window: MetricsScope,
): Promise<Grouped<VerificationCounts>> {
  const f = metricsFrame("email_verifications", userId, window);
  const { rows } = await q.query<VerificationCountsRow>(
    `${f.with}
     select ${f.date} as date,
            count(*) as total,
            ${countsByVerificationStatus("t")},
            count(*) filter (where t.is_catchall) as catchall_domain,
            count(*) filter (where t.is_role_based) as role_based,
            count(*) filter (where t.is_disposable) as disposable,
            count(*) filter (where t.is_free_provider) as free_provider,
            max(t.created_at) filter (where t.origin = 'realtime') as last_realtime_created_at,
            max(t.validated_at) as last_validated_at
       from ${f.from}
      ${f.groupBy}`,
    f.params,
  );
  return splitGrouped(
    rows,
    (r) => ({
      total: r.total,
      byStatus: statusCountsOf(r),
      catchallDomain: r.catchall_domain,
      roleBased: r.role_based,
      disposable: r.disposable,
      freeProvider: r.free_provider,
      lastRealtimeCreatedAt: r.last_realtime_created_at,
      lastValidatedAt: r.last_validated_at,
    }),
    NO_VERIFICATIONS,
  );
}

/** The user's batch jobs by creation time, counted by their current status. */
export async function countJobs(
  q: Queryable,
  userId: string,
  window: MetricsScope,
): Promise<Grouped<JobCounts>> {
  const f = metricsFrame("email_jobs", userId, window);
  const { rows } = await q.query<{
    date: string | null;
    total: number;
    pending: number;
    processing: number;
    completed: number;
    failed: number;
    last_created_at: Date | null;
  }>(
    `${f.with}
     select ${f.date} as date,
            count(*) as total,
            count(*) filter (where t.status = 'pending') as pending,
            count(*) filter (where t.status = 'processing') as processing,
            count(*) filter (where t.status = 'completed') as completed,
            count(*) filter (where t.status = 'failed') as failed,
            max(t.created_at) as last_created_at
       from ${f.from}
      ${f.groupBy}`,
    f.params,
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
export async function countTasks(
  q: Queryable,
  userId: string,
  window: MetricsScope,
): Promise<Grouped<number>> {
  const f = metricsFrame("tasks", userId, window);
  const { rows } = await q.query<{ date: string | null; total: number }>(
    `${f.with} select ${f.date} as date, count(*) as total from ${f.from} ${f.groupBy}`,
    f.params,
  );
  return splitGrouped(rows, (r) => r.total, 0);
}

/**
 * Distinct addresses the user asked about: realtime verifications and batch jobs, compared
 * trimmed and lowercased. Batch results are not read: each is the result of one of the user's
 * jobs, with the job's (canonical) address, so it would only add the same address again, at its
 * completion day instead of its request day (bench: reading them too cost 1.6 M hashed rows
 * instead of 0.95 M). Per day it is the distinct addresses requested that day; the total is
 * distinct over the whole window (not the sum of the days).
 */
export async function countUniqueAddresses(
  q: Queryable,
  userId: string,
  window: MetricsScope,
): Promise<Grouped<number>> {
  // count(distinct) sorts each group's addresses; `collate "C"` makes that a byte comparison
  // (same equality as any deterministic collation, cheaper ordering). Bench, 900,000 requested
  // addresses in 90 days: ~1.15 s, against ~1.5 s for a union-dedupe of (day, address) pairs
  // and ~2.1 s when that dedupe is hashed (it spills at any work_mem below ~128 MB).
  const verifications = metricsFrame("email_verifications", userId, window);
  const jobs = metricsFrame("email_jobs", userId, window);
  const byDay = hasDays(window);
  const day = byDay ? "d.day" : "null::date";
  const text = `${verifications.with}
    select ${byDay ? "to_char(day, 'YYYY-MM-DD')" : "null::text"} as date, count(distinct address) as total
      from (select ${day} as day, lower(btrim(t.email)) collate "C" as address
              from ${verifications.from} and t.origin = 'realtime'
            union all
            select ${day}, lower(btrim(t.email_address)) collate "C"
              from ${jobs.from}) a
     ${byDay ? "group by grouping sets ((day), ())" : ""}`;
  const { rows } = await q.query<{ date: string | null; total: number }>(text, verifications.params);
  return splitGrouped(rows, (r) => r.total, 0);
}
