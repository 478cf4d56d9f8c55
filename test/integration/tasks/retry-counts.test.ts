// Re-claims after a crash or an expired lease don't use up greylisting retries.
// `attempts` counts claims; the retry schedule used to be indexed by it, so every crash cut the
// greylisting schedule (VERIFY_RETRY_DELAYS) one step short. Now it is indexed by the retries of
// each cause. A worker that "crashes" is simulated exactly as one: it claims the job (attempt
// counted) and never answers; the lease runs out and the sweep returns the job to the queue.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { releaseExpiredLeases } from "../../../src/db/queries/jobs.ts";
import { claimNextGroup } from "../../../src/jobs/claim.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, ManualClock, type TestContext } from "../../support/test-app.ts";

const SCHEDULE_S = [60, 120, 180];

let world: MailWorld;
let ctx: TestContext;
const clock = new ManualClock(new Date());

before(async () => {
  world = await startMailWorld({
    // Greylists for an hour: every attempt in this test is refused with 451.
    domains: [
      { name: "grey.test", hosts: [{ name: "mx.grey.test" }], mailboxes: ["gil"], greylistSeconds: 3_600 },
    ],
  });
  ctx = await createTestContext({
    clock,
    env: worldEnv(world, { VERIFY_RETRY_DELAYS: SCHEDULE_S.join(","), JOB_LEASE_SECONDS: "30" }),
  });
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

async function jobRow(taskId: string) {
  const { rows } = await ctx.db.query<{
    status: string;
    attempts: number;
    deferred_retries: number;
    unreachable_retries: number;
    run_after: Date;
    email_id: string | null;
  }>(
    "select status, attempts, deferred_retries, unreachable_retries, run_after, email_id from email_jobs where task_id = $1",
    [taskId],
  );
  return rows[0]!;
}

/** A worker claims the due job and dies; its lease runs out and the sweep puts the job back. */
async function crashWhileHolding(): Promise<void> {
  const now = clock.now();
  const leaseUntil = new Date(now.getTime() + ctx.config.worker.leaseMs);
  const claimed = await claimNextGroup(ctx.db, { worker: "doomed-worker", now, leaseUntil, max: 10 });
  assert.equal(claimed.length, 1);
  clock.advance(ctx.config.worker.leaseMs + 1_000);
  assert.equal(await releaseExpiredLeases(ctx.db, clock.now()), 1);
}

test("crashes between greylisting retries don't shorten the schedule: every step is used, in order", async () => {
  const user = await ctx.createUser(5);
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(user.apiKey),
    payload: { emails: ["gil@grey.test"] },
  });
  assert.equal(res.statusCode, 201, res.body);
  const taskId = res.json<{ id: string }>().id;
  const role = createWorkerRole(ctx.services);
  const delaysSeen: number[] = [];
  try {
    for (let step = 0; step < SCHEDULE_S.length; step++) {
      // Before each real attempt a worker claims the job and crashes.
      await crashWhileHolding();
      assert.equal(await role.pool.runOnce(), true);
      const job = await jobRow(taskId);
      assert.equal(job.status, "pending", `step ${step + 1}: greylisted, retried`);
      delaysSeen.push((job.run_after.getTime() - clock.now().getTime()) / 1000);
      assert.equal(job.deferred_retries, step + 1);
      // Two claims per step: the crashed one and the real one.
      assert.equal(job.attempts, 2 * (step + 1));
      clock.set(job.run_after);
    }
    // Before the fix: attempts 2 → the second delay (120 s), and at attempts 4 the schedule was
    // exhausted, so the address settled `unknown` after one retry instead of three.
    assert.deepEqual(delaysSeen, SCHEDULE_S);

    // The schedule used up, the greylisted answer stands (the task finishes, refunded).
    await crashWhileHolding();
    assert.equal(await role.pool.runOnce(), true);
  } finally {
    await role.stop(1_000);
  }
  const job = await jobRow(taskId);
  assert.equal(job.status, "completed");
  assert.equal(job.deferred_retries, SCHEDULE_S.length);
  assert.equal(job.unreachable_retries, 0);
  const { rows } = await ctx.db.query<{ status: string; unknown_reason: string | null }>(
    "select status, unknown_reason from email_verifications where id = $1",
    [job.email_id],
  );
  assert.deepEqual(rows, [{ status: "unknown", unknown_reason: "greylisted" }]);
  // `attempts` still counts every claim (the jobs listing shows it; JOB_MAX_ATTEMPTS bounds
  // internal failures by it).
  assert.equal(job.attempts, 2 * (SCHEDULE_S.length + 1));
});
