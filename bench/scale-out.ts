// Scale-out on PostgreSQL: N = 1, 2, 4 `mailprobe worker` processes (real child processes, as an
// operator runs them: docs/operations.md "Scaling out on PostgreSQL") against one database and the
// mail-world simulator with replies slow enough (150 ms each) that the work waits on the network,
// not on a CPU; then 1, 2, 4 egress identities (SMTP_EGRESS, local source addresses) against one
// busy provider IP. One more child, `mailprobe serve --no-worker`, takes the task over HTTP; this
// process only runs the simulator, the counting proxy and the clock. `--service-dir DIR` runs the
// children from another checkout (a snapshot of a commit with dist/ built), so figures can be
// taken while this tree is being edited.
//
// Printed per run: addresses/s; SMTP sessions per server IP as the simulator saw them (the most
// at once on any IP, cluster-wide: it must never pass SMTP_MAX_CONNECTIONS_PER_HOST per identity;
// and the mean while an IP was in use); sessions in flight (mean over the run, against the
// workers' WORKER_CONCURRENCY sum); SMTP connections per address; database statements per address
// (counted on the wire by a proxy in front of PostgreSQL, pg-wire-counter.ts: Query + Execute
// messages, the unit counting-db.ts calls a round trip; pg_stat_statements is not loaded on a stock
// server, and a wrapped Database would only count this process), cross-checked by the transactions
// and rows PostgreSQL itself counted for the run's database (pg_stat_database, a fresh database per
// run so other users of the server don't show; these include the API process and the bench's
// 100 ms poll of the task); database connections the workers opened; the workers' CPU seconds
// (/proc); the load average before and after, and this process's event-loop delay (how long a
// ready callback waited for a CPU: on a shared machine, every process here waits as long).
//
// Needs BENCH_DATABASE_URL (a PostgreSQL server it may CREATE/DROP DATABASE on). Bounded: every run
// has a deadline, children are killed on exit or error. `npm run bench scale-out`, or
// `tsx bench/scale-out.ts [--workers 1,2,4] [--identities 1,2,4] [--only workers|egress|big]
// [--statements] [--service-dir DIR] [--latency MS]`.
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { loadavg } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { Database } from "../src/db/client.ts";
import { openPostgres } from "../src/db/postgres.ts";
import { waitForTaskFinished, worldEnv } from "../test/support/batch.ts";
import { exitOf, freePort, inheritedEnv, type MailprobeChild } from "../test/support/child-process.ts";
import {
  generateMixedWorld,
  NO_HOLDUPS_MIX,
  startMailWorld,
  tenantFrontEnd,
  type MailWorld,
  type WorldSpec,
} from "../test/support/mail-world/index.ts";
import { withinBudget } from "./support/budget.ts";
import { startWireCounter, type WireCounts } from "./support/pg-wire-counter.ts";

/** The defaults of a deployment: what one worker process brings. */
const CONCURRENCY = 16;
const PER_HOST = 2;
const POOL_SIZE = 10;
const RUN_DEADLINE_MS = 180_000;
const BUDGET_MS = 15 * 60_000;

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
};
const counts = (name: string, fallback: number[]): number[] =>
  arg(name)
    ?.split(",")
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0 && n <= 8) ?? fallback;

/** Per SMTP reply; `--latency MS` (1–2,000) to move the point where CPU takes over from waiting. */
const LATENCY_MS = Math.min(2_000, Math.max(1, Number(arg("latency")) || 150));
const WORKER_COUNTS = counts("workers", [1, 2, 4]);
const IDENTITY_COUNTS = counts("identities", [1, 2, 4]);
const ONLY = arg("only");
const SHOW_STATEMENTS = process.argv.includes("--statements");
/** The list as this many tasks (contiguous chunks), created at once. */
const TASKS = counts("tasks", [1])[0]!;
/** Where the children's bin/mailprobe.js lives: this checkout, or a snapshot of the service. */
const SERVICE_DIR = arg("service-dir") ?? fileURLToPath(new URL("..", import.meta.url));

/**
 * Many server IPs, one domain each: the per-host limit never binds, so what a worker process
 * sustains shows. The batch bench's mix without temporary failures (their retries wait minutes)
 * and without its 50-tenant front end (one IP with 2 slots would set the pace: the egress runs
 * measure that case on purpose).
 */
function spreadWorld(big = false): { spec: WorldSpec; addresses: string[] } {
  const g = generateMixedWorld({
    seed: 2511,
    // `big`: domains of a webmail provider's size, each a full claim (CLAIM_GROUP_MAX, 200) or
    // more, so a group's record costs the same per group but far less per address.
    domains: big ? 36 : 170,
    addressesPerDomain: big ? [190, 230] : [20, 30],
    latencyMs: LATENCY_MS,
    mix: { ...NO_HOLDUPS_MIX, tenant_front_end: 0 },
  });
  return { spec: g.spec, addresses: g.addresses };
}

/**
 * One provider IP (a multi-tenant front end: every tenant's MX name resolves to it) serving all
 * of the list: SMTP_MAX_CONNECTIONS_PER_HOST sessions at a time per egress identity is the
 * ceiling, which is what egress identities lift.
 */
function providerWorld(): { spec: WorldSpec; addresses: string[] } {
  const tenants = 48;
  const valid = 12;
  const domains = tenantFrontEnd({ tenants, mailboxesPerTenant: valid, tenantAttribution: true });
  const addresses = domains.flatMap((d) => [
    ...(d.mailboxes ?? []).map((m) => `${m}@${d.name}`),
    ...Array.from({ length: 4 }, (_, i) => `ghost${i.toString()}@${d.name}`),
  ]);
  return { spec: { domains, latencyMs: LATENCY_MS }, addresses };
}

/** Whether the service run reads SMTP_EGRESS (another change adds it). */
function egressLanded(): boolean {
  const dir = `${SERVICE_DIR}/src/config`;
  return readdirSync(dir).some(
    (f) =>
      f.endsWith(".ts") &&
      readFileSync(`${dir}/${f}`, "utf8").match(/env\.SMTP_EGRESS\b|["']SMTP_EGRESS["']/) !== null,
  );
}

/** Source addresses for `n` identities: 127.0.0.2 … (the simulator's hosts live on 127.0.1.x and up). */
const egressList = (n: number): string =>
  Array.from({ length: n }, (_, i) => `127.0.0.${(i + 2).toString()}`).join(",");

interface RunFigures {
  label: string;
  workers: number;
  identities: number;
  addresses: number;
  wallS: number;
  maxPerIp: number;
  /** Most connections at once from one of our source addresses to one server IP. */
  maxPerClientIp: number;
  /** 100 ms samples in which some server IP had more open connections than the limit allows. */
  samplesOverLimit: number;
  meanPerBusyIp: number;
  meanInFlight: number;
  smtpConnections: number;
  wire: WireCounts;
  xact: number;
  rowsWritten: number;
  tasks: number;
  /** Mean backends of the run's database waiting for a lock / running a statement (sampled). */
  lockWaiting: number;
  active: number;
  workerCpuS: number;
  /** This process: the simulator, the proxy, the poll. */
  benchCpuS: number;
  /** PostgreSQL backends of the run's database alive at its end (a lower bound). */
  pgCpuS: number;
  load: [number, number];
  /** This process's event-loop delay p50/p99 in ms: how long a ready callback waited for a CPU. */
  loopDelayMs: [number, number];
}

/** utime + stime of a process in seconds, or 0 once it is gone. */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid.toString()}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14 and 15 of proc(5), counted from after the command name (which ends at field 2).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

const children = new Set<MailprobeChild>();
/** The run's database while it exists, for an interrupted bench to drop. */
let current: { base: string; name: string } | null = null;
const killAll = (): void => {
  for (const c of children) if (!c.exited) c.proc.kill("SIGKILL");
};

/**
 * `bin/mailprobe.js ...args` of the service directory, resolved once `ready` is printed (as
 * test/support/child-process.ts's startMailprobe, with the directory as cwd): the children may run
 * a snapshot of the service (--service-dir) while the tree is being edited.
 */
async function startChild(
  name: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  ready: string,
): Promise<MailprobeChild> {
  const proc = spawn(process.execPath, ["bin/mailprobe.js", ...args], {
    cwd: SERVICE_DIR,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const child: MailprobeChild = { name, proc, output: "", exited: null };
  children.add(child);
  proc.stdout.on("data", (d: Buffer) => (child.output += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (child.output += d.toString()));
  proc.once("exit", (code, signal) => (child.exited = { code, signal }));
  const deadline = Date.now() + 90_000;
  while (!child.output.includes(ready)) {
    if (child.exited)
      throw new Error(`${name} exited at start ${JSON.stringify(child.exited)}: ${child.output}`);
    if (Date.now() > deadline) throw new Error(`${name} did not print "${ready}" in time: ${child.output}`);
    await delay(50);
  }
  return child;
}

/** A one-shot command of the service directory; resolves with its stdout. */
async function runChild(args: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
  const child = await startChild(`mailprobe ${args.join(" ")}`, args, env, "");
  const exited = await exitOf(child);
  children.delete(child);
  if (exited.code !== 0) throw new Error(`${child.name} exited ${JSON.stringify(exited)}: ${child.output}`);
  return child.output;
}

async function stopChild(c: MailprobeChild): Promise<void> {
  if (!c.exited) c.proc.kill("SIGTERM");
  const exited = await Promise.race([exitOf(c), delay(10_000).then(() => null)]);
  if (!exited) c.proc.kill("SIGKILL");
  children.delete(c);
}

interface DbStats {
  xact_commit: string;
  xact_rollback: string;
  rows: string;
}

async function dbStats(admin: Database, name: string): Promise<{ xact: number; rows: number }> {
  const { rows } = await admin.query<DbStats>(
    `select xact_commit, xact_rollback, tup_inserted + tup_updated + tup_deleted as rows
       from pg_stat_database where datname = $1`,
    [name],
  );
  const r = rows[0];
  return { xact: Number(r?.xact_commit ?? 0) + Number(r?.xact_rollback ?? 0), rows: Number(r?.rows ?? 0) };
}

/** CPU seconds of the backends serving `name` now, by pid. */
async function backendCpu(admin: Database, name: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>(
    "select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
    [name],
  );
  return new Map(rows.map((r) => [r.pid, cpuSeconds(r.pid)]));
}

async function runOnce(
  base: string,
  world: MailWorld,
  list: readonly string[],
  opts: { label: string; workers: number; identities: number },
): Promise<RunFigures> {
  const dbName = `bench_scale_${Date.now().toString(36)}`;
  const admin = openPostgres(base, 1);
  await admin.query(`create database ${dbName}`);
  current = { base, name: dbName };
  const dbUrl = new URL(base);
  dbUrl.pathname = `/${dbName}`;
  const db = openPostgres(dbUrl.toString(), 1);
  const wire = await startWireCounter({ host: dbUrl.hostname, port: Number(dbUrl.port || 5432) });
  const sampler = { timer: undefined as NodeJS.Timeout | undefined };
  const activity = { done: false, samples: 0, waiting: 0, active: 0 };
  try {
    const viaProxy = new URL(dbUrl);
    viaProxy.hostname = wire.host;
    viaProxy.port = wire.port.toString();
    const port = await freePort();
    const common: NodeJS.ProcessEnv = {
      ...inheritedEnv(),
      ...worldEnv(world, {
        WORKER_CONCURRENCY: CONCURRENCY.toString(),
        SMTP_MAX_CONNECTIONS_PER_HOST: PER_HOST.toString(),
        // The service's default; worldEnv's 50 ms is for tests.
        WORKER_POLL_INTERVAL_MS: "500",
        SMTP_CONNECT_TIMEOUT_MS: "5000",
        SMTP_GREETING_TIMEOUT_MS: "10000",
        SMTP_COMMAND_TIMEOUT_MS: "10000",
        SHUTDOWN_TIMEOUT_MS: "5000",
      }),
      DATABASE_URL: dbUrl.toString(),
      DATABASE_POOL_SIZE: POOL_SIZE.toString(),
      ENCRYPTION_KEY: "5c".repeat(32),
      JWT_SECRET: "scale-out-bench-secret-0123456789abcdef",
      LOG_LEVEL: "warn",
      HOST: "127.0.0.1",
      PORT: port.toString(),
      RATE_LIMIT_PER_SECOND: "100000",
      RATE_LIMIT_BURST: "100000",
    };
    // The API process migrates at start and talks to PostgreSQL directly: the proxy counts the
    // workers only.
    const api = await startChild("api", ["serve", "--no-worker"], common, "listening on");
    const workerEnv: NodeJS.ProcessEnv = { ...common, DATABASE_URL: viaProxy.toString() };
    if (opts.identities > 1) workerEnv.SMTP_EGRESS = egressList(opts.identities);
    const started = await Promise.all(
      Array.from({ length: opts.workers }, (_, i) =>
        startChild(`worker-${i.toString()}`, ["worker"], workerEnv, "mailprobe worker "),
      ),
    );
    const created = JSON.parse(
      await runChild(["users", "create", "--credits", list.length.toString(), "--json"], common),
    ) as { api_key: string };
    world.resetCounters();
    // Let the workers' start-up statements (migration check, first polls) reach the statistics.
    await delay(1_500);
    const statsBefore = await dbStats(admin, dbName);
    const cpuBefore = started.map((c) => cpuSeconds(c.proc.pid));
    const pgBefore = await backendCpu(admin, dbName);
    const benchBefore = process.cpuUsage();
    const loadBefore = loadavg()[0]!;
    wire.reset();
    let busySamples = 0;
    let busySum = 0;
    let samples = 0;
    let inFlightSum = 0;
    let samplesOverLimit = 0;
    const limit = PER_HOST * opts.identities;
    sampler.timer = setInterval(() => {
      samples++;
      let over = false;
      for (const c of world.allCounters().values()) {
        inFlightSum += c.concurrent;
        over ||= c.concurrent > limit;
        if (c.concurrent > 0) {
          busySamples++;
          busySum += c.concurrent;
        }
      }
      if (over) samplesOverLimit++;
    }, 100);
    const activityLoop = (async () => {
      while (!activity.done) {
        const { rows } = await admin.query<{ waiting: number; active: number }>(
          `select count(*) filter (where wait_event_type = 'Lock')::int as waiting,
                  count(*) filter (where state = 'active')::int as active
             from pg_stat_activity where datname = $1`,
          [dbName],
        );
        activity.samples++;
        activity.waiting += rows[0]?.waiting ?? 0;
        activity.active += rows[0]?.active ?? 0;
        await delay(200);
      }
    })().catch(() => {});
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const t0 = performance.now();
    const chunk = Math.ceil(list.length / TASKS);
    const taskIds = await Promise.all(
      Array.from({ length: TASKS }, async (_, i) => {
        const res = await fetch(`http://127.0.0.1:${port.toString()}/api/v1/tasks`, {
          method: "POST",
          headers: { authorization: `Bearer ${created.api_key}`, "content-type": "application/json" },
          body: JSON.stringify({ emails: list.slice(i * chunk, (i + 1) * chunk) }),
        });
        const body = await res.text();
        if (!res.ok)
          throw new Error(`task creation answered ${res.status.toString()}: ${body.slice(0, 500)}`);
        return (JSON.parse(body) as { id: string }).id;
      }),
    );
    for (const id of taskIds) await waitForTaskFinished(db, id, RUN_DEADLINE_MS);
    const wallS = (performance.now() - t0) / 1000;
    clearInterval(sampler.timer);
    activity.done = true;
    loop.disable();
    await activityLoop;
    const wireCounts = wire.read();
    const workerCpuS = started.reduce((s, c, i) => s + cpuSeconds(c.proc.pid) - cpuBefore[i]!, 0);
    const bench = process.cpuUsage(benchBefore);
    const benchCpuS = (bench.user + bench.system) / 1e6;
    let pgCpuS = 0;
    for (const [pid, cpu] of await backendCpu(admin, dbName)) pgCpuS += cpu - (pgBefore.get(pid) ?? 0);
    const loadAfter = loadavg()[0]!;
    await Promise.all([...started, api].map(stopChild));
    const statsAfter = await dbStats(admin, dbName);
    let smtpConnections = 0;
    let maxPerIp = 0;
    let maxPerClientIp = 0;
    for (const c of world.allCounters().values()) {
      smtpConnections += c.connections;
      maxPerIp = Math.max(maxPerIp, c.maxConcurrent);
      for (const client of Object.values(c.byClient))
        maxPerClientIp = Math.max(maxPerClientIp, client.maxConcurrent);
    }
    return {
      ...opts,
      addresses: list.length,
      wallS,
      maxPerIp,
      maxPerClientIp,
      samplesOverLimit,
      meanPerBusyIp: busySum / Math.max(1, busySamples),
      meanInFlight: inFlightSum / Math.max(1, samples),
      smtpConnections,
      wire: wireCounts,
      xact: statsAfter.xact - statsBefore.xact,
      rowsWritten: statsAfter.rows - statsBefore.rows,
      tasks: TASKS,
      lockWaiting: activity.waiting / Math.max(1, activity.samples),
      active: activity.active / Math.max(1, activity.samples),
      workerCpuS,
      benchCpuS,
      pgCpuS,
      load: [loadBefore, loadAfter],
      loopDelayMs: [loop.percentile(50) / 1e6 - 10, loop.percentile(99) / 1e6 - 10],
    };
  } finally {
    clearInterval(sampler.timer);
    activity.done = true;
    killAll();
    children.clear();
    await db.close();
    await wire.close();
    await admin.query(`drop database if exists ${dbName} with (force)`).catch((e: unknown) => {
      console.log(`  (could not drop ${dbName}: ${e instanceof Error ? e.message : String(e)})`);
    });
    current = null;
    await admin.close();
  }
}

const HEADER =
  "| workers | identities | tasks | addresses | wall s | addresses/s | max connections/server IP (per source IP; samples over the limit) | mean connections/busy IP | " +
  "sessions in flight (of) | SMTP conn/address | DB statements/address | DB tx/address | rows written/address | " +
  "DB connections | DB backends active / waiting on a lock | CPU s per 1k addresses: workers / PostgreSQL / simulator | load 1 min before→after | bench event-loop delay p50/p99 ms |";

function row(f: RunFigures): string {
  const per = (n: number): string => (n / f.addresses).toFixed(2);
  const capacity = f.workers * CONCURRENCY;
  const k = (cpuS: number): string => ((1000 * cpuS) / f.addresses).toFixed(2);
  return (
    `| ${f.workers.toString()} | ${f.identities.toString()} | ${f.tasks.toString()} | ${f.addresses.toString()} | ${f.wallS.toFixed(1)} | ` +
    `${(f.addresses / f.wallS).toFixed(0)} | ` +
    `${f.maxPerIp.toString()} (${f.maxPerClientIp.toString()}; ${f.samplesOverLimit.toString()}) | ${f.meanPerBusyIp.toFixed(2)} | ` +
    `${f.meanInFlight.toFixed(1)} (${capacity.toString()}) | ${(f.smtpConnections / f.addresses).toFixed(3)} | ` +
    `${per(f.wire.statements)} | ${per(f.xact)} | ${per(f.rowsWritten)} | ${f.wire.connections.toString()} | ` +
    `${f.active.toFixed(1)} / ${f.lockWaiting.toFixed(1)} | ` +
    `${k(f.workerCpuS)} / ${k(f.pgCpuS)} / ${k(f.benchCpuS)} | ` +
    `${f.load[0].toFixed(2)}→${f.load[1].toFixed(2)} | ` +
    `${f.loopDelayMs[0].toFixed(1)} / ${f.loopDelayMs[1].toFixed(1)} |`
  );
}

function printStatements(f: RunFigures): void {
  const k = f.wire.byKind;
  console.log(
    `    ${f.label}: ${f.wire.statements.toString()} statements, ${(f.wire.statements / f.wallS).toFixed(0)}/s (write ${k.write.toString()}, lock ${k.lock.toString()}, ` +
      `read ${k.read.toString()}, BEGIN/COMMIT ${k.tx.toString()}), ` +
      `${(f.wire.bytesToServer / 1e6).toFixed(1)} MB to the server, ${(f.wire.bytesToClient / 1e6).toFixed(1)} MB back`,
  );
  if (!SHOW_STATEMENTS) return;
  const top = [...f.wire.texts].sort((a, b) => b[1] - a[1]).slice(0, 12);
  for (const [text, n] of top)
    console.log(
      `      ${(n / f.addresses).toFixed(3).padStart(6)}/address  ${n.toString().padStart(6)}  ${text}`,
    );
}

async function dimension(
  base: string,
  title: string,
  built: { spec: WorldSpec; addresses: string[] },
  runs: Array<{ workers: number; identities: number }>,
): Promise<void> {
  console.log(`\n  ${title}`);
  const world = await startMailWorld(built.spec);
  const figures: RunFigures[] = [];
  try {
    for (const r of runs) {
      const label = `${r.workers.toString()} worker(s), ${r.identities.toString()} identit${r.identities === 1 ? "y" : "ies"}`;
      figures.push(await runOnce(base, world, built.addresses, { label, ...r }));
      console.log(`    done: ${label}, ${figures.at(-1)!.wallS.toFixed(1)} s`);
    }
  } finally {
    await world.close();
  }
  console.log(`\n${HEADER}\n|${"---|".repeat(18)}`);
  for (const f of figures) console.log(row(f));
  console.log("");
  for (const f of figures) printStatements(f);
}

async function run(base: string): Promise<void> {
  const landed = egressLanded();
  console.log(
    `\nscale-out: PostgreSQL, ${LATENCY_MS.toString()} ms per SMTP reply, WORKER_CONCURRENCY ${CONCURRENCY.toString()} ` +
      `and SMTP_MAX_CONNECTIONS_PER_HOST ${PER_HOST.toString()} per worker process, DATABASE_POOL_SIZE ${POOL_SIZE.toString()}`,
  );
  if (ONLY === "big") {
    const big = spreadWorld(true);
    await dimension(
      base,
      `worker processes, big domains: ${big.addresses.length.toString()} addresses over ${big.spec.domains.length.toString()} domains, one server IP each`,
      big,
      WORKER_COUNTS.map((workers) => ({ workers, identities: 1 })),
    );
    return;
  }
  if (ONLY !== "egress") {
    const spread = spreadWorld();
    await dimension(
      base,
      `worker processes: ${spread.addresses.length.toString()} addresses over ${spread.spec.domains.length.toString()} domains, one server IP each`,
      spread,
      WORKER_COUNTS.map((workers) => ({ workers, identities: 1 })),
    );
  }
  if (ONLY !== "workers") {
    const provider = providerWorld();
    const identities = landed ? IDENTITY_COUNTS : IDENTITY_COUNTS.filter((n) => n === 1);
    // Two workers at most: one IP's few slots keep any more idle.
    const workers = Math.max(1, ...WORKER_COUNTS.filter((n) => n <= 2));
    await dimension(
      base,
      `egress identities: ${provider.addresses.length.toString()} addresses of ${provider.spec.domains.length.toString()} tenant domains on one provider IP, ${workers.toString()} worker(s)`,
      provider,
      identities.map((n) => ({ workers, identities: n })),
    );
    if (!landed)
      console.log(
        `  egress identities ${IDENTITY_COUNTS.filter((n) => n > 1).join(", ")}: unmeasured (SMTP_EGRESS is not read by src/config yet)`,
      );
  }
}

export async function benchScaleOut(): Promise<void> {
  const base = process.env.BENCH_DATABASE_URL;
  if (!base) {
    console.log("\nscale-out: skipped (set BENCH_DATABASE_URL)");
    return;
  }
  // Interrupted: the children go at once; the run's database is dropped on a connection of its
  // own (the run's may be busy), for at most 5 s.
  const onSignal = (): void => {
    killAll();
    const left = current;
    setTimeout(() => process.exit(130), 5_000).unref();
    if (!left) process.exit(130);
    const admin = openPostgres(left.base, 1);
    void admin
      .query(`drop database if exists ${left.name} with (force)`)
      .catch(() => {})
      .finally(() => process.exit(130));
  };
  process.once("exit", killAll);
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    await withinBudget(BUDGET_MS, () => run(base));
  } finally {
    killAll();
    process.off("exit", killAll);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchScaleOut();
}
