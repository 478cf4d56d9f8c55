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
// `--old-world` also leaves out the overlays added with issue 20 (per-user sender blocks, the
// 50-name multi-tenant front end): the world the figures before it were measured on.
import { createWorkerRole } from "../src/app/worker-role.ts";
import type { Database } from "../src/db/client.ts";
import { openPglite } from "../src/db/pglite.ts";
import { openPostgres } from "../src/db/postgres.ts";
import { waitForTaskFinished, worldEnv } from "../test/support/batch.ts";
import {
  createExpectation,
  generateMixedWorld,
  startMailWorld,
  type DomainSpec,
  type MailWorld,
} from "../test/support/mail-world/index.ts";
import { createTestContext } from "../test/support/test-app.ts";
import { withSearchPath } from "../test/support/test-db.ts";
import { migrate } from "../src/db/migrate.ts";

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
  mix: {
    greylist: 0,
    rate_limit: 0,
    servfail: 0,
    all_refused: 0,
    drop_after_banner: 0,
    dns_timeout: 0,
    tarpit: 0,
    busy_mailbox: 0,
    close_on_rcpt_421: 0,
    close_on_rcpt_drop: 0,
    ...(OLD_WORLD ? { sender_block: 0, tenant_front_end: 0 } : {}),
  },
});
const addresses = generated.addresses.slice(0, 10_000);

const ERROR_BUDGET = 9;
const SETTLE_MS = 50;
const expect = createExpectation(generated.spec);

/**
 * `polite`: under the error budget (today's engine); otherwise the bound of issue 4 (k RCPTs a
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

function lowerBoundMs(polite: boolean): { boundMs: number; sessions: number; busiestHost: string } {
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
  for (const domain of generated.spec.domains) {
    const list = perDomain.get(domain.name) ?? [];
    const s = list.length > 0 ? sessionMs(domain, list, polite) : null;
    if (!s) continue;
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
  let busiestHost = "";
  let busiest = 0;
  for (const [h, ms] of hostTotals) {
    if (ms / PER_HOST > busiest) {
      busiest = ms / PER_HOST;
      busiestHost = h;
    }
  }
  return { boundMs: Math.max(busiest, all / CONCURRENCY, longest), sessions, busiestHost };
}

async function run(label: string, db: Database, world: MailWorld): Promise<void> {
  await migrate(db);
  const ctx = await createTestContext({
    db,
    env: worldEnv(world, {
      WORKER_CONCURRENCY: String(CONCURRENCY),
      SMTP_MAX_CONNECTIONS_PER_HOST: String(PER_HOST),
      SMTP_CONNECT_TIMEOUT_MS: "5000",
      SMTP_GREETING_TIMEOUT_MS: "10000",
      SMTP_COMMAND_TIMEOUT_MS: "10000",
    }),
  });
  world.resetCounters();
  const user = await ctx.createUser(10_000);
  const rssBefore = process.memoryUsage().rss;
  let peakRss = rssBefore;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
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
  try {
    await waitForTaskFinished(db, taskId, 600_000);
  } finally {
    await role.stop(5_000);
    clearInterval(sampler);
  }
  const wallMs = performance.now() - started;
  let connections = 0;
  let maxPerHost = 0;
  for (const c of world.allCounters().values()) {
    connections += c.connections;
    maxPerHost = Math.max(maxPerHost, c.maxConcurrent);
  }
  const { boundMs, sessions, busiestHost } = lowerBoundMs(true);
  const unbudgeted = lowerBoundMs(false).boundMs;
  console.log(
    `  ${label.padEnd(9)} wall ${(wallMs / 1000).toFixed(1)} s (POST ${createdMs.toFixed(0)} ms)   ` +
      `${(10_000 / (wallMs / 1000)).toFixed(0)} addresses/s   ${(connections / 10_000).toFixed(3)} SMTP connections/address ` +
      `(${connections} for ${sessions} SMTP domains)   max concurrent per server IP ${maxPerHost}\n` +
      `            lower bound ${(boundMs / 1000).toFixed(1)} s (busiest host ${busiestHost})   ratio wall/bound ${(wallMs / boundMs).toFixed(2)}   ` +
      `(bound without the error budget ${(unbudgeted / 1000).toFixed(1)} s, ratio ${(wallMs / unbudgeted).toFixed(2)})   ` +
      `peak RSS ${(peakRss / 1e6).toFixed(0)} MB (+${((peakRss - rssBefore) / 1e6).toFixed(0)} MB during the run)`,
  );
  await ctx.close();
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
  console.log(
    `\nbatch: 10,000 addresses, 300 domains${OLD_WORLD ? " (the world before issue 20's overlays)" : ""}, ` +
      `${LATENCY_MS} ms per reply, ${CONCURRENCY} sessions, ${PER_HOST} per server IP`,
  );
  const world = await startMailWorld(generated.spec);
  try {
    const lite = await openPglite(null);
    await run("pglite", lite, world);
    await lite.close();
    const base = process.env.BENCH_DATABASE_URL;
    if (base) {
      const schema = `bench_${Date.now().toString(36)}`;
      const admin = openPostgres(base, 1);
      await admin.query(`create schema ${schema}`);
      const pg = openPostgres(withSearchPath(base, schema), 20);
      try {
        await run("postgres", pg, world);
      } finally {
        await pg.close();
        await admin.query(`drop schema ${schema} cascade`);
        await admin.close();
      }
    } else {
      console.log("  postgres  skipped (set BENCH_DATABASE_URL)");
    }
  } finally {
    await world.close();
  }
  await greylistRun();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes("--greylist-only")) await greylistRun();
  else await benchBatch();
}
