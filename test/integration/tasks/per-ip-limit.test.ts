// The per-server-IP politeness limit, cluster-wide, as the mail server itself counts it. Four
// worker roles with distinct worker ids share the database, each with its own host-gate holder
// and its own idle connections (four worker processes; the first one shares its process's
// realtime engine, as `serve` does), while realtime requests take the realtime gate's slots at the
// same front end. The simulator's per-client connection counter is sampled every 50 ms: no
// sample may show more than SMTP_MAX_CONNECTIONS_PER_HOST connections from one client IP to one
// server IP, with one egress identity and with two (docs/smtp-sessions.md).
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test, type TestContext as NodeTestContext } from "node:test";
import { engineOptionsFrom } from "../../../src/app/engine-options.ts";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import type { Database } from "../../../src/db/client.ts";
import { createIdleConnections } from "../../../src/verify/index.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, tenantFrontEnd, type MailWorld } from "../../support/mail-world/index.ts";
import { openTestDatabase } from "../../support/test-db.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

const LIMIT = 2;
const WORKERS = 4;
const LATENCY_MS = 30;
const SAMPLE_MS = 50;
const BATCH_TENANTS = 40;
const REALTIME_TENANTS = 6;
// Three unknown users per tenant: a reused connection reaches the error budget after a few
// tenants, so connections are closed and new ones opened throughout the run, not only parked and
// taken over.
const VALID = Array.from({ length: 12 }, (_, i) => `user${(i + 1).toString()}`);
const GHOSTS = ["ghost1", "ghost2", "ghost3"];
const OWN_IP_DOMAINS = 6;
const REALTIME_PARALLEL = 4;
// Spreads the realtime requests over most of the batch's run instead of its first second.
const REALTIME_GAP_MS = 200;

const tenants = tenantFrontEnd({
  tenants: BATCH_TENANTS + REALTIME_TENANTS,
  mailboxesPerTenant: VALID.length,
  latencyMs: LATENCY_MS,
});
const ownIp = Array.from({ length: OWN_IP_DOMAINS }, (_, i) => {
  const name = `own${(i + 1).toString()}.test`;
  return { name, hosts: [{ name: `mx.${name}` }], mailboxes: VALID.slice(0, 8) };
});
const batchEmails = [
  ...tenants.slice(0, BATCH_TENANTS).flatMap((d) => [...VALID, ...GHOSTS].map((l) => `${l}@${d.name}`)),
  ...ownIp.flatMap((d) => [...VALID.slice(0, 8), "ghost1", "ghost2"].map((l) => `${l}@${d.name}`)),
];
// Tenants of their own: addresses the batch also asks would be answered from its results.
const realtimeEmails = tenants
  .slice(BATCH_TENANTS)
  .flatMap((d) => ["user1", "user2", "user3", "user4", "ghost1", "ghost2"].map((l) => `${l}@${d.name}`));

let db: Database;

before(async () => {
  db = await openTestDatabase();
});

after(async () => {
  await db?.close();
});

interface Samples {
  count: number;
  /** Highest `concurrent` sampled, by "server IP ← client IP". */
  maxByClient: Map<string, number>;
  /** Highest sum over the clients of one server IP. */
  maxPerServer: Map<string, number>;
  /** The first samples over the limit, described. */
  over: string[];
}

/** Samples every listener's per-client open connections until stopped. */
function sampleConnections(world: MailWorld): { stop(): Samples } {
  const s: Samples = { count: 0, maxByClient: new Map(), maxPerServer: new Map(), over: [] };
  const sample = (): void => {
    s.count++;
    for (const [name, c] of world.allCounters()) {
      const server = world.addressOf(name);
      let total = 0;
      for (const [client, cc] of Object.entries(c.byClient)) {
        total += cc.concurrent;
        const key = `${server} ← ${client}`;
        s.maxByClient.set(key, Math.max(s.maxByClient.get(key) ?? 0, cc.concurrent));
        if (cc.concurrent > LIMIT && s.over.length < 10)
          s.over.push(`sample ${s.count.toString()}: ${key} ${cc.concurrent.toString()} open`);
      }
      s.maxPerServer.set(server, Math.max(s.maxPerServer.get(server) ?? 0, total));
    }
  };
  const timer = setInterval(sample, SAMPLE_MS);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return s;
    },
  };
}

/** Realtime verifications, a few at a time, each answered 200 with its truth or unknown (into `statuses`). */
async function verifyRealtime(
  ctx: TestContext,
  apiKey: string,
  emails: readonly string[],
  world: MailWorld,
  statuses: string[],
): Promise<void> {
  const queue = [...emails];
  const lane = async (): Promise<void> => {
    for (let email = queue.shift(); email !== undefined; email = queue.shift()) {
      const res = await ctx.app.inject({
        method: "POST",
        url: "/api/v1/verify",
        headers: ctx.bearer(apiKey),
        payload: { email },
      });
      assert.equal(res.statusCode, 200, res.body);
      const status = res.json<{ status: string }>().status;
      // A realtime request has a deadline and may lose the race for a slot: unknown is fair.
      if (status !== "unknown") assert.equal(status, world.expectation(email).status, email);
      statuses.push(status);
      await delay(REALTIME_GAP_MS);
    }
  };
  await Promise.all(Array.from({ length: REALTIME_PARALLEL }, lane));
}

async function runCase(t: NodeTestContext, egress: readonly string[]): Promise<void> {
  const started = Date.now();
  const world = await startMailWorld({ latencyMs: LATENCY_MS, domains: [...tenants, ...ownIp] });
  const ctx = await createTestContext({
    db,
    env: worldEnv(world, {
      SMTP_MAX_CONNECTIONS_PER_HOST: String(LIMIT),
      WORKER_CONCURRENCY: "8",
      // Nothing here is greylisted; a retry that does happen (a dropped or busy session) must not
      // leave the task idle for the default minutes.
      VERIFY_RETRY_DELAYS: "0.1,0.1",
      VERIFY_UNREACHABLE_RETRY_DELAYS: "0.1,0.1",
      VERIFY_TIMEOUT_MS: "10000",
      VERIFY_MAX_IN_FLIGHT_PER_USER: "60",
      ...(egress.length > 0 ? { SMTP_EGRESS: egress.join(",") } : {}),
    }),
  });
  const roles: WorkerRole[] = Array.from({ length: WORKERS }, (_, i) =>
    createWorkerRole(
      i === 0
        ? ctx.services
        : { ...ctx.services, idleConnections: createIdleConnections(engineOptionsFrom(ctx.config.verify)) },
      { workerId: `per-ip-${egress.length.toString()}-${i.toString()}` },
    ),
  );
  const frontEnd = world.addressOf(tenants[0]!.hosts![0]!.name);
  let samples: Samples | undefined;
  const realtime: string[] = [];
  // When the realtime requests and the task were done: the two must overlap to compete.
  const timeline = { realtime: "-", task: "-" };
  // Thrown after the limit's assertions: a stuck or wrong task must not hide a breach.
  let workFailed: Error | null = null;
  try {
    const user = await ctx.createUser(batchEmails.length + realtimeEmails.length + 100);
    const taskId = await ctx.createTask(user, batchEmails);
    world.resetCounters();
    const sampler = sampleConnections(world);
    try {
      for (const role of roles) role.start();
      const since = Date.now();
      const secondsSince = (): string => ((Date.now() - since) / 1000).toFixed(1);
      try {
        await Promise.all([
          verifyRealtime(ctx, user.apiKey, realtimeEmails, world, realtime).then(
            () => (timeline.realtime = secondsSince()),
          ),
          waitForTaskFinished(ctx.db, taskId, 30_000).then(() => (timeline.task = secondsSince())),
        ]);
        const { rows } = await ctx.db.query<{ email: string; status: string }>(
          `select v.email, v.status from email_jobs j
             join email_verifications v on v.id = j.email_id where j.task_id = $1`,
          [taskId],
        );
        assert.equal(rows.length, batchEmails.length, "every address of the task has a result");
        for (const r of rows) assert.equal(r.status, world.expectation(r.email).status, r.email);
      } catch (error) {
        workFailed = error instanceof Error ? error : new Error(String(error));
      }
    } finally {
      try {
        await Promise.all(roles.map((r) => r.stop(2_000)));
        await ctx.close();
      } finally {
        // Stopped after the pools: parked connections closing at the end are sampled too.
        samples = sampler.stop();
      }
    }
  } finally {
    await world.close();
    // Printed on failure too: the counts are what tells a breach from a stuck task.
    if (samples !== undefined)
      t.diagnostic(summary(world, frontEnd, samples, egress, started, realtime, timeline));
  }

  const counters = world.countersOfAddress(frontEnd);
  const sampledMax = Math.max(0, ...samples.maxByClient.values());
  const limitMessage = `more than ${LIMIT.toString()} connections from one client IP to one server IP`;
  // The sampler must have watched the run, not only its first and last instant.
  assert.ok(samples.count >= 20, `only ${samples.count.toString()} samples`);
  assert.deepEqual(samples.over, [], `${limitMessage} (max sampled ${sampledMax.toString()})`);
  const identities = Math.max(1, egress.length);
  for (const [server, max] of samples.maxPerServer)
    assert.ok(
      max <= LIMIT * identities,
      `${server}: ${max.toString()} connections sampled at once, over ${(LIMIT * identities).toString()}`,
    );
  // The realtime path took slots at the front end (its tenants are in no task), not only the batch.
  const realtimeAtFrontEnd = realtimeEmails.filter((e) => (counters.rcptByAddress[e] ?? 0) > 0).length;
  assert.ok(
    realtimeAtFrontEnd > 0,
    `no realtime request reached the front end${workFailed === null ? "" : ` (the work failed: ${workFailed.message})`}`,
  );
  if (egress.length > 0) {
    // Every connection left from an identity's address, and the front end saw each of them.
    assert.deepEqual(Object.keys(counters.byClient).sort(), [...egress].sort());
  }
  if (workFailed !== null) throw workFailed;
}

/** The samples' maxima, and the simulator's high-water marks (transients shorter than a sample included). */
function summary(
  world: MailWorld,
  frontEnd: string,
  samples: Samples,
  egress: readonly string[],
  started: number,
  realtime: readonly string[],
  timeline: { realtime: string; task: string },
): string {
  const counters = world.countersOfAddress(frontEnd);
  const highWater = Object.entries(counters.byClient)
    .map(([ip, c]) => `${ip} ${c.maxConcurrent.toString()}`)
    .join(", ");
  const others = [...world.allCounters().values()]
    .filter((c) => c.connections > 0)
    .flatMap((c) => Object.values(c.byClient).map((cc) => cc.maxConcurrent));
  const unknown = realtime.filter((s) => s === "unknown").length;
  return (
    `${egress.length > 0 ? egress.join("+") : "one identity"}: ${samples.count.toString()} samples in ` +
    `${((Date.now() - started) / 1000).toFixed(1)} s; max sampled per client IP ` +
    `${Math.max(0, ...samples.maxByClient.values()).toString()}, per server IP ` +
    `${Math.max(0, ...samples.maxPerServer.values()).toString()}; high-water per client at the front end ` +
    `${frontEnd}: ${highWater} (${counters.connections.toString()} connections), at any IP ` +
    `${Math.max(0, ...others).toString()}; realtime ${unknown.toString()}/${realtime.length.toString()} unknown; ` +
    `realtime done ${timeline.realtime} s, task ${timeline.task} s after the workers started`
  );
}

void test("4 workers and realtime, one identity: at most 2 connections per IP in every sample", async (t) => {
  await runCase(t, []);
});

void test("4 workers and realtime, two identities: at most 2 per client and server IP in every sample", async (t) => {
  await runCase(t, ["127.0.0.2", "127.0.0.3"]);
});
