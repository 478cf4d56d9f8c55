// The realtime verify path over HTTP: what a cached answer costs next to the cheapest
// route, and how many database round trips it takes. One server per engine (PGlite in memory, and
// PostgreSQL when BENCH_DATABASE_URL is set), built in this process with buildServices + buildApp,
// on loopback, with the mail-world simulator behind it (only the warm-up verification uses SMTP).
//
// 1. Throughput: autocannon (bench/support/cannon.ts) in a child process, so the load generator
//    does not share the server's event loop (it does share the 2 CPUs), 20 connections, 1 s
//    warm-up per target then 2 × 3 s measured in alternating blocks (healthz, verify, healthz,
//    verify: a change of background load hits both alike), against (a) GET /healthz and (b) POST
//    /api/v1/verify for a cached free repeat (same user, same address, verified and paid once
//    before). req/s counts 2xx only; p50/p99 are autocannon's (2xx only, whole milliseconds).
// 2. Round trips: the Database given to buildServices is wrapped (bench/support/counting-db.ts) so
//    every statement is counted, BEGIN and COMMIT/ROLLBACK included, and classified as write /
//    lock / read. Counted in sequential phases of N requests, separate from the throughput phase:
//    counters are reset just before a phase (once the database has been quiet for 300 ms, so the
//    tail of the load phase is not counted) and read once its last answer arrived plus a short
//    settle delay (so work the server finishes after answering is seen). Statements the services
//    issue by themselves (timers) are measured by an idle phase of the same wall time with no
//    requests; the per-request figure is (phase count − idle count scaled to the phase's
//    duration) / N. The idle count is printed: when it is 0 the per-request figures are exact.
//    Phases: (a) the cached free repeat, (b) a CHARGED cached answer, cold: N addresses whose
//    definitive result (unpaid, dated 25 h ago, inserted behind the server's back so this node has
//    never seen it) is still in the 7-day result cache (VERIFY_CACHE_TTL_SECONDS) but outside the
//    24 h free-repeat window, each asked once, so each answer is a cache hit that must be charged
//    (the balance must drop by exactly N); (c) the same, warm: the server's clock is moved 25 h on
//    and the same N addresses asked again, which this node now remembers (the realistic case: a
//    form re-submits an address the node answered yesterday); (d) GET /healthz.
// Goals (printed, not asserted): cached verify ≥ 0.15 × healthz req/s, 0 writes per free repeat,
// ≤ 1 round trip per charged cached answer.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { buildApp } from "../src/app/build-app.ts";
import { buildServices } from "../src/app/services.ts";
import { loadConfig } from "../src/config/index.ts";
import type { Database } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { openPglite } from "../src/db/pglite.ts";
import { openPostgres } from "../src/db/postgres.ts";
import { createLogger } from "../src/observability/logger.ts";
import { startMailWorld } from "../test/support/mail-world/index.ts";
import { withinBudget } from "./support/budget.ts";
import type { CannonJob, CannonResult } from "./support/cannon.ts";
import { countingDatabase, type Counter, type Counts } from "./support/counting-db.ts";

const CONNECTIONS = 20;
const WARMUP_SECONDS = 1;
/** Measured seconds per target: ROUNDS alternating blocks of BLOCK_SECONDS (healthz, verify, …). */
const BLOCK_SECONDS = 3;
const ROUNDS = 2;
/** Requests per sequential counting phase (and distinct addresses for the charged phase). */
const SEQUENTIAL = 200;
/** After a phase's last answer, before reading the counters. */
const SETTLE_MS = 100;
const CACHE_TTL_SECONDS = 7 * 24 * 3600;
const HOUR_MS = 3_600_000;
const DOMAIN = "bench.test";
const FREE_EMAIL = `alice@${DOMAIN}`;
const CHARGED_EMAIL = (i: number): string => `charged${i.toString()}@${DOMAIN}`;
const CANNON = fileURLToPath(new URL("./support/cannon.ts", import.meta.url));

interface PerRequest {
  roundTrips: number;
  writes: number;
  locks: number;
  /** Wall time the requests waited for the database, per request (ms). */
  dbMs: number;
  /** The phase's statements, by text, with their count per request and mean time (ms). */
  statements: Array<[text: string, perRequest: number, meanMs: number]>;
  /** Statements seen in the idle phase scaled to this phase's duration (subtracted above). */
  background: number;
  statuses: Record<string, number>;
  ms: number;
}

interface EngineFigures {
  label: string;
  healthz: CannonResult;
  verify: CannonResult;
  free: PerRequest;
  /** charged: credits taken; seededAnswers: answers that were the seeded 25 h old result. */
  charged: PerRequest & { charged: number; seededAnswers: number };
  /** The same addresses 25 h (server clock) later, answered from this node's memory. */
  warm: PerRequest & { charged: number; seededAnswers: number };
  health: PerRequest;
  idle: { statements: number; ms: number };
  /** 1-minute load average at the end of the engine's run. */
  loadAverage: number;
}

function runCannon(job: CannonJob): Promise<Record<string, CannonResult>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CANNON, JSON.stringify(job)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const planned = job.targets.length * (job.warmupSeconds + job.rounds * job.blockSeconds);
    const killer = setTimeout(() => child.kill("SIGKILL"), (planned + 20) * 1000);
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(killer);
      if (code !== 0) return reject(new Error(`load generator exited ${String(code)}`));
      const last = out.trim().split("\n").at(-1) ?? "";
      resolve(JSON.parse(last) as Record<string, CannonResult>);
    });
  });
}

/** Waits (at most 5 s) until the database has seen no statement for 300 ms. */
async function quiesce(counter: Counter): Promise<void> {
  const deadline = performance.now() + 5000;
  let last = counter.read().roundTrips;
  while (performance.now() < deadline) {
    await sleep(300);
    const now = counter.read().roundTrips;
    if (now === last) return;
    last = now;
  }
}

/** Counts what `run` sends to the database; statuses of the answers it returns. */
async function countPhase(
  counter: Counter,
  n: number,
  request: (i: number) => Promise<number>,
): Promise<{ counts: Counts; statuses: Record<string, number>; ms: number }> {
  const statuses: Record<string, number> = {};
  await quiesce(counter);
  counter.reset();
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const status = String(await request(i));
    statuses[status] = (statuses[status] ?? 0) + 1;
  }
  await sleep(SETTLE_MS);
  const counts = counter.read();
  return { counts, statuses, ms: performance.now() - started };
}

function perRequest(
  phase: { counts: Counts; statuses: Record<string, number>; ms: number },
  n: number,
  idle: { counts: Counts; ms: number },
): PerRequest {
  const scale = phase.ms / idle.ms;
  const bg = (k: "roundTrips" | "writes" | "locks"): number => idle.counts[k] * scale;
  return {
    roundTrips: (phase.counts.roundTrips - bg("roundTrips")) / n,
    writes: (phase.counts.writes - bg("writes")) / n,
    locks: (phase.counts.locks - bg("locks")) / n,
    dbMs: phase.counts.ms / n,
    // In the order they were first seen (a request's order, for sequential requests).
    statements: [...phase.counts.statements].map(([text, s]): [string, number, number] => [
      text,
      s.count / n,
      s.ms / s.count,
    ]),
    background: idle.counts.roundTrips * scale,
    statuses: phase.statuses,
    ms: phase.ms,
  };
}

async function measure(
  label: string,
  rawDb: Database,
  dnsServer: string,
  smtpPort: number,
): Promise<EngineFigures> {
  await migrate(rawDb);
  const { db, counter } = countingDatabase(rawDb);
  const config = loadConfig({
    LOG_LEVEL: "silent",
    RATE_LIMIT_PER_SECOND: "1000000",
    RATE_LIMIT_BURST: "1000000",
    DNS_SERVERS: dnsServer,
    SMTP_PORT: String(smtpPort),
    SMTP_HELO_NAME: "bench.mailprobe.test",
    SMTP_ALLOW_PRIVATE_HOSTS: "true",
    VERIFY_CACHE_TTL_SECONDS: String(CACHE_TTL_SECONDS),
  });
  // The services' clock, moved 25 h on before the warm charged phase (the free-repeat window).
  let clockOffsetMs = 0;
  const services = buildServices({
    config,
    db,
    clock: { now: () => new Date(Date.now() + clockOffsetMs) },
    logger: createLogger("silent"),
    encryptionKey: Buffer.alloc(32, 1),
    jwtSecret: null,
    processMetrics: false,
  });
  const app = await buildApp(services);
  await app.listen({ port: 0, host: "127.0.0.1" });
  try {
    const origin = `http://127.0.0.1:${(app.server.address() as { port: number }).port.toString()}`;
    const freeKey = (await services.users.create({ email: null, credits: 10 })).apiKey.plaintext;
    const chargedUserEmail = `charged-user-${randomBytes(4).toString("hex")}@${DOMAIN}`;
    const chargedKey = (
      await services.users.create({ email: chargedUserEmail, credits: 2 * SEQUENTIAL + 10 })
    ).apiKey.plaintext;
    const verify = async (key: string, email: string): Promise<number> => {
      const res = await fetch(`${origin}/api/v1/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ email }),
      });
      await res.arrayBuffer();
      return res.status;
    };
    const healthz = async (): Promise<number> => {
      const res = await fetch(`${origin}/healthz`);
      await res.arrayBuffer();
      return res.status;
    };
    // A charged answer must come from the seeded row (validated 25 h ago), not a fresh SMTP check.
    let seededAnswers = 0;
    const verifySeeded = async (email: string): Promise<number> => {
      const res = await fetch(`${origin}/api/v1/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${chargedKey}`, "content-type": "application/json" },
        body: JSON.stringify({ email }),
      });
      const body = (await res.json()) as { validated_at?: string };
      if (body.validated_at && Date.parse(body.validated_at) < Date.now() - 24 * 3600_000) seededAnswers++;
      return res.status;
    };
    const balance = async (key: string): Promise<number> => {
      const res = await fetch(`${origin}/api/v1/credits/balance`, {
        headers: { authorization: `Bearer ${key}` },
      });
      return ((await res.json()) as { balance: number }).balance;
    };

    // The free repeat: the first request verifies over SMTP and pays; every later one is free.
    const first = await verify(freeKey, FREE_EMAIL);
    const second = await verify(freeKey, FREE_EMAIL);
    if (first !== 200 || second !== 200) throw new Error(`warm-up verify answered ${first}, ${second}`);

    // The charged cached answers: unpaid definitive results, 25 h old, one per address.
    const { rows } = await rawDb.query<{ id: string }>("select id from users where email = $1", [
      chargedUserEmail,
    ]);
    const chargedUserId = rows[0]!.id;
    await rawDb.query(
      `insert into email_verifications (id, user_id, email, status, is_role_based, is_disposable,
         has_mx_records, has_reverse_dns, domain_name, host_name, server_type, is_catchall,
         unknown_reason, needs_physical_verify, validated_at, origin, source, api_key_id, task_id,
         credit_transaction_id, from_cache, created_at)
       select gen_random_uuid(), $1, 'charged' || i || '@' || $2, 'valid', false, false, true, true,
         $2, 'mx.' || $2, 'other', false, null, false, now() - interval '25 hours', 'realtime',
         'api_key', null, null, null, false, now() - interval '25 hours'
       from generate_series(0, $3::int - 1) as i`,
      [chargedUserId, DOMAIN, SEQUENTIAL],
    );

    // Throughput, in the same run on the same server, in alternating blocks.
    const load = await runCannon({
      targets: [
        { name: "healthz", url: `${origin}/healthz`, method: "GET" },
        {
          name: "verify",
          url: `${origin}/api/v1/verify`,
          method: "POST",
          headers: { authorization: `Bearer ${freeKey}`, "content-type": "application/json" },
          body: JSON.stringify({ email: FREE_EMAIL }),
        },
      ],
      connections: CONNECTIONS,
      warmupSeconds: WARMUP_SECONDS,
      blockSeconds: BLOCK_SECONDS,
      rounds: ROUNDS,
    });
    // Requests autocannon abandoned at the end of a block may still be running in the server:
    // let them finish before counting.
    await quiesce(counter);

    // Round trips, sequentially. The idle phase (no requests) spans the longest request phase.
    const freePhase = await countPhase(counter, SEQUENTIAL, () => verify(freeKey, FREE_EMAIL));
    const healthPhase = await countPhase(counter, SEQUENTIAL, () => healthz());
    const before = await balance(chargedKey);
    const chargedPhase = await countPhase(counter, SEQUENTIAL, (i) => verifySeeded(CHARGED_EMAIL(i)));
    const after = await balance(chargedKey);
    const coldSeeded = seededAnswers;
    seededAnswers = 0;
    clockOffsetMs = 25 * HOUR_MS;
    const beforeWarm = await balance(chargedKey);
    const warmPhase = await countPhase(counter, SEQUENTIAL, (i) => verifySeeded(CHARGED_EMAIL(i)));
    const afterWarm = await balance(chargedKey);
    counter.reset();
    const idleStarted = performance.now();
    await sleep(Math.max(freePhase.ms, healthPhase.ms, chargedPhase.ms, warmPhase.ms));
    const idle = { counts: counter.read(), ms: performance.now() - idleStarted };

    return {
      label,
      healthz: load.healthz!,
      verify: load.verify!,
      loadAverage: loadavg()[0]!,
      free: perRequest(freePhase, SEQUENTIAL, idle),
      charged: {
        ...perRequest(chargedPhase, SEQUENTIAL, idle),
        charged: before - after,
        seededAnswers: coldSeeded,
      },
      warm: { ...perRequest(warmPhase, SEQUENTIAL, idle), charged: beforeWarm - afterWarm, seededAnswers },
      health: perRequest(healthPhase, SEQUENTIAL, idle),
      idle: { statements: idle.counts.roundTrips, ms: idle.ms },
    };
  } finally {
    await app.close();
    await services.close();
    await db.close();
  }
}

const n0 = (v: number): string => Math.round(v).toLocaleString("en-US");
const ms = (v: number): string => (v < 10 ? v.toFixed(1) : v.toFixed(0));
const rt = (v: number): string => Number(v.toFixed(3)).toString();
const others = (statuses: Record<string, number>): string => {
  const rest = Object.entries(statuses).filter(([code]) => !code.startsWith("2"));
  return rest.length === 0 ? "none" : rest.map(([code, count]) => `${code}×${count.toString()}`).join(" ");
};

function printEngine(f: EngineFigures): void {
  const load = (name: string, r: CannonResult): void =>
    console.log(
      `  ${name.padEnd(14)} ${n0(r.okPerSecond).padStart(7)} req/s  p50 ${ms(r.p50Ms)} ms  p99 ${ms(r.p99Ms)} ms  ` +
        `(${n0(r.total)} answers in ${r.seconds.toFixed(1)} s; non-2xx ${r.non2xx.toString()} [${others(r.statuses)}], ` +
        `errors ${r.errors.toString()}, timeouts ${r.timeouts.toString()})`,
    );
  console.log(
    `\n  ${f.label}: ${CONNECTIONS.toString()} connections, ${WARMUP_SECONDS.toString()} s warm-up, then ` +
      `${ROUNDS.toString()} alternating blocks of ${BLOCK_SECONDS.toString()} s per target; ` +
      `load average ${f.loadAverage.toFixed(1)} on ${cpus().length.toString()} CPUs`,
  );
  load("healthz", f.healthz);
  load("cached verify", f.verify);
  console.log(`  ratio verify/healthz ${(f.verify.okPerSecond / f.healthz.okPerSecond).toFixed(3)}`);
  console.log(
    `  idle phase: ${f.idle.statements.toString()} statements in ${(f.idle.ms / 1000).toFixed(2)} s (subtracted, scaled, from each phase below)`,
  );
  const phase = (name: string, p: PerRequest, extra = ""): void => {
    console.log(
      `  per ${name}: ${rt(p.roundTrips)} round trips, ${rt(p.writes)} writes, ${rt(p.locks)} locks ` +
        `(${SEQUENTIAL.toString()} sequential requests in ${(p.ms / 1000).toFixed(2)} s, ` +
        `${(p.ms / SEQUENTIAL).toFixed(1)} ms each; non-2xx: ${others(p.statuses)}${extra})`,
    );
    if (p.statements.length > 0)
      console.log(`      DB wait ${p.dbMs.toFixed(2)} ms per request; per request × statement (mean ms):`);
    for (const [text, count, mean] of p.statements)
      console.log(`      ${rt(count).padStart(5)} × (${mean.toFixed(2).padStart(5)} ms) ${text}`);
  };
  phase("free repeat", f.free);
  for (const [name, p] of [
    ["charged cached, cold", f.charged],
    ["charged cached, warm", f.warm],
  ] as const)
    phase(
      name,
      p,
      `; charged ${p.charged.toString()}/${SEQUENTIAL.toString()}, ` +
        `answered from the seeded result ${p.seededAnswers.toString()}/${SEQUENTIAL.toString()}`,
    );
  phase("healthz", f.health);
}

function summary(f: EngineFigures): string {
  const ratio = f.verify.okPerSecond / f.healthz.okPerSecond;
  return (
    `${f.label.padEnd(8)} healthz ${n0(f.healthz.okPerSecond)} req/s p50 ${ms(f.healthz.p50Ms)} ms p99 ${ms(f.healthz.p99Ms)} ms` +
    ` | cached verify ${n0(f.verify.okPerSecond)} req/s p50 ${ms(f.verify.p50Ms)} ms p99 ${ms(f.verify.p99Ms)} ms` +
    ` | ratio ${ratio.toFixed(3)}` +
    ` | per free repeat: ${rt(f.free.roundTrips)} RT, ${rt(f.free.writes)} writes, ${rt(f.free.locks)} locks` +
    ` | per charged cached: warm ${rt(f.warm.roundTrips)} RT, ${rt(f.warm.writes)} writes` +
    ` (charged ${f.warm.charged.toString()}/${SEQUENTIAL.toString()}),` +
    ` cold ${rt(f.charged.roundTrips)} RT, ${rt(f.charged.writes)} writes` +
    ` (charged ${f.charged.charged.toString()}/${SEQUENTIAL.toString()})` +
    ` | per healthz: ${rt(f.health.roundTrips)} RT`
  );
}

function goals(f: EngineFigures): string {
  const ratio = f.verify.okPerSecond / f.healthz.okPerSecond;
  const check = (ok: boolean): string => (ok ? "met" : "NOT met");
  return (
    `${f.label.padEnd(8)} goals: ratio ≥ 0.15 ${check(ratio >= 0.15)} (${ratio.toFixed(3)}); ` +
    `0 writes per free repeat ${check(f.free.writes <= 0)} (${rt(f.free.writes)}); ` +
    `≤ 1 RT per charged cached (warm) ${check(f.warm.roundTrips <= 1)} (${rt(f.warm.roundTrips)}; ` +
    `cold ${rt(f.charged.roundTrips)}); ` +
    `charged exactly ${SEQUENTIAL.toString()} per phase, each from the cache ` +
    `${check([f.charged, f.warm].every((p) => p.charged === SEQUENTIAL && p.seededAnswers === SEQUENTIAL))} ` +
    `(cold ${f.charged.charged.toString()} charged / ${f.charged.seededAnswers.toString()} cached, ` +
    `warm ${f.warm.charged.toString()} / ${f.warm.seededAnswers.toString()})`
  );
}

async function onPostgres<T>(base: string, run: (db: Database) => Promise<T>): Promise<T> {
  const name = `mailprobe_bench_http_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
    const url = new URL(base);
    url.pathname = `/${name}`;
    // The pool size a server would run with (the default DATABASE_POOL_SIZE order of magnitude).
    return await run(openPostgres(url.toString(), 10));
  } finally {
    try {
      await admin.query(`drop database if exists ${name} with (force)`);
    } finally {
      await admin.end();
    }
  }
}

export async function benchVerifyHttp(): Promise<void> {
  console.log(
    "\nPOST /api/v1/verify cached answers vs GET /healthz, and DB round trips per request " +
      "(2-core machine: server and load generator share it)",
  );
  const world = await startMailWorld({
    latencyMs: 20,
    domains: [{ name: DOMAIN, hosts: [{ name: `mx.${DOMAIN}` }], mailboxes: ["alice"] }],
  });
  const dns = `${world.dns.host}:${world.dns.port.toString()}`;
  const figures: EngineFigures[] = [];
  try {
    await withinBudget(150_000, async () => {
      const embedded = await measure("pglite", await openPglite(null), dns, world.smtpPort);
      printEngine(embedded);
      figures.push(embedded);
      const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
      if (pgUrl) {
        const server = await onPostgres(pgUrl, (db) => measure("postgres", db, dns, world.smtpPort));
        printEngine(server);
        figures.push(server);
      } else console.log("\n  postgres: skipped (set BENCH_DATABASE_URL)");
    });
  } finally {
    await world.close();
  }
  console.log(`\n  summary (${new Date().toISOString()})`);
  for (const f of figures) console.log(`  ${summary(f)}`);
  for (const f of figures) console.log(`  ${goals(f)}`);
}
