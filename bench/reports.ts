// Latency of the usage and metrics reports over a large history, on PostgreSQL.
// Run: BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/reports.ts
// (or through the bench runner: benchReports()).
//
// Seeds a fresh database (mailprobe_bench_<random>, dropped at the end) with one heavy user among
// 50 light ones, spread over 120 days and interleaved in time as production traffic would be:
//   - credit_transactions: 1,000,000 rows for the heavy user (+100,000 for the others): realtime
//     charges from 3 API keys and the frontend, task reservations and refunds, grants, legacy
//     rows without source, malformed and deleted key ids;
//   - tasks / email_jobs: 1,000 tasks × 1,000 jobs for the heavy user (+50 × 10 × 100), 97%
//     completed, each completed job with its stored verification;
//   - email_verifications: those batch results + 200,000 realtime verifications.
// Everything is set-based (`insert … select … from generate_series`); then VACUUM ANALYZE (the
// state autovacuum keeps a table in). Each report is called 20 times over a 90-day range through
// the reports service (the route adds only JSON serialisation); the median is printed, with the
// plan of each statement (EXPLAIN ANALYZE of the exact SQL the service ran). Then the indexes of
// migration 0003 are dropped and the reports that read the ledger are measured again, to show
// what they buy. About 2.5 minutes in all (~40 s of it seeding).
import { createHash, randomBytes } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import pg from "pg";
import type { Database, QueryResult, Queryable, Transaction } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { openPostgres } from "../src/db/postgres.ts";
import { createReportsService } from "../src/reports/service.ts";

const LEDGER_ROWS = 1_000_000;
const OTHER_USERS = 50;
const TASKS = 1_000;
const JOBS_PER_TASK = 1_000;
const REALTIME_VERIFICATIONS = 200_000;
const SPAN_DAYS = 120;
const CALLS = 20;
/** Stop measuring a report after this long, even with fewer than CALLS samples (keeps the bench under ~3 min). */
const PER_REPORT_BUDGET_MS = 45_000;

/** The indexes of migrations/0003_reporting_indexes.sql (dropped for the "without" run). */
const REPORTING_INDEXES = [
  "credit_transactions_usage_idx",
  "credit_transactions_api_key_usage_idx",
  "credit_transactions_frontend_usage_idx",
];

const SEEDED_TABLES = [
  "users",
  "api_keys",
  "credit_transactions",
  "tasks",
  "email_verifications",
  "email_jobs",
];

/** A deterministic UUID from a label, the same as md5(label)::uuid in SQL. */
const uuidOf = (label: string): string => {
  const h = createHash("md5").update(label).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

const HEAVY_USER = uuidOf("bench-user-0");
const LIGHT_USER = uuidOf("bench-user-7");

async function timed<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await fn();
  console.log(`  ${label.padEnd(58)} ${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s`);
  return result;
}

/**
 * Seeds the history described at the top in one transaction; `end` is the newest timestamp.
 * Bulk-load style: secondary indexes are dropped first and rebuilt after (a sorted build beats
 * a million random insertions), and a superuser skips the per-row foreign-key triggers.
 */
async function seedReportHistory(db: Database, end: Date): Promise<void> {
  await db.transaction(async (tx) => {
    const { rows } = await tx.query<{ su: string }>("select current_setting('is_superuser') as su");
    if (rows[0]?.su === "on") await tx.query("set local session_replication_role = replica");
    await tx.query("set local maintenance_work_mem = '256MB'");
    const { rows: secondary } = await tx.query<{ name: string; def: string }>(
      `select indexname as name, indexdef as def from pg_indexes
        where schemaname = current_schema() and tablename = any($1::text[])
          and indexname not in (select conname from pg_constraint)`,
      [SEEDED_TABLES],
    );
    for (const index of secondary) await tx.query(`drop index ${index.name}`);
    await insertHistory(tx, end);
    await timed(`rebuild ${secondary.length} secondary indexes`, async () => {
      for (const index of secondary) await tx.query(index.def);
    });
  });
  await timed("vacuum analyze", async () => {
    for (const table of SEEDED_TABLES) await db.query(`vacuum analyze ${table}`);
  });
}

async function insertHistory(db: Queryable, end: Date): Promise<void> {
  const span = `${SPAN_DAYS} days`;
  await timed("users (1 heavy + 50 light) and 3 API keys each", async () => {
    await db.query(
      `insert into users (id, email, balance, webhook_secret, created_at, updated_at)
       select md5('bench-user-' || u)::uuid, null, 1000000, 'whsec_bench', $1::timestamptz - interval '130 days', $1
         from generate_series(0, $2::int) u`,
      [end, OTHER_USERS],
    );
    await db.query(
      `insert into api_keys (id, user_id, name, purpose, key_hash, key_prefix, key_ciphertext, created_at)
       select md5('bench-key-' || u || '-' || k)::uuid, md5('bench-user-' || u)::uuid, 'key ' || k,
              (array['zapier', 'n8n', 'custom'])[k + 1], md5('bench-hash-' || u || '-' || k), 'mpk_bench', 'x',
              $1::timestamptz - interval '130 days'
         from generate_series(0, $2::int) u, generate_series(0, 2) k`,
      [end, OTHER_USERS],
    );
  });

  // Row g belongs to a light user when g % 11 = 0 (1 in 11), else to the heavy one, so the heavy
  // user's rows are interleaved with everyone else's on the heap, in time order.
  const total = Math.round((LEDGER_ROWS * 11) / 10);
  await timed(`credit_transactions: ${total.toLocaleString("en")} rows`, async () => {
    await db.query(
      `insert into credit_transactions (id, user_id, type, amount, balance_after, reason, metadata, created_at)
       select gen_random_uuid(),
              case when g % 11 = 0 then md5('bench-user-' || (1 + (g / 11) % $3::int))::uuid
                   else md5('bench-user-0')::uuid end,
              case when x.amount > 0 then 'grant' else 'deduction' end,
              x.amount, 1000000, x.reason, x.metadata,
              $1::timestamptz - $4::interval + (g * $4::interval / $2::int)
         from generate_series(1, $2::int) g,
              lateral (select g % 100 as r,
                              md5('bench-key-' || case when g % 11 = 0 then 1 + (g / 11) % $3::int else 0 end
                                  || '-' || (g % 3))::text as key_id) k,
              lateral (select
                case when k.r = 0 then 1000 when k.r = 3 then 20 when k.r in (1, 2) then -500 else -1 end as amount,
                case when k.r = 0 then 'purchase' when k.r = 3 then 'task_unknown_refund'
                     when k.r in (1, 2) then 'task_reservation' else 'verification' end as reason,
                case when k.r = 0 or k.r = 20 then '{}'::jsonb
                     when k.r between 4 and 19 then '{"source": "frontend"}'::jsonb
                     when k.r = 21 then '{"source": "api_key", "api_key_id": "not-a-uuid"}'::jsonb
                     when k.r = 22 then jsonb_build_object('source', 'api_key', 'api_key_id', md5('deleted-' || g % 7)::uuid)
                     else jsonb_build_object('source', 'api_key', 'api_key_id', k.key_id::uuid, 'api_key_purpose', 'custom')
                end as metadata) x`,
      [end, total, OTHER_USERS, span],
    );
  });

  // Tasks: the heavy user's 1,000, then 10 per light user.
  await timed(`tasks: ${TASKS + OTHER_USERS * 10} rows`, async () => {
    await db.query(
      `insert into tasks (id, user_id, source, email_count, domain_count, created_at, updated_at, started_at, finished_at)
       select md5('bench-task-0-' || t)::uuid, md5('bench-user-0')::uuid, 'api_key', $2::int, 100, ts, ts, ts, ts
         from generate_series(0, $3::int - 1) t,
              lateral (select $1::timestamptz - $4::interval + (t * $4::interval / $3::int) as ts) x
       union all
       select md5('bench-task-' || u || '-' || t)::uuid, md5('bench-user-' || u)::uuid, 'frontend', 100, 10, ts, ts, ts, ts
         from generate_series(1, $5::int) u, generate_series(0, 9) t,
              lateral (select $1::timestamptz - $4::interval + ((t * 12 + u % 12) * interval '1 day') as ts) x`,
      [end, JOBS_PER_TASK, TASKS, span, OTHER_USERS],
    );
  });

  // Job i of the heavy user: task i / 1000, created with its task, status by i % 100 (0 failed,
  // 1 pending, 2 processing, else completed). A completed job's verification is stored 30 s later.
  // 400,000 distinct addresses over 997 domains, so addresses repeat across tasks.
  const jobs = TASKS * JOBS_PER_TASK;
  const address = (i: string) => `'u' || (${i} % 400000) || '@d' || ((${i} % 400000) % 997) || '.test'`;
  await timed(`email_verifications: batch results of ${jobs.toLocaleString("en")} jobs (97%)`, async () => {
    await db.query(
      `insert into email_verifications
         (id, user_id, email, status, is_role_based, is_disposable, has_mx_records, has_reverse_dns, domain_name,
          host_name, server_type, is_catchall, needs_physical_verify, validated_at, origin, source, task_id, created_at)
       select md5('bench-ver-' || i)::uuid, md5('bench-user-0')::uuid, ${address("i")},
              (array['valid', 'valid', 'valid', 'valid', 'invalid', 'invalid', 'catchall', 'invalid_syntax',
                     'disposable_domain', 'unknown'])[1 + i % 10],
              i % 13 = 0, i % 10 = 8, true, true, 'd' || ((i % 400000) % 997) || '.test', 'mx.bench.test', 'postfix',
              i % 10 = 6, false, ts + interval '30 seconds', 'batch', 'api_key',
              md5('bench-task-0-' || (i / $2::int))::uuid, ts + interval '30 seconds'
         from generate_series(0, $3::int - 1) i,
              lateral (select $1::timestamptz - $4::interval + ((i / $2::int) * $4::interval / $5::int) as ts) x
        where i % 100 > 2`,
      [end, JOBS_PER_TASK, jobs, span, TASKS],
    );
  });
  await timed(`email_verifications: ${REALTIME_VERIFICATIONS.toLocaleString("en")} realtime`, async () => {
    await db.query(
      `insert into email_verifications
         (id, user_id, email, status, is_role_based, is_disposable, has_mx_records, has_reverse_dns, domain_name,
          host_name, server_type, is_catchall, needs_physical_verify, validated_at, origin, source, created_at)
       select gen_random_uuid(), md5('bench-user-0')::uuid, ${address("(i * 7)")},
              (array['valid', 'invalid', 'catchall', 'valid', 'unknown'])[1 + i % 5],
              i % 17 = 0, false, true, true, 'd' || (((i * 7) % 400000) % 997) || '.test', 'mx.bench.test', 'gmail',
              i % 5 = 2, false, ts, 'realtime', 'api_key', ts
         from generate_series(1, $2::int) i,
              lateral (select $1::timestamptz - $3::interval + (i * $3::interval / $2::int) as ts) x`,
      [end, REALTIME_VERIFICATIONS, span],
    );
  });
  await timed(`email_jobs: ${(jobs + OTHER_USERS * 1000).toLocaleString("en")} rows`, async () => {
    await db.query(
      `insert into email_jobs (id, task_id, user_id, position, email_address, domain, status, attempts, email_id,
                               created_at, updated_at)
       select md5('bench-job-' || i)::uuid, md5('bench-task-0-' || (i / $2::int))::uuid, md5('bench-user-0')::uuid,
              i % $2::int, ${address("i")}, 'd' || ((i % 400000) % 997) || '.test',
              case i % 100 when 0 then 'failed' when 1 then 'pending' when 2 then 'processing' else 'completed' end,
              1, case when i % 100 > 2 then md5('bench-ver-' || i)::uuid end, ts, ts
         from generate_series(0, $3::int - 1) i,
              lateral (select $1::timestamptz - $4::interval + ((i / $2::int) * $4::interval / $5::int) as ts) x
       union all
       select gen_random_uuid(), md5('bench-task-' || u || '-' || t)::uuid, md5('bench-user-' || u)::uuid, p,
              'l' || p || '@light' || u || '.test', 'light' || u || '.test', 'completed', 1, null, ts, ts
         from generate_series(1, $6::int) u, generate_series(0, 9) t, generate_series(0, 99) p,
              lateral (select $1::timestamptz - $4::interval + ((t * 12 + u % 12) * interval '1 day') as ts) x`,
      [end, JOBS_PER_TASK, jobs, span, TASKS, OTHER_USERS],
    );
  });
}

interface Captured {
  text: string;
  params: readonly unknown[];
}

/** A Database that remembers the statements it ran (to EXPLAIN exactly what the service sent). */
function capturing(db: Database): { db: Database; taken: Captured[] } {
  const taken: Captured[] = [];
  const recording =
    (q: Queryable) =>
    <R>(text: string, params: readonly unknown[] = []): Promise<QueryResult<R>> => {
      if (!/^\s*(set transaction|select set_config)/i.test(text)) taken.push({ text, params });
      return q.query<R>(text, params);
    };
  return {
    taken,
    db: {
      ...db,
      query: recording(db),
      transaction: <T>(fn: (tx: Transaction) => Promise<T>) =>
        db.transaction((tx) => fn({ ...tx, query: recording(tx) })),
    },
  };
}

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Relation Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Heap Fetches"?: number;
  Plans?: PlanNode[];
}

/** "Index Only Scan credit_transactions_usage_idx (750,000 rows, 0 heap fetches)" for each scan node. */
function scansOf(node: PlanNode, out: string[] = []): string[] {
  if (/Scan/.test(node["Node Type"]) && (node["Relation Name"] || node["Index Name"])) {
    const target = node["Index Name"] ?? node["Relation Name"];
    // Actual Rows is per loop (per worker of a parallel scan).
    const rows = Math.round((node["Actual Rows"] ?? 0) * (node["Actual Loops"] ?? 1));
    const fetches =
      node["Heap Fetches"] !== undefined ? `, ${node["Heap Fetches"].toLocaleString("en")} heap fetches` : "";
    out.push(`${node["Node Type"]} ${target} (${rows.toLocaleString("en")} rows${fetches})`);
  }
  for (const child of node.Plans ?? []) scansOf(child, out);
  return out;
}

/** EXPLAIN ANALYZE of a captured statement, with JIT off as the service runs it. */
async function explain(db: Database, c: Captured): Promise<string> {
  const plan = await db.transaction(async (tx) => {
    await tx.query("select set_config('jit', 'off', true)");
    const { rows } = await tx.query<{ "QUERY PLAN": Array<{ Plan: PlanNode; "Execution Time": number }> }>(
      `explain (analyze, format json) ${c.text}`,
      c.params,
    );
    return rows[0]!["QUERY PLAN"][0]!;
  });
  return `${[...new Set(scansOf(plan.Plan))].join("; ")} [EXPLAIN ANALYZE ${plan["Execution Time"].toFixed(0)} ms]`;
}

interface Case {
  label: string;
  run: (reports: ReturnType<typeof createReportsService>) => Promise<unknown>;
  /** Reads credit_transactions (so 0003's indexes matter): measured again without them. */
  usesLedger: boolean;
  /** Fewer calls for the slow lifetime case (default CALLS). */
  calls?: number;
}

async function measure(db: Database, cases: Case[], withPlans: boolean): Promise<Map<string, number>> {
  const medians = new Map<string, number>();
  for (const c of cases) {
    const cap = capturing(db);
    const reports = createReportsService(cap.db);
    await c.run(reports); // warm-up (plans, buffers)
    const samples: number[] = [];
    const deadline = performance.now() + PER_REPORT_BUDGET_MS;
    while (samples.length < (c.calls ?? CALLS) && performance.now() < deadline) {
      const started = performance.now();
      await c.run(reports);
      samples.push(performance.now() - started);
    }
    samples.sort((a, b) => a - b);
    const median = samples[Math.floor((samples.length - 1) / 2)]!;
    medians.set(c.label, median);
    console.log(
      `  ${c.label.padEnd(46)} median ${median.toFixed(0).padStart(5)} ms  ` +
        `(min ${samples[0]!.toFixed(0)}, max ${samples.at(-1)!.toFixed(0)}, n=${samples.length})`,
    );
    if (withPlans) {
      const firstCall = cap.taken.slice(0, cap.taken.length / (samples.length + 1));
      for (const statement of firstCall) console.log(`      plan ${await explain(db, statement)}`);
    }
  }
  return medians;
}

/** Seeds a throwaway PostgreSQL database and prints each report's median latency; skips without BENCH_DATABASE_URL. */
export async function benchReports(): Promise<void> {
  console.log("\nUsage and metrics reports over a large history (PostgreSQL)");
  const base = process.env.BENCH_DATABASE_URL;
  if (!base) {
    console.log("  skipped (set BENCH_DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/test)");
    return;
  }
  const name = `mailprobe_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  const url = new URL(base);
  url.pathname = `/${name}`;
  const db = openPostgres(url.toString(), 4);
  const started = performance.now();
  try {
    await admin.query(`create database ${name}`);
    await migrate(db);
    const end = new Date();
    console.log(`  seeding ${name}`);
    await seedReportHistory(db, end);
    const from = new Date(end.getTime() - 95 * 86_400_000).toISOString();
    const to = new Date(end.getTime() - 5 * 86_400_000).toISOString();
    const someKey = uuidOf("bench-key-0-1");
    const cases: Case[] = [
      {
        label: "credits/usage source=all",
        usesLedger: true,
        run: (r) => r.creditUsage(HEAVY_USER, { from, to }),
      },
      {
        label: "credits/usage source=api_key",
        usesLedger: true,
        run: (r) => r.creditUsage(HEAVY_USER, { from, to, source: "api_key" }),
      },
      {
        label: "credits/usage source=frontend",
        usesLedger: true,
        run: (r) => r.creditUsage(HEAVY_USER, { from, to, source: "frontend" }),
      },
      {
        label: "credits/usage/api-keys (all keys)",
        usesLedger: true,
        run: (r) => r.apiKeyUsage(HEAVY_USER, { from, to }),
      },
      {
        label: "credits/usage/api-keys api_key_id=…",
        usesLedger: true,
        run: (r) => r.apiKeyUsage(HEAVY_USER, { from, to, apiKeyId: someKey }),
      },
      {
        label: "metrics/verifications from/to (series)",
        usesLedger: false,
        run: (r) => r.verificationMetrics(HEAVY_USER, { from, to }),
      },
      {
        label: "metrics/verifications lifetime (no series)",
        usesLedger: false,
        calls: 5,
        run: (r) => r.verificationMetrics(HEAVY_USER, {}),
      },
      {
        label: "credits/usage, a light user (2,000 rows)",
        usesLedger: true,
        run: (r) => r.creditUsage(LIGHT_USER, { from, to }),
      },
    ];
    const sample = await createReportsService(db).creditUsage(HEAVY_USER, { from, to });
    console.log(
      `  90-day range ${from} → ${to}: heavy user used ${sample.totals.usedCredits.toLocaleString("en")}, ` +
        `granted ${sample.totals.grantedCredits.toLocaleString("en")} credits`,
    );
    console.log(
      `\n  with the 0003 indexes: median of ${CALLS} calls after one warm-up (load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} CPUs);` +
        " each statement's plan from EXPLAIN ANALYZE",
    );
    const withIdx = await measure(db, cases, true);
    for (const index of REPORTING_INDEXES) await db.query(`drop index if exists ${index}`);
    const ledgerCases = cases.filter((c) => c.usesLedger);
    console.log(`\n  the ledger reports without the 0003 indexes (load average ${loadavg()[0]!.toFixed(1)})`);
    const withoutIdx = await measure(db, ledgerCases, true);
    console.log("\n  what 0003 buys (median without → with)");
    for (const c of ledgerCases) {
      const before = withoutIdx.get(c.label)!;
      const after = withIdx.get(c.label)!;
      console.log(
        `  ${c.label.padEnd(46)} ${before.toFixed(0).padStart(5)} ms → ${after.toFixed(0).padStart(5)} ms (×${(before / after).toFixed(1)})`,
      );
    }
  } finally {
    await db.close();
    try {
      await admin.query(`drop database if exists ${name} with (force)`);
    } finally {
      await admin.end();
    }
    console.log(
      `\n  reports bench: ${((performance.now() - started) / 1000).toFixed(0)} s (database ${name} dropped)`,
    );
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchReports();
}
