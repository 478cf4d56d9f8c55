// Batch throughput: a 10,000-address task over 300 simulated domains, 20 ms per SMTP reply, run by
// one in-process worker pool (WORKER_CONCURRENCY 16, SMTP_MAX_CONNECTIONS_PER_HOST 2), on PGlite
// and (with BENCH_DATABASE_URL) PostgreSQL.
//
// The round-trip lower bound of the same world under the same politeness limit:
//   a session to a domain's MX costs   banner pause (the simulator's fixed 100 ms) + 1 RT connect/banner
//                                     + 1 RT EHLO + ceil((n + 1) / k) RT for the pipelined
//                                     MAIL+RCPT transactions (n addresses + the catch-all probe,
//                                     k = 50 or the host's own RCPT limit);
//   one host can't finish faster than  (sum of its sessions) / 2 (two connections at a time);
//   the pool can't finish faster than  (sum of all sessions) / 16 (sixteen sessions at a time);
//   bound = max(slowest host, whole pool, longest single session). QUIT, DNS and database time
//   are left out, so the bound is optimistic: a ratio near 1 means little is left to gain.
// Temporary failures (greylisting, refused hosts, SERVFAIL, drops) are left out of this world:
// their retries wait on VERIFY_RETRY_DELAYS (minutes), which no wall-clock figure should hide.
import { createWorkerRole } from "../src/app/worker-role.ts";
import type { Database } from "../src/db/client.ts";
import { openPglite } from "../src/db/pglite.ts";
import { openPostgres } from "../src/db/postgres.ts";
import { waitForTaskFinished, worldEnv } from "../test/support/batch.ts";
import {
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
  },
});
const addresses = generated.addresses.slice(0, 10_000);

function sessionMs(domain: DomainSpec, n: number): { host: string; ms: number } | null {
  const mode = domain.dns ?? "mx";
  if (mode !== "mx" && mode !== "a_only") return null;
  const host = (domain.hosts ?? []).find((h) => h.hasAddress !== false && !h.refuseConnections);
  if (!host) return null;
  if (host.connectReply) return { host: host.name, ms: BANNER_PAUSE_MS + LATENCY_MS };
  const k = Math.min(MAX_RCPT, host.maxRcptPerMessage ?? MAX_RCPT);
  return { host: host.name, ms: BANNER_PAUSE_MS + LATENCY_MS * (2 + Math.ceil((n + 1) / k)) };
}

function lowerBoundMs(): { boundMs: number; sessions: number; busiestHost: string } {
  const perDomain = new Map<string, number>();
  for (const a of addresses) {
    const d = a.slice(a.indexOf("@") + 1);
    perDomain.set(d, (perDomain.get(d) ?? 0) + 1);
  }
  const hostTotals = new Map<string, number>();
  let all = 0;
  let longest = 0;
  let sessions = 0;
  for (const domain of generated.spec.domains) {
    const n = perDomain.get(domain.name) ?? 0;
    const s = n > 0 ? sessionMs(domain, n) : null;
    if (!s) continue;
    sessions++;
    hostTotals.set(s.host, (hostTotals.get(s.host) ?? 0) + s.ms);
    all += s.ms;
    longest = Math.max(longest, s.ms);
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
  const { boundMs, sessions, busiestHost } = lowerBoundMs();
  console.log(
    `  ${label.padEnd(9)} wall ${(wallMs / 1000).toFixed(1)} s (POST ${createdMs.toFixed(0)} ms)   ` +
      `${(10_000 / (wallMs / 1000)).toFixed(0)} addresses/s   ${(connections / 10_000).toFixed(3)} SMTP connections/address ` +
      `(${connections} for ${sessions} SMTP domains)   max concurrent per host ${maxPerHost}\n` +
      `            lower bound ${(boundMs / 1000).toFixed(1)} s (busiest host ${busiestHost})   ratio wall/bound ${(wallMs / boundMs).toFixed(2)}   ` +
      `peak RSS ${(peakRss / 1e6).toFixed(0)} MB (+${((peakRss - rssBefore) / 1e6).toFixed(0)} MB during the run)`,
  );
  await ctx.close();
}

export async function benchBatch(): Promise<void> {
  console.log(
    `\nbatch: 10,000 addresses, 300 domains, ${LATENCY_MS} ms per reply, ${CONCURRENCY} sessions, ${PER_HOST} per host`,
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
}

if (import.meta.url === `file://${process.argv[1]}`) await benchBatch();
