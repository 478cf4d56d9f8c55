// Scale-out on PostgreSQL: N = 1, 2, 4 `mailprobe worker` processes (real child processes, as an
// operator runs them: docs/operations.md "Scaling out on PostgreSQL") against one database and the
// mail-world simulator with replies slow enough that the work waits on the network, not on a CPU;
// then 1, 2, 4 egress identities (SMTP_EGRESS, local source addresses) against one busy provider
// IP. One more child, `mailprobe serve --no-worker`, takes the task over HTTP; this process only
// runs the simulator, the counting proxy and the clock. `--service-dir DIR` runs the children from
// another checkout (a snapshot of a commit with dist/ built), so figures can be taken while this
// tree is being edited.
//
// Worlds (`--only NAME`; by default `workers`, then `egress`):
//   workers: the scheduling question: does the cluster run W × WORKER_CONCURRENCY sessions? 1,000
//            domains (`--domains N` takes the first N) of exactly 10 addresses, each domain on a
//            server IP of its own (the generator's shared Google/Yahoo/Mimecast hosts are given one
//            name per domain, so no per-host limit binds), 200 ms per reply, the batch mix
//            without temporary failures;
//   mixed:   170 domains of 20–30 addresses, 150 ms; its Google, Yahoo and Mimecast domains share
//            those providers' IPs, so the busiest IP's per-host limit is the bound;
//   big:     36 domains of 190–230 addresses (a full claim each), 150 ms;
//   egress:  48 tenant domains of 16 addresses on one front-end IP, 2 workers, 150 ms.
//
// The round-trip lower bound of a world under these limits (bench/support/session-bound.ts, the
// reasoning of bench/batch.ts's header), at t per SMTP reply:
//   session(domain) = 100 ms banner pause + t connect/banner + t EHLO + ceil((n + 2) / 9) × t
//     (n addresses + postmaster control + catch-all probe, 9 = SMTP_ERROR_BUDGET RCPTs a write;
//     a host's lower RCPT limit, or more rejections than one connection's budget, cost more);
//   bound(W) = max(Σ sessions / (W × 16), Σ sessions of the busiest server IP / (2 × identities),
//                  the longest session),
// without QUIT, DNS or database time, so it is optimistic. In the workers world (10 addresses,
// t = 200 ms) a session is at least 100 + 2 × 200 + 2 × 200 = 900 ms and the sum term decides.
//
// Printed per run, first the scheduling figures: wall time, addresses/s, the bound, wall / bound,
// the speed-up against the first row (W = 1), and the claims, counted on the wire: candidate reads
// (claimCandidate, `with running as (`), group claims (claimDomainJobs, `with turn as (`),
// result-write transactions (tasks/record-group.ts writeBatch's `… for share` of the tasks, one per
// transaction whatever its outcomes: the groups claimed), candidate reads − result writes (an
// empty-claim estimate; it also counts a claim's second read after losing a domain's turn), and claim transactions with the ones that took nothing (a claim
// transaction that never ran markTasksStarted's `update tasks set started_at`).
// Then the fuller table: SMTP sessions per server IP as the simulator saw them (the most at once on
// any IP, cluster-wide: it must never pass SMTP_MAX_CONNECTIONS_PER_HOST per identity; and the
// mean while an IP was in use); groups in flight (claimed, not yet recorded: the sessions the
// workers run, sampled from the jobs table, against their WORKER_CONCURRENCY sum) and the
// connections the simulator saw open (more: a connection waits SMTP_IDLE_REUSE_MS, idle, for a
// next domain of its IP); SMTP connections per address; database statements per address (counted
// on the wire by a proxy in front of PostgreSQL, pg-wire-counter.ts: Query + Execute messages, the
// unit counting-db.ts calls a round trip; pg_stat_statements is not loaded on a stock server, and
// a wrapped Database would only count this process), cross-checked by the transactions and rows
// PostgreSQL itself counted for the run's database (pg_stat_database, a fresh database per run so
// other users of the server don't show; these include the API process and the bench's 100 ms poll
// of the task); database connections the workers opened; the workers' CPU seconds (/proc); the
// load average before and after, and this process's event-loop delay (how long a ready callback
// waited for a CPU: on a shared machine, every process here waits as long).
//
// Needs BENCH_DATABASE_URL (a PostgreSQL server it may CREATE/DROP DATABASE on). Bounded: every run
// has a deadline (3 min, or 5 × its bound if longer), children are killed on exit or error.
// `npm run bench scale-out`, or `tsx bench/scale-out.ts [--workers 1,2,4] [--identities 1,2,4]
// [--only workers|mixed|big|egress[,…]] [--domains N] [--statements] [--service-dir DIR] [--latency MS]`.
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
  type DomainSpec,
  type MailWorld,
  type WorldSpec,
} from "../test/support/mail-world/index.ts";
import { withinBudget } from "./support/budget.ts";
import { startWireCounter, type WireCounts } from "./support/pg-wire-counter.ts";
import { roundTripBound, sessionWork, type Bound, type SessionWork } from "./support/session-bound.ts";

/** The defaults of a deployment: what one worker process brings. */
const CONCURRENCY = 16;
const PER_HOST = 2;
const POOL_SIZE = 10;
const RUN_DEADLINE_MS = 180_000;
/** A run may take this many times its round-trip bound before it counts as stuck. */
const DEADLINE_PER_BOUND = 5;
const BUDGET_MS = 25 * 60_000;

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
};
const counts = (name: string, fallback: number[]): number[] =>
  arg(name)
    ?.split(",")
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0 && n <= 8) ?? fallback;

/**
 * Per SMTP reply: a world's own default, or `--latency MS` (1–2,000) to move the point where CPU
 * takes over from waiting.
 */
const latencyMs = (fallback: number): number =>
  Math.min(2_000, Math.max(1, Number(arg("latency")) || fallback));
/** Domains of the workers world: `--domains N` (1–1,000) takes the first N of the 1,000. */
const SPREAD_DOMAINS = Math.min(1_000, Math.max(1, Number(arg("domains")) || 1_000));
const WORKER_COUNTS = counts("workers", [1, 2, 4]);
const IDENTITY_COUNTS = counts("identities", [1, 2, 4]);
const ONLY = arg("only");
const SHOW_STATEMENTS = process.argv.includes("--statements");
/** The list as this many tasks (contiguous chunks), created at once. */
const TASKS = counts("tasks", [1])[0]!;
/** Where the children's bin/mailprobe.js lives: this checkout, or a snapshot of the service. */
const SERVICE_DIR = arg("service-dir") ?? fileURLToPath(new URL("..", import.meta.url));

/** A world to run: its spec, the list, and the latency it was built with. */
interface BuiltWorld {
  spec: WorldSpec;
  addresses: string[];
  latencyMs: number;
}

/**
 * The batch bench's mix without temporary failures (their retries wait minutes, which no
 * wall-clock figure should hide) and without its 50-tenant front end (one IP with 2 slots would
 * set the pace: the egress runs measure that case on purpose).
 */
const THROUGHPUT_MIX = { ...NO_HOLDUPS_MIX, tenant_front_end: 0 };

/**
 * The scheduling world: every domain on a server IP of its own, so nothing but the claim and the
 * sessions bounds the cluster, and small domains (10 addresses, one session each), so a run is
 * a thousand claims and records. The generator puts every Google, Yahoo and Mimecast domain on
 * the same few hosts; each such domain gets copies named under its own (the provider's suffix
 * kept, so the engine still knows the provider), which the simulator serves on an address each.
 */
function spreadWorld(): BuiltWorld {
  const latency = latencyMs(200);
  const g = generateMixedWorld({
    seed: 2612,
    domains: SPREAD_DOMAINS,
    addressesPerDomain: 10,
    latencyMs: latency,
    mix: THROUGHPUT_MIX,
  });
  return {
    spec: { ...g.spec, domains: ownHosts(g.spec.domains) },
    addresses: g.addresses,
    latencyMs: latency,
  };
}

/** The domains with every MX host that several of them share renamed per domain. */
function ownHosts(domains: readonly DomainSpec[]): DomainSpec[] {
  const uses = new Map<string, number>();
  for (const h of domains.flatMap((d) => d.hosts ?? [])) uses.set(h.name, (uses.get(h.name) ?? 0) + 1);
  return domains.map((d) => {
    const prefix = d.name.replace(/\./g, "-");
    const hosts = d.hosts?.map((h) =>
      (uses.get(h.name) ?? 0) > 1 ? { ...h, name: `${prefix}.${h.name}` } : h,
    );
    return hosts ? { ...d, hosts } : d;
  });
}

/**
 * The world of docs/scale-out.md's figures (its "spread"), or with `big` domains of a webmail
 * provider's size, each a full claim (CLAIM_GROUP_MAX, 200) or more, so a group's record costs
 * the same per group but far less per address.
 */
function mixedWorld(big = false): BuiltWorld {
  const latency = latencyMs(150);
  const g = generateMixedWorld({
    seed: 2511,
    domains: big ? 36 : 170,
    addressesPerDomain: big ? [190, 230] : [20, 30],
    latencyMs: latency,
    mix: THROUGHPUT_MIX,
  });
  return { spec: g.spec, addresses: g.addresses, latencyMs: latency };
}

/**
 * One provider IP (a multi-tenant front end: every tenant's MX name resolves to it) serving all
 * of the list: SMTP_MAX_CONNECTIONS_PER_HOST sessions at a time per egress identity is the
 * ceiling, which is what egress identities lift.
 */
function providerWorld(): BuiltWorld {
  const tenants = 48;
  const valid = 12;
  const latency = latencyMs(150);
  const domains = tenantFrontEnd({ tenants, mailboxesPerTenant: valid, tenantAttribution: true });
  const addresses = domains.flatMap((d) => [
    ...(d.mailboxes ?? []).map((m) => `${m}@${d.name}`),
    ...Array.from({ length: 4 }, (_, i) => `ghost${i.toString()}@${d.name}`),
  ]);
  return { spec: { domains, latencyMs: latency }, addresses, latencyMs: latency };
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

interface RunOptions {
  label: string;
  workers: number;
  identities: number;
  bound: Bound;
}

interface RunFigures extends RunOptions {
  addresses: number;
  /** From the task's creation answered (its jobs claimable) to its finished_at. */
  wallS: number;
  /** The POST that created the task (its jobs inserted). */
  createS: number;
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
  /**
   * Mean groups claimed and not yet recorded, cluster-wide (jobs in `processing` by worker and
   * domain, as the claim counts them): the sessions the workers are running. The simulator's
   * open connections count more, since a connection stays open idle for SMTP_IDLE_REUSE_MS.
   */
  groupsInFlight: number;
  workerCpuS: number;
  /** This process: the simulator, the proxy, the poll. */
  benchCpuS: number;
  /** PostgreSQL backends of the run's database alive at its end (a lower bound). */
  pgCpuS: number;
  load: [number, number];
  /** This process's event-loop delay p50/p99 in ms: how long a ready callback waited for a CPU. */
  loopDelayMs: [number, number];
}

/**
 * Beginnings of the statements the claim figures come from (counting-db's keys: whitespace
 * collapsed). If the claim's SQL is reworded, these go to 0 and the run says so.
 */
const CLAIM_TEXT = {
  /** claimCandidate (src/db/queries/claims.ts): one read of the fair order. */
  candidateRead: "with running as (",
  /** claimDomainJobs: a domain's advisory-lock turn and its due jobs. */
  groupClaim: "with turn as (",
  /** markTasksStarted: once in every claim that took jobs (src/jobs/claim.ts startClaimed). */
  started: "update tasks set started_at",
  /**
   * shareLockTasks: once in every result-write transaction (src/tasks/record-group.ts
   * writeBatch), whatever its outcomes, where `insert into email_verifications` is skipped by a
   * group of retries only. A group of at most RECORD_BATCH_MAX (100) outcomes is one write.
   */
  resultWrite: "select * from tasks where id = any($1::uuid[]) order by id for share",
} as const;

/** A claim transaction (it read the fair order) that started a task's jobs, or one that took nothing. */
const claimLabel = (keys: readonly string[]): string | undefined => {
  if (!keys.some((k) => k.startsWith(CLAIM_TEXT.candidateRead))) return undefined;
  return keys.some((k) => k.startsWith(CLAIM_TEXT.started)) ? "claim" : "empty claim";
};

interface ClaimFigures {
  candidateReads: number;
  groupClaims: number;
  resultWrites: number;
  claimTransactions: number;
  emptyClaims: number;
}

function claimFigures(wire: WireCounts): ClaimFigures {
  const ran = (prefix: string): number =>
    [...wire.texts].reduce((n, [key, count]) => (key.startsWith(prefix) ? n + count : n), 0);
  const empty = wire.transactions.get("empty claim") ?? 0;
  return {
    candidateReads: ran(CLAIM_TEXT.candidateRead),
    groupClaims: ran(CLAIM_TEXT.groupClaim),
    resultWrites: ran(CLAIM_TEXT.resultWrite),
    claimTransactions: (wire.transactions.get("claim") ?? 0) + empty,
    emptyClaims: empty,
  };
}

interface ActivitySampler {
  /** Ends the sampling; the means over it. */
  stop(): Promise<{ lockWaiting: number; active: number; groupsInFlight: number }>;
}

/**
 * Every 200 ms: the run's backends (pg_stat_activity, on the admin connection) and its groups in
 * flight (on `db`, a connection of the run's database that bypasses the counting proxy).
 */
function sampleActivity(admin: Database, db: Database, dbName: string): ActivitySampler {
  const sum = { samples: 0, waiting: 0, active: 0, groups: 0 };
  let done = false;
  const loop = (async () => {
    while (!done) {
      const [backends, groups] = await Promise.all([
        admin.query<{ waiting: number; active: number }>(
          `select count(*) filter (where wait_event_type = 'Lock')::int as waiting,
                  count(*) filter (where state = 'active')::int as active
             from pg_stat_activity where datname = $1`,
          [dbName],
        ),
        db.query<{ groups: number }>(
          `select count(distinct (locked_by, domain))::int as groups from email_jobs where status = 'processing'`,
        ),
      ]);
      sum.samples++;
      sum.waiting += backends.rows[0]?.waiting ?? 0;
      sum.active += backends.rows[0]?.active ?? 0;
      sum.groups += groups.rows[0]?.groups ?? 0;
      await delay(200);
    }
  })().catch(() => {});
  return {
    async stop() {
      done = true;
      await loop;
      const n = Math.max(1, sum.samples);
      return { lockWaiting: sum.waiting / n, active: sum.active / n, groupsInFlight: sum.groups / n };
    },
  };
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

/** The list as TASKS tasks (contiguous chunks) over HTTP, at once; their ids. */
async function createTasks(port: number, apiKey: string, list: readonly string[]): Promise<string[]> {
  const chunk = Math.ceil(list.length / TASKS);
  return Promise.all(
    Array.from({ length: TASKS }, async (_, i) => {
      const res = await fetch(`http://127.0.0.1:${port.toString()}/api/v1/tasks`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ emails: list.slice(i * chunk, (i + 1) * chunk) }),
      });
      const body = await res.text();
      if (!res.ok) throw new Error(`task creation answered ${res.status.toString()}: ${body.slice(0, 500)}`);
      return (JSON.parse(body) as { id: string }).id;
    }),
  );
}

/** The latest finished_at of the tasks (epoch ms): the workers' clock, this machine's. */
async function lastFinishedAt(db: Database, taskIds: readonly string[]): Promise<number> {
  const { rows } = await db.query<{ at: Date }>(
    "select max(finished_at) as at from tasks where id = any($1::uuid[])",
    [taskIds],
  );
  return rows[0]!.at.getTime();
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
  opts: RunOptions,
): Promise<RunFigures> {
  const dbName = `bench_scale_${Date.now().toString(36)}`;
  const admin = openPostgres(base, 1);
  await admin.query(`create database ${dbName}`);
  current = { base, name: dbName };
  const dbUrl = new URL(base);
  dbUrl.pathname = `/${dbName}`;
  const db = openPostgres(dbUrl.toString(), 1);
  const wire = await startWireCounter(
    { host: dbUrl.hostname, port: Number(dbUrl.port || 5432) },
    { labelTransaction: claimLabel },
  );
  const sampler = { timer: undefined as NodeJS.Timeout | undefined };
  let activity: ActivitySampler | undefined;
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
    activity = sampleActivity(admin, db, dbName);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const t0 = performance.now();
    const taskIds = await createTasks(port, created.api_key, list);
    const claimable = Date.now();
    const createS = (performance.now() - t0) / 1000;
    const deadlineMs = Math.max(RUN_DEADLINE_MS, DEADLINE_PER_BOUND * opts.bound.ms);
    for (const id of taskIds) await waitForTaskFinished(db, id, deadlineMs);
    const wallS = ((await lastFinishedAt(db, taskIds)) - claimable) / 1000;
    clearInterval(sampler.timer);
    const means = await activity.stop();
    loop.disable();
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
      createS,
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
      ...means,
      workerCpuS,
      benchCpuS,
      pgCpuS,
      load: [loadBefore, loadAfter],
      loopDelayMs: [loop.percentile(50) / 1e6 - 10, loop.percentile(99) / 1e6 - 10],
    };
  } finally {
    clearInterval(sampler.timer);
    void activity?.stop();
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

/** Groups the workers run (of their WORKER_CONCURRENCY sum) / connections the simulator saw open. */
const inFlight = (f: RunFigures): string =>
  `${f.groupsInFlight.toFixed(1)} (${(f.workers * CONCURRENCY).toString()}) / ${f.meanInFlight.toFixed(1)}`;

const HEADER =
  "| workers | identities | tasks | addresses | wall s | addresses/s | max connections/server IP (per source IP; samples over the limit) | mean connections/busy IP | " +
  "groups in flight (of) / SMTP connections open | SMTP conn/address | DB statements/address | DB tx/address | rows written/address | " +
  "DB connections | DB backends active / waiting on a lock | CPU s per 1k addresses: workers / PostgreSQL / simulator | load 1 min before→after | bench event-loop delay p50/p99 ms |";

function row(f: RunFigures): string {
  const per = (n: number): string => (n / f.addresses).toFixed(2);
  const k = (cpuS: number): string => ((1000 * cpuS) / f.addresses).toFixed(2);
  return (
    `| ${f.workers.toString()} | ${f.identities.toString()} | ${f.tasks.toString()} | ${f.addresses.toString()} | ${f.wallS.toFixed(1)} | ` +
    `${(f.addresses / f.wallS).toFixed(0)} | ` +
    `${f.maxPerIp.toString()} (${f.maxPerClientIp.toString()}; ${f.samplesOverLimit.toString()}) | ${f.meanPerBusyIp.toFixed(2)} | ` +
    `${inFlight(f)} | ${(f.smtpConnections / f.addresses).toFixed(3)} | ` +
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

const SCHEDULING_HEADER =
  "| workers | identities | wall s (task creation s) | addresses/s | round-trip bound s (set by) | wall / bound | speed-up vs first row | " +
  "candidate reads/address | group claims/address | result writes/address | empty-claim estimate/address (reads − writes) | " +
  "claim transactions/address (of them empty) | max connections/server IP (per source IP; samples over the limit) | " +
  "groups in flight (of) / SMTP connections open | DB statements/address | CPU s per 1k addresses: workers / PostgreSQL / simulator |";

function schedulingRow(f: RunFigures, first: RunFigures): string {
  const per = (n: number): string => (n / f.addresses).toFixed(3);
  const k = (cpuS: number): string => ((1000 * cpuS) / f.addresses).toFixed(2);
  const c = claimFigures(f.wire);
  return (
    `| ${f.workers.toString()} | ${f.identities.toString()} | ${f.wallS.toFixed(1)} (${f.createS.toFixed(1)}) | ` +
    `${(f.addresses / f.wallS).toFixed(0)} | ${(f.bound.ms / 1000).toFixed(1)} (${f.bound.decidedBy}) | ` +
    `${((1000 * f.wallS) / f.bound.ms).toFixed(2)} | ${(first.wallS / f.wallS).toFixed(2)} | ` +
    `${per(c.candidateReads)} | ${per(c.groupClaims)} | ${per(c.resultWrites)} | ${per(c.candidateReads - c.resultWrites)} | ` +
    `${per(c.claimTransactions)} (${per(c.emptyClaims)}) | ` +
    `${f.maxPerIp.toString()} (${f.maxPerClientIp.toString()}; ${f.samplesOverLimit.toString()}) | ` +
    `${inFlight(f)} | ${per(f.wire.statements)} | ` +
    `${k(f.workerCpuS)} / ${k(f.pgCpuS)} / ${k(f.benchCpuS)} |`
  );
}

/** A claim figure read as 0 means its statement's text changed under the bench, not that it never ran. */
function warnUnseenClaimTexts(f: RunFigures): void {
  const c = claimFigures(f.wire);
  const unseen = Object.entries({
    [CLAIM_TEXT.candidateRead]: c.candidateReads,
    [CLAIM_TEXT.groupClaim]: c.groupClaims,
    [CLAIM_TEXT.resultWrite]: c.resultWrites,
    [CLAIM_TEXT.started]: c.claimTransactions - c.emptyClaims,
  }).filter(([, n]) => n === 0);
  for (const [text] of unseen)
    console.log(
      `    ${f.label}: no statement beginning "${text}" was seen: its claim figure is not measured`,
    );
}

function printTables(figures: readonly RunFigures[]): void {
  const first = figures[0];
  if (!first) return;
  console.log(`\n${SCHEDULING_HEADER}\n|${"---|".repeat(16)}`);
  for (const f of figures) console.log(schedulingRow(f, first));
  console.log(`\n${HEADER}\n|${"---|".repeat(18)}`);
  for (const f of figures) console.log(row(f));
  console.log("");
  for (const f of figures) warnUnseenClaimTexts(f);
  for (const f of figures) printStatements(f);
}

async function dimension(
  base: string,
  title: string,
  built: BuiltWorld,
  runs: Array<{ workers: number; identities: number }>,
): Promise<void> {
  console.log(`\n  ${title}, ${built.latencyMs.toString()} ms per SMTP reply`);
  const work = sessionWork(built.spec, built.addresses);
  const world = await startMailWorld(built.spec);
  const figures: RunFigures[] = [];
  try {
    for (const r of runs) {
      const label = `${r.workers.toString()} worker(s), ${r.identities.toString()} identit${r.identities === 1 ? "y" : "ies"}`;
      const bound = boundOf(work, r);
      figures.push(await runOnce(base, world, built.addresses, { label, ...r, bound }));
      console.log(
        `    done: ${label}, ${figures.at(-1)!.wallS.toFixed(1)} s (bound ${(bound.ms / 1000).toFixed(1)} s)`,
      );
    }
  } finally {
    await world.close();
  }
  printTables(figures);
}

/** The world's bound for a cluster of `workers` processes and `identities` egress identities. */
const boundOf = (work: SessionWork, r: { workers: number; identities: number }): Bound =>
  roundTripBound(work, { slotsPerIp: PER_HOST * r.identities, sessionSlots: r.workers * CONCURRENCY });

/** A series of worker-process runs (1 identity) over a world of many domains. */
async function workerSeries(base: string, name: string, built: BuiltWorld): Promise<void> {
  const { addresses, spec } = built;
  await dimension(
    base,
    `worker processes, ${name}: ${addresses.length.toString()} addresses over ${spec.domains.length.toString()} domains`,
    built,
    WORKER_COUNTS.map((workers) => ({ workers, identities: 1 })),
  );
}

async function egressSeries(base: string): Promise<void> {
  const landed = egressLanded();
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

const SERIES: Record<string, (base: string) => Promise<void>> = {
  workers: (base) => workerSeries(base, "one server IP per domain", spreadWorld()),
  mixed: (base) => workerSeries(base, "the mixed world (shared provider IPs)", mixedWorld()),
  big: (base) => workerSeries(base, "big domains, one server IP each", mixedWorld(true)),
  egress: egressSeries,
};

async function run(base: string): Promise<void> {
  const names = ONLY?.split(",") ?? ["workers", "egress"];
  const unknown = names.filter((n) => !(n in SERIES));
  if (unknown.length > 0)
    throw new Error(`--only ${unknown.join(",")}: expected one of ${Object.keys(SERIES).join(", ")}`);
  console.log(
    `\nscale-out: PostgreSQL, WORKER_CONCURRENCY ${CONCURRENCY.toString()} and SMTP_MAX_CONNECTIONS_PER_HOST ` +
      `${PER_HOST.toString()} per worker process, DATABASE_POOL_SIZE ${POOL_SIZE.toString()}`,
  );
  for (const name of names) await SERIES[name]!(base);
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
