// A 10,000-address task that needs no SMTP (disposable domains, a domain that does not exist):
// every result of such a list is ready at once, and its writes used to run back to back. Results
// are now written in batches of RECORD_BATCH_MAX, each its own short transaction with its own
// ledger effect. Here: the big list completes with the right counts and an exact ledger, and a
// write that fails between two batches of one group loses nothing and bills nothing twice (the
// batch already written is not written again). The event loop's liveness under such a list is
// measured by the hostile-load suite, not here.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import type { Database, Queryable } from "../../../src/db/client.ts";
import { RECORD_BATCH_MAX } from "../../../src/tasks/record-group.ts";
import { CLAIM_GROUP_MAX } from "../../../src/jobs/runner.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { openTestDatabase } from "../../support/test-db.ts";

/** Disposable domains (the engine's list) and a domain the simulator's DNS says does not exist. */
const DISPOSABLE = ["mailinator.com", "guerrillamail.com", "10minutemail.com"];
const MISSING = "gone.large.test";

let world: MailWorld;
let inner: Database;
let ctx: TestContext;
/** Statements starting with `failing` fail at these 1-based occurrences (counted in `seen`). */
const failing = "insert into email_verifications";
let failAt = new Set<number>();
let seen = 0;

function faulty<Q extends Queryable>(q: Q): Q["query"] {
  return async (text, params) => {
    if (text.trimStart().startsWith(failing) && failAt.has(++seen))
      throw new Error("injected: the write of this batch failed");
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

before(async () => {
  world = await startMailWorld({ domains: [{ name: MISSING, dns: "nxdomain" }] });
  inner = await openTestDatabase();
  ctx = await createTestContext({ db: faultyDb(inner), env: worldEnv(world) });
});

after(async () => {
  await ctx?.close();
  await inner?.close();
  await world?.close();
});

/** Runs a worker pool until the task finishes. */
async function work(taskId: string, env: Record<string, string> = {}): Promise<void> {
  const node =
    Object.keys(env).length > 0 ? await createTestContext({ db: ctx.db, env: worldEnv(world, env) }) : ctx;
  const role = createWorkerRole(node.services, { recordRetryDelaysMs: [50] });
  role.start();
  try {
    await waitForTaskFinished(inner, taskId, 120_000);
  } finally {
    await role.stop(5_000);
    if (node !== ctx) await node.close();
  }
}

async function outcomeOf(taskId: string, userId: string) {
  const { rows: jobs } = await inner.query<{ status: string; n: number; max_attempts: number }>(
    "select status, count(*)::int as n, max(attempts) as max_attempts from email_jobs where task_id = $1 group by status",
    [taskId],
  );
  const { rows: results } = await inner.query<{ status: string; n: number }>(
    "select status, count(*)::int as n from email_verifications where task_id = $1 group by status order by status",
    [taskId],
  );
  const { rows: ledger } = await inner.query<{ reason: string; amount: number }>(
    "select reason, amount from credit_transactions where user_id = $1 and metadata->>'task_id' = $2 order by seq",
    [userId, taskId],
  );
  const balance = (await ctx.services.credits.balance(userId)).balance;
  return {
    jobs: Object.fromEntries(jobs.map((j) => [j.status, j.n])),
    maxAttempts: Math.max(...jobs.map((j) => j.max_attempts)),
    results: Object.fromEntries(results.map((r) => [r.status, r.n])),
    ledger,
    balance,
  };
}

test("a 10,000-address task that needs no SMTP completes with the right counts and an exact ledger", async () => {
  const emails = Array.from({ length: 10_000 }, (_, i) =>
    i % 4 === 3 ? `user${i}@${MISSING}` : `user${i}@${DISPOSABLE[i % 3]!}`,
  );
  const user = await ctx.createUser(10_000);
  const taskId = await ctx.createTask(user, emails);
  await work(taskId);
  const outcome = await outcomeOf(taskId, user.userId);
  assert.deepEqual(outcome.jobs, { completed: 10_000 });
  assert.equal(outcome.maxAttempts, 1, "no job was claimed twice");
  assert.deepEqual(outcome.results, { disposable_domain: 7_500, invalid: 2_500 });
  // Every result is billed (none unknown): the reservation stands and nothing is refunded.
  assert.deepEqual(outcome.ledger, [{ reason: "task_reservation", amount: -10_000 }]);
  assert.equal(outcome.balance, 0);
});

test("a write that fails between two batches of a group: nothing lost, nothing written or billed twice", async () => {
  assert.ok(CLAIM_GROUP_MAX > RECORD_BATCH_MAX, "a group spans more than one batch");
  const emails = Array.from({ length: 300 }, (_, i) => `user${i}@${i % 2 ? "mailinator.com" : MISSING}`);
  const user = await ctx.createUser(300);
  const taskId = await ctx.createTask(user, emails);
  // One group at a time: the second results insert is the second batch of the first group.
  seen = 0;
  failAt = new Set([2]);
  try {
    await work(taskId, { WORKER_CONCURRENCY: "1" });
  } finally {
    failAt = new Set();
  }
  assert.ok(seen >= 3, `the failed batch was written again (${seen} inserts)`);
  const outcome = await outcomeOf(taskId, user.userId);
  assert.deepEqual(outcome.jobs, { completed: 300 });
  assert.equal(outcome.maxAttempts, 1, "the group was written again, not probed again");
  assert.deepEqual(outcome.results, { disposable_domain: 150, invalid: 150 }, "one result per job");
  assert.deepEqual(outcome.ledger, [{ reason: "task_reservation", amount: -300 }]);
  assert.equal(outcome.balance, 0);
});
