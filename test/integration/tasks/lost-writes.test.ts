// A result write that fails must not pin its jobs. Before, the heartbeat renewed
// every job locked by the worker, so a group whose recordGroup had thrown once stayed
// `processing` (no finish, no refund, no webhook) until the process restarted. Now the write is
// retried with backoff, then the jobs go back to the queue, and the heartbeat renews only jobs
// in flight (the same for host slots). Failures are injected through the Queryable port: a
// Database wrapper that throws on chosen statements (`insert into email_verifications`).
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { DatabaseUnavailableError, type Database, type Queryable } from "../../../src/db/client.ts";
import { claimNextGroup } from "../../../src/jobs/claim.ts";
import { createPgHostGate } from "../../../src/politeness/host-gate.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { openTestDatabase } from "../../support/test-db.ts";

let world: MailWorld;
let inner: Database;
/** Statements starting with this text fail while `failNext` > 0; each failure is counted in `injected`. */
let failing = "insert into email_verifications";
let failNext = 0;
let injected = 0;

function faulty<Q extends Queryable>(q: Q): Q["query"] {
  return async (text, params) => {
    if (text.trimStart().startsWith(failing) && failNext > 0) {
      failNext--;
      injected++;
      throw new DatabaseUnavailableError(new Error("injected: Connection terminated unexpectedly"));
    }
    return q.query(text, params);
  };
}

/** The test database, except for the injected failures. */
const faultyDb = (db: Database): Database => ({
  kind: db.kind,
  query: faulty(db),
  transaction: (fn) => db.transaction((tx) => fn({ query: faulty(tx), exec: (sql) => tx.exec(sql) })),
  exec: (sql) => db.exec(sql),
  subscribe: (channel, handlers) => db.subscribe(channel, handlers),
  close: () => db.close(),
});

let ctx: TestContext;

before(async () => {
  world = await startMailWorld({
    domains: ["lw1", "lw2", "lw3"].map((d) => ({
      name: `${d}.test`,
      hosts: [{ name: `mx.${d}.test` }],
      mailboxes: ["ann", "bob"],
    })),
  });
  inner = await openTestDatabase();
  ctx = await createTestContext({ db: faultyDb(inner), env: worldEnv(world, { JOB_LEASE_SECONDS: "5" }) });
});

after(async () => {
  await ctx?.close();
  await inner?.close();
  await world?.close();
});

async function jobsOf(taskId: string) {
  const { rows } = await inner.query<{
    email_address: string;
    status: string;
    attempts: number;
    locked_until: Date | null;
    email_id: string | null;
  }>(
    "select email_address, status, attempts, locked_until, email_id from email_jobs where task_id = $1 order by position",
    [taskId],
  );
  return rows;
}

async function storedResults(taskId: string): Promise<number> {
  const { rows } = await inner.query<{ n: number }>(
    "select count(*) as n from email_verifications where task_id = $1",
    [taskId],
  );
  return rows[0]!.n;
}

test("a result write that fails once is retried at once: the group finishes, each result stored once", async () => {
  const user = await ctx.createUser(10);
  const taskId = await ctx.createTask(user, ["ann@lw1.test", "bob@lw1.test", "zed@lw1.test"]);
  const role = createWorkerRole(ctx.services);
  failing = "insert into email_verifications";
  failNext = 1;
  injected = 0;
  const started = Date.now();
  try {
    assert.equal(await role.pool.runOnce(), true);
  } finally {
    await role.stop(1_000);
  }
  assert.equal(injected, 1);
  const jobs = await jobsOf(taskId);
  assert.deepEqual(
    jobs.map((j) => [j.status, j.attempts]),
    [
      ["completed", 1],
      ["completed", 1],
      ["completed", 1],
    ],
  );
  assert.equal(await storedResults(taskId), 3);
  const { rows } = await inner.query<{ finished_at: Date | null }>(
    "select finished_at from tasks where id = $1",
    [taskId],
  );
  assert.ok(rows[0]!.finished_at, "the task finished within the same run");
  assert.ok(Date.now() - started < 5_000, "soon, not after a lease");
});

test("a write that keeps failing gives the jobs back to the queue, attempt refunded; the next claim finishes them", async () => {
  const user = await ctx.createUser(10);
  const taskId = await ctx.createTask(user, ["ann@lw2.test", "bob@lw2.test"]);
  const role = createWorkerRole(ctx.services, { recordRetryDelaysMs: [10, 10] });
  failing = "insert into email_verifications";
  failNext = 3; // the first write and both retries
  injected = 0;
  try {
    assert.equal(await role.pool.runOnce(), true);
    assert.equal(injected, 3);
    const handedBack = await jobsOf(taskId);
    assert.deepEqual(
      handedBack.map((j) => [j.status, j.attempts, j.locked_until]),
      [
        ["pending", 0, null],
        ["pending", 0, null],
      ],
      "pending again at once, the lost attempt not counted",
    );
    assert.equal(await storedResults(taskId), 0);
    assert.equal(await role.pool.runOnce(), true);
  } finally {
    await role.stop(1_000);
  }
  const jobs = await jobsOf(taskId);
  assert.deepEqual(
    jobs.map((j) => [j.status, j.attempts]),
    [
      ["completed", 1],
      ["completed", 1],
    ],
  );
  assert.equal(await storedResults(taskId), 2);
  await waitForTaskFinished(inner, taskId, 1_000);
});

test("the heartbeat renews only jobs in flight: a job locked by this worker but not in flight runs out and is redone", async () => {
  const user = await ctx.createUser(10);
  const taskId = await ctx.createTask(user, ["ann@lw3.test", "bob@lw3.test"]);
  // What a failed write used to leave behind: jobs locked by the pool's worker id that no session
  // of it is working on.
  const now = ctx.services.clock.now();
  const leaseUntil = new Date(now.getTime() + ctx.config.worker.leaseMs);
  const orphaned = await claimNextGroup(inner, { worker: "pool-lw", now, leaseUntil, max: 10 });
  assert.equal(orphaned.length, 2);
  const role = createWorkerRole(ctx.services, { workerId: "pool-lw" });
  role.start();
  try {
    // Heartbeats run every max(1 s, lease / 3): two of them pass before the lease would run out.
    await delay(3_500);
    const meanwhile = await jobsOf(taskId);
    assert.deepEqual(
      meanwhile.map((j) => [j.status, j.locked_until?.getTime()]),
      [
        ["processing", leaseUntil.getTime()],
        ["processing", leaseUntil.getTime()],
      ],
      "not renewed",
    );
    // The sweep hands them back once the lease has run out, and the pool finishes them.
    await waitForTaskFinished(inner, taskId, 20_000);
  } finally {
    await role.stop(1_000);
  }
  const jobs = await jobsOf(taskId);
  assert.deepEqual(
    jobs.map((j) => j.status),
    ["completed", "completed"],
  );
  assert.equal(await storedResults(taskId), 2);
});

test("a host slot whose release failed is not renewed by the heartbeat: it frees itself", async () => {
  const gate = createPgHostGate({
    db: ctx.db,
    clock: ctx.services.clock,
    holder: "gate-lw",
    slotsPerHost: 2,
    leaseMs: 60_000,
    maxWaitMs: 1_000,
  });
  const slotExpiry = async (host: string) => {
    const { rows } = await inner.query<{ expires_at: Date }>(
      "select expires_at from smtp_host_slots where host = $1 and holder = 'gate-lw'",
      [host],
    );
    return rows.map((r) => r.expires_at.getTime());
  };
  const releaseLost = await gate.acquire("mx.lost.test");
  const releaseKept = await gate.acquire("mx.kept.test");
  const [lostBefore] = await slotExpiry("mx.lost.test");
  failing = "update smtp_host_slots set holder = null";
  failNext = 1;
  injected = 0;
  releaseLost();
  for (let i = 0; i < 50 && injected === 0; i++) await delay(10);
  assert.equal(injected, 1, "the release failed");
  await delay(20);
  await gate.heartbeat();
  assert.deepEqual(await slotExpiry("mx.lost.test"), [lostBefore], "the lost slot keeps its expiry");
  const [kept] = await slotExpiry("mx.kept.test");
  assert.ok(kept! > lostBefore!, "the slot in use is renewed");
  releaseKept();
});
