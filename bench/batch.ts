// Batch throughput: a 10,000-address task over 300 simulated domains, 20 ms per SMTP reply, run by
// one in-process worker pool (WORKER_CONCURRENCY 16, SMTP_MAX_CONNECTIONS_PER_HOST 2), on PGlite
// and (with BENCH_DATABASE_URL) PostgreSQL.
//
// The round-trip lower bound of the same world under the same politeness limits:
//   a domain's work needs              c = ceil(rejections / 9) connections (no connection may
//                                     collect more than SMTP_ERROR_BUDGET = 9 rejections; the
//                                     probe and the dead addresses are the rejections), each
//                                     costing the banner pause (the simulator's fixed 100 ms)
//                                     + 1 RT connect/banner + 1 RT EHLO, 50 ms settle between two,
//                                     + ceil((n + 2) / min(k, 9)) RT of pipelined RCPT writes (n
//                                     addresses + postmaster control + catch-all probe; a write
//                                     holds no more RCPTs than may still be rejected, k = 50 or
//                                     the host's own RCPT limit);
//   with idle connections reused, a domain's first connection may be one another domain of the
//                                     same server IP left open: it then pays no banner/EHLO, so
//                                     each server IP is charged that setup only for its first
//                                     two connections (one per slot);
//   one server IP can't finish faster than (sum of its sessions) / 2 (two connections at a time;
//                                     tenant domains of one front end share one IP);
//   the pool can't finish faster than  (sum of all sessions) / 16 (sixteen sessions at a time);
//   bound = max(slowest host, whole pool, longest single session). QUIT, DNS and database time
//   are left out, so the bound is optimistic: a ratio near 1 means little is left to gain.
// Temporary failures (greylisting, refused hosts, SERVFAIL, drops, a busy mailbox, a recipient
// that closes the connection) are left out of this world: their retries wait on
// VERIFY_RETRY_DELAYS (minutes), which no wall-clock figure should hide.
// `--old-world` also leaves out two overlays (per-user sender blocks, the 50-name multi-tenant
// front end): the world without them, to compare with figures measured on it.
//
// The retry world (`--retries`, also run by default after the plain one): the same 10,000
// addresses, but 15 domains spread over the list greylist every recipient for longer than the
// whole retry schedule, and VERIFY_RETRY_DELAYS is compressed 100× to 3, 6, 12 s (the
// unreachable schedule to 0.3, 1.2 s). Each such address needs its first session, the three
// waits and three more sessions, so the world's bound is
//   max(the bound above with those retry sessions added, max over greylisted domains of
//       first session + 3 + 6 + 12 s + three sessions),
// the second term (~21 s) deciding it: a verifier that reaches such a domain at second t of
// the pass finishes no earlier than t + 21 s. `--runs=N` repeats each engine's run N times and
// prints min/median/max; `--pglite-only` / `--postgres-only` pick one engine; `--plain-only` runs
// the plain world alone; `--chains` prints when each deferring domain's chain began (its first
// deferral written, polled every 250 ms).
import { createWorkerRole } from "../src/app/worker-role.ts";
import type { Database } from "../src/db/client.ts";
import { openPglite } from "../src/db/pglite.ts";
import { waitForTaskFinished, worldEnv } from "../test/support/batch.ts";
import {
  createExpectation,
  generateMixedWorld,
  NO_HOLDUPS_MIX,
  startMailWorld,
  type DomainSpec,
  type MailWorld,
} from "../test/support/mail-world/index.ts";
import { createTestContext } from "../test/support/test-app.ts";
import { migrate } from "../src/db/migrate.ts";
import { benchEngines } from "./support/bench-engines.ts";
import { countingDatabase } from "./support/counting-db.ts";

const LATENCY_MS = 20;
const BANNER_PAUSE_MS = 100;
const CONCURRENCY = 16;
const PER_HOST = 2;
const MAX_RCPT = 50;

const OLD_WORLD = process.argv.includes("--old-world");

const generated = generateMixedWorld({
  seed: 2026,
  domains: 300,
  addressesPerDomain: [30, 37],
  latencyMs: LATENCY_MS,
  mix: { ...NO_HOLDUPS_MIX, ...(OLD_WORLD ? { sender_block: 0, tenant_front_end: 0 } : {}) },
});
const addresses = generated.addresses.slice(0, 10_000);

const ERROR_BUDGET = 9;
const SETTLE_MS = 50;
const expect = createExpectation(generated.spec);

/** VERIFY_RETRY_DELAYS of the retry world: the 300/600/1200 s schedule compressed 100×. */
const RETRY_DELAYS_S = [3, 6, 12];
/** How many domains of the retry world keep answering 4xx (spread over the list). */
const DEFERRING_DOMAINS = 15;

/** The retry world: the same spec, with DEFERRING_DOMAINS of its SMTP domains greylisting for good. */
function retryWorldSpec(): { spec: typeof generated.spec; deferring: Set<string> } {
  const smtp = generated.spec.domains.filter(
    (d) =>
      (d.dns ?? "mx") === "mx" &&
      (d.hosts ?? []).some((h) => h.hasAddress !== false && !h.refuseConnections && !h.connectReply) &&
      addresses.some((a) => a.endsWith(`@${d.name}`)),
  );
  const step = Math.floor(smtp.length / DEFERRING_DOMAINS);
  const deferring = new Set(
    smtp
      .filter((_, i) => i % step === step >> 1)
      .slice(0, DEFERRING_DOMAINS)
      .map((d) => d.name),
  );
  // An hour: longer than the whole schedule, so every address runs the whole chain and its
  // unknown (greylisted) answer stands.
  const domains = generated.spec.domains.map((d) =>
    deferring.has(d.name) ? { ...d, greylistSeconds: 3600, greylistStyle: "generic" as const } : d,
  );
  return { spec: { ...generated.spec, domains }, deferring };
}

/**
 * `polite`: under the error budget (today's engine); otherwise the pipelined bound (k RCPTs a
 * write, one connection). `host` is the server the session talks to (a front end's label for
 * its tenants: one IP); `setupMs` the part of `ms` a reused idle connection saves.
 */
function sessionMs(
  domain: DomainSpec,
  list: string[],
  polite: boolean,
): { host: string; ms: number; setupMs: number } | null {
  const mode = domain.dns ?? "mx";
  if (mode !== "mx" && mode !== "a_only") return null;
  const host = (domain.hosts ?? []).find((h) => h.hasAddress !== false && !h.refuseConnections);
  if (!host) return null;
  const server = host.frontEnd ?? host.name;
  if (host.connectReply) return { host: server, ms: BANNER_PAUSE_MS + LATENCY_MS, setupMs: 0 };
  const n = list.length;
  const k = Math.min(MAX_RCPT, host.maxRcptPerMessage ?? MAX_RCPT);
  if (!polite)
    return {
      host: server,
      ms: BANNER_PAUSE_MS + LATENCY_MS * (2 + Math.ceil((n + 1) / k)),
      setupMs: BANNER_PAUSE_MS + 2 * LATENCY_MS,
    };
  // A greylisted address is no rejection of the error budget's kind for this count: leaving it
  // out keeps the bound optimistic.
  const rejections = 1 + list.filter((a) => expect(a).status === "invalid").length;
  const connections = Math.max(1, Math.ceil(rejections / ERROR_BUDGET));
  const perConnection = BANNER_PAUSE_MS + 2 * LATENCY_MS;
  const writes = Math.ceil((n + 2) / Math.min(k, ERROR_BUDGET));
  return {
    host: server,
    ms: connections * perConnection + (connections - 1) * SETTLE_MS + writes * LATENCY_MS,
    setupMs: perConnection,
  };
}

interface Bound {
  boundMs: number;
  sessions: number;
  /** What sets the bound: the busiest host, or the longest retry chain. */
  decidedBy: string;
}

/**
 * `deferring`: domains whose every session is answered 4xx, so they take 1 + RETRY_DELAYS_S.length
 * sessions, the retries no sooner than the delays allow.
 */
function lowerBoundMs(polite: boolean, deferring: ReadonlySet<string> = new Set()): Bound {
  const perDomain = new Map<string, string[]>();
  for (const a of addresses) {
    const d = a.slice(a.indexOf("@") + 1);
    perDomain.set(d, [...(perDomain.get(d) ?? []), a]);
  }
  const hostTotals = new Map<string, number>();
  const hostSessions = new Map<string, number>();
  let all = 0;
  let longest = 0;
  let sessions = 0;
  let chainMs = 0;
  let chainDomain = "";
  const delaysMs = RETRY_DELAYS_S.reduce((sum, s) => sum + s * 1000, 0);
  for (const domain of generated.spec.domains) {
    const list = perDomain.get(domain.name) ?? [];
    const s = list.length > 0 ? sessionMs(domain, list, polite) : null;
    if (!s) continue;
    const rounds = deferring.has(domain.name) ? 1 + RETRY_DELAYS_S.length : 1;
    for (let round = 0; round < rounds; round++) {
      sessions++;
      // Every session may begin on a connection left idle; each server pays the setup only for
      // the connections it must open (one per slot), added below.
      const ms = s.ms - s.setupMs;
      const opened = hostSessions.get(s.host) ?? 0;
      hostSessions.set(s.host, opened + 1);
      const setup = opened < PER_HOST ? s.setupMs : 0;
      hostTotals.set(s.host, (hostTotals.get(s.host) ?? 0) + ms + setup);
      all += ms + setup;
      longest = Math.max(longest, ms);
    }
    if (rounds > 1) {
      // The first session opens a connection; each retry is seconds later, past the idle reuse.
      const chain = rounds * s.ms + delaysMs;
      if (chain > chainMs) {
        chainMs = chain;
        chainDomain = domain.name;
      }
    }
  }
  let busiestHost = "";
  let busiest = 0;
  for (const [h, ms] of hostTotals) {
    if (ms / PER_HOST > busiest) {
      busiest = ms / PER_HOST;
      busiestHost = h;
    }
  }
  const boundMs = Math.max(busiest, all / CONCURRENCY, longest, chainMs);
  const decidedBy = boundMs === chainMs ? `retry chain of ${chainDomain}` : `busiest host ${busiestHost}`;
  return { boundMs, sessions, decidedBy };
}

interface RunFigures {
  wallMs: number;
  createdMs: number;
  ratio: number;
  connectionsPerAddress: number;
  maxPerServerIp: number;
  statementsPerAddress: number;
  peakRssMb: number;
  /** Seconds after the POST by which half the addresses were final. */
  halfDoneS: number | null;
  /** Seconds after the POST by which every address that needed no retry was final. */
  passDoneS: number | null;
  /** Seconds after the POST by which every retried address was final (null: none was retried). */
  chainsDoneS: number | null;
}

async function run(
  label: string,
  rawDb: Database,
  world: MailWorld,
  opts: { env?: Record<string, string>; bound: Bound; quiet?: boolean },
): Promise<RunFigures> {
  await migrate(rawDb);
  const { db, counter } = countingDatabase(rawDb);
  const ctx = await createTestContext({
    db,
    env: worldEnv(world, {
      WORKER_CONCURRENCY: String(CONCURRENCY),
      SMTP_MAX_CONNECTIONS_PER_HOST: String(PER_HOST),
      SMTP_CONNECT_TIMEOUT_MS: "5000",
      SMTP_GREETING_TIMEOUT_MS: "10000",
      SMTP_COMMAND_TIMEOUT_MS: "10000",
      ...opts.env,
    }),
  });
  world.resetCounters();
  const user = await ctx.createUser(10_000);
  const rssBefore = process.memoryUsage().rss;
  let peakRss = rssBefore;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  counter.reset();
  const started = performance.now();
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(user.apiKey),
    payload: { emails: addresses },
  });
  const createdMs = performance.now() - started;
  const taskId = res.json<{ id: string }>().id;
  const role = createWorkerRole(ctx.services);
  role.start();
  // When each domain's first deferral was written (--chains): when its retry chain began.
  const firstDeferral = new Map<string, number>();
  const chainPoll = process.argv.includes("--chains")
    ? setInterval(() => {
        void rawDb
          .query<{ domain: string }>(
            "select distinct domain from email_jobs where task_id = $1 and deferred_retries > 0",
            [taskId],
          )
          .then(({ rows }) => {
            const t = (performance.now() - started) / 1000;
            for (const r of rows) if (!firstDeferral.has(r.domain)) firstDeferral.set(r.domain, t);
          })
          .catch(() => {});
      }, 250)
    : null;
  try {
    await waitForTaskFinished(rawDb, taskId, 600_000);
  } finally {
    await role.stop(5_000);
    clearInterval(sampler);
    if (chainPoll) clearInterval(chainPoll);
  }
  if (chainPoll && !opts.quiet)
    console.log(
      `            first deferral by domain (s): ${[...firstDeferral]
        .sort((a, b) => a[1] - b[1])
        .map(([d, t]) => `${d} ${t.toFixed(1)}`)
        .join(", ")}`,
    );
  const wallMs = performance.now() - started;
  const counts = counter.read();
  // When the last address that needed no retry was final, and the last one that did: the pass,
  // and the retry chains.
  const { rows: ends } = await rawDb.query<{ pass: number | null; chains: number | null }>(
    `select extract(epoch from max(v.created_at) filter (where j.deferred_retries + j.unreachable_retries = 0) - t.created_at)::float8 as pass,
            extract(epoch from max(v.created_at) filter (where j.deferred_retries + j.unreachable_retries > 0) - t.created_at)::float8 as chains
       from email_jobs j join email_verifications v on v.id = j.email_id join tasks t on t.id = j.task_id
      where j.task_id = $1 group by t.created_at`,
    [taskId],
  );
  const { rows: half } = await rawDb.query<{ s: number | null }>(
    `select extract(epoch from percentile_disc(0.5) within group (order by v.created_at) - t.created_at)::float8 as s
       from email_verifications v join tasks t on t.id = v.task_id where t.id = $1 group by t.created_at`,
    [taskId],
  );
  let connections = 0;
  let maxPerHost = 0;
  for (const c of world.allCounters().values()) {
    connections += c.connections;
    maxPerHost = Math.max(maxPerHost, c.maxConcurrent);
  }
  const { boundMs, sessions, decidedBy } = opts.bound;
  const figures: RunFigures = {
    wallMs,
    createdMs,
    ratio: wallMs / boundMs,
    connectionsPerAddress: connections / addresses.length,
    maxPerServerIp: maxPerHost,
    statementsPerAddress: counts.roundTrips / addresses.length,
    peakRssMb: (peakRss - rssBefore) / 1e6,
    halfDoneS: half[0]?.s ?? null,
    passDoneS: ends[0]?.pass ?? null,
    chainsDoneS: ends[0]?.chains ?? null,
  };
  if (!opts.quiet) {
    console.log(
      `  ${label.padEnd(9)} wall ${(wallMs / 1000).toFixed(1)} s (POST ${createdMs.toFixed(0)} ms, half final at ${figures.halfDoneS?.toFixed(1) ?? "?"} s, ` +
        `pass done at ${figures.passDoneS?.toFixed(1) ?? "?"} s, retried done at ${figures.chainsDoneS?.toFixed(1) ?? "-"} s)   ` +
        `${(addresses.length / (wallMs / 1000)).toFixed(0)} addresses/s   ${figures.connectionsPerAddress.toFixed(3)} SMTP connections/address ` +
        `(${connections} for ${sessions} sessions at least)   max concurrent per server IP ${maxPerHost}\n` +
        `            lower bound ${(boundMs / 1000).toFixed(1)} s (${decidedBy})   ratio wall/bound ${figures.ratio.toFixed(2)}   ` +
        `peak RSS +${figures.peakRssMb.toFixed(0)} MB during the run\n` +
        `            database: ${figures.statementsPerAddress.toFixed(2)} statements/address ` +
        `(${(counts.writes / addresses.length).toFixed(2)} writes, ${(counts.locks / addresses.length).toFixed(2)} locking reads, ` +
        `${(counts.reads / addresses.length).toFixed(2)} reads, ${(counts.txControl / addresses.length).toFixed(2)} BEGIN/COMMIT), ` +
        `${(counts.ms / 1000).toFixed(1)} s waited in all`,
    );
    if (process.argv.includes("--statements")) {
      const top = [...counts.statements].sort((a, b) => b[1].ms - a[1].ms).slice(0, 12);
      for (const [text, st] of top)
        console.log(
          `              ${st.count.toString().padStart(6)} × ${(st.ms / st.count).toFixed(2).padStart(7)} ms  ${text}`,
        );
    }
  }
  await ctx.close();
  return figures;
}

const RUNS = Number(process.argv.find((a) => a.startsWith("--runs="))?.slice("--runs=".length) ?? "1");
/** Runs `runOne` on a fresh database of each engine, RUNS times, and prints min/median/max of several figures. */
async function onBothEngines(
  title: string,
  runOne: (label: string, db: Database, quiet: boolean) => Promise<RunFigures>,
): Promise<void> {
  const engines = benchEngines();
  for (const [label, open] of engines) {
    const all: RunFigures[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { db, done } = await open();
      try {
        all.push(await runOne(label, db, false));
      } finally {
        await done();
      }
    }
    if (RUNS > 1) {
      const mmm = (f: (r: RunFigures) => number, digits: number): string => {
        const v = all.map(f).sort((a, b) => a - b);
        return `${v[0]!.toFixed(digits)}/${v[v.length >> 1]!.toFixed(digits)}/${v[v.length - 1]!.toFixed(digits)}`;
      };
      console.log(
        `  ${label} ${title}, ${RUNS} runs, min/median/max: wall ${mmm((r) => r.wallMs / 1000, 1)} s, ` +
          `ratio ${mmm((r) => r.ratio, 2)}, half final at ${mmm((r) => r.halfDoneS ?? NaN, 1)} s, ` +
          `pass done at ${mmm((r) => r.passDoneS ?? NaN, 1)} s, retried done at ${mmm((r) => r.chainsDoneS ?? NaN, 1)} s, ` +
          `connections/address ${mmm((r) => r.connectionsPerAddress, 3)}, max per server IP ${mmm((r) => r.maxPerServerIp, 0)}, ` +
          `statements/address ${mmm((r) => r.statementsPerAddress, 2)}`,
      );
    }
  }
}

async function plainWorld(): Promise<void> {
  console.log(
    `\nbatch: 10,000 addresses, 300 domains${OLD_WORLD ? " (no sender-block or front-end overlays)" : ""}, ` +
      `${LATENCY_MS} ms per reply, ${CONCURRENCY} sessions, ${PER_HOST} per server IP`,
  );
  const unbudgeted = lowerBoundMs(false).boundMs;
  console.log(`  (bound without the error budget ${(unbudgeted / 1000).toFixed(1)} s)`);
  const world = await startMailWorld(generated.spec);
  try {
    await onBothEngines("plain world", (label, db, quiet) =>
      run(label, db, world, { bound: lowerBoundMs(true), quiet }),
    );
  } finally {
    await world.close();
  }
}

async function retryWorld(): Promise<void> {
  const { spec, deferring } = retryWorldSpec();
  const bound = lowerBoundMs(true, deferring);
  console.log(
    `\nbatch with retries: the same 10,000 addresses, ${deferring.size} domains answering 451 throughout ` +
      `(${addresses.filter((a) => deferring.has(a.slice(a.indexOf("@") + 1))).length} addresses), ` +
      `VERIFY_RETRY_DELAYS ${RETRY_DELAYS_S.join(",")} s`,
  );
  const world = await startMailWorld(spec);
  try {
    await onBothEngines("retry world", (label, db, quiet) =>
      run(label, db, world, {
        env: {
          VERIFY_RETRY_DELAYS: RETRY_DELAYS_S.join(","),
          VERIFY_UNREACHABLE_RETRY_DELAYS: "0.3,1.2",
        },
        bound,
        quiet,
      }),
    );
  } finally {
    await world.close();
  }
}

/**
 * Greylisting with a hint: 20 addresses whose server answers "451 4.7.1 Greylisted, please try
 * again in 5 seconds"; VERIFY_RETRY_DELAYS stays at its 5-minute default, so only the hint can
 * finish the task within seconds. Prints how long after its first refusal each address passed.
 */
async function greylistRun(): Promise<void> {
  const GREY_SECONDS = 5;
  const mailboxes = Array.from({ length: 20 }, (_, i) => `user${i.toString()}`);
  const world = await startMailWorld({
    latencyMs: LATENCY_MS,
    domains: [
      {
        name: "grey.test",
        hosts: [{ name: "mx.grey.test" }],
        mailboxes,
        greylistSeconds: GREY_SECONDS,
        greylistStyle: "hint",
      },
    ],
  });
  const db = await openPglite(null);
  try {
    await migrate(db);
    const ctx = await createTestContext({ db, env: worldEnv(world) });
    const user = await ctx.createUser(100);
    const started = performance.now();
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/tasks",
      headers: ctx.bearer(user.apiKey),
      payload: { emails: mailboxes.map((m) => `${m}@grey.test`) },
    });
    const role = createWorkerRole(ctx.services);
    role.start();
    try {
      await waitForTaskFinished(db, res.json<{ id: string }>().id, 120_000);
    } finally {
      await role.stop(5_000);
    }
    const wallMs = performance.now() - started;
    const waits = world
      .counters("mx.grey.test")
      .greylistPassed.filter((p) => !p.recipient.startsWith("postmaster@"))
      .map((p) => (p.passedAt - p.firstAttemptAt) / 1000);
    const { rows } = await db.query<{ n: number }>(
      "select count(*)::int as n from email_verifications where status = 'valid'",
    );
    console.log(
      `  greylisting with a ${GREY_SECONDS.toString()} s hint (VERIFY_RETRY_DELAYS at its 300 s default): ` +
        `${rows[0]?.n ?? 0}/20 valid, each passed ${Math.min(...waits).toFixed(1)}–${Math.max(...waits).toFixed(1)} s ` +
        `after its first refusal; task wall ${(wallMs / 1000).toFixed(1)} s`,
    );
    await ctx.close();
  } finally {
    await db.close();
    await world.close();
  }
}

export async function benchBatch(): Promise<void> {
  const retriesOnly = process.argv.includes("--retries");
  if (!retriesOnly) await plainWorld();
  await retryWorld();
  if (!retriesOnly) await greylistRun();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes("--greylist-only")) await greylistRun();
  else if (process.argv.includes("--plain-only")) await plainWorld();
  else await benchBatch();
}
