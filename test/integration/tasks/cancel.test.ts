// Cancel and delete a task, and RESULT_RETENTION_DAYS.
//
// The worker pool runs with a scripted engine (the verdict is the local part's first letter), so
// a test decides which group is in flight when the cancel lands: verifyGroup waits on a gate the
// test opens. Runs on PGlite and, with TEST_DATABASE_URL, on PostgreSQL.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../../src/config/index.ts";
import { releaseExpiredLeases } from "../../../src/db/queries/jobs.ts";
import type { PgHostGate } from "../../../src/politeness/host-gate.ts";
import type { GroupRecorder } from "../../../src/jobs/group-recorder.ts";
import { createWorkerPool, type WorkerPool } from "../../../src/jobs/runner.ts";
import { createRetentionSweeper } from "../../../src/tasks/retention.ts";
import type { Engine, VerificationResult } from "../../../src/verify/index.ts";
import { createWebhookDispatcher } from "../../../src/webhooks/dispatcher.ts";
import { finishTasksIfDone, finishTasksLeftUnfinished } from "../../../src/tasks/finish-task.ts";
import { taskGroupRecorder } from "../../../src/tasks/group-recorder.ts";
import { recordGroup } from "../../../src/tasks/record-group.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext();
});

after(async () => {
  await ctx?.close();
});

// ---- a scripted engine and a pool around it ----

/** The verdict of an address: v… valid, i… invalid, u… unknown (final), g… greylisted (retried). */
function resultOf(email: string): VerificationResult {
  const kind = email[0];
  const status = kind === "v" ? "valid" : kind === "i" ? "invalid" : "unknown";
  return {
    email,
    status,
    isRoleBased: false,
    isDisposable: false,
    hasMxRecords: true,
    hasReverseDns: true,
    domainName: email.slice(email.indexOf("@") + 1),
    hostName: "mx.scripted.test",
    serverType: "postfix",
    isCatchall: false,
    validatedAt: new Date(),
    unknownReason: kind === "u" ? "policy_rejection" : kind === "g" ? "greylisted" : null,
    needsPhysicalVerify: false,
    didYouMean: null,
    isFreeProvider: false,
    checks: {
      syntax: { status: "passed", reason: null },
      dns: { status: "passed", reason: null },
      mx: { status: "passed", reason: "mx_records" },
      reverse_dns: { status: "passed", reason: null },
      smtp:
        status === "unknown"
          ? { status: "error", reason: kind === "g" ? "greylisted" : "policy_rejection" }
          : status === "valid"
            ? { status: "passed", reason: "accepted" }
            : { status: "failed", reason: "mailbox_missing" },
    },
    evidence: "scripted",
  };
}

interface ScriptedPool {
  pool: WorkerPool;
  /** Domains of the groups verifyGroup was called with, in order. */
  groups: string[];
  /** Holds the next verifyGroup until `release()`; resolves `entered` when the group is in flight. */
  hold(): { entered: Promise<void>; release: () => void };
}

function scriptedPool(
  workerId = `pool-${randomBytes(3).toString("hex")}`,
  recorder: GroupRecorder = taskGroupRecorder,
): ScriptedPool {
  const groups: string[] = [];
  let gate: { enter: () => void; wait: Promise<void> } | null = null;
  const engine = {
    async verifyGroup(domain: string, addresses: readonly string[]) {
      groups.push(domain);
      const g = gate;
      gate = null;
      if (g) {
        g.enter();
        await g.wait;
      }
      return addresses.map(resultOf);
    },
  } as unknown as Engine;
  const hostGate = { isSaturated: () => false, heartbeat: async () => {} } as unknown as PgHostGate;
  const pool = createWorkerPool({
    db: ctx.db,
    clock: ctx.services.clock,
    logger: ctx.services.logger,
    engine,
    gate: hostGate,
    config: ctx.config.worker,
    recorder,
    workerId,
  });
  return {
    pool,
    groups,
    hold() {
      let enter!: () => void;
      let release!: () => void;
      const entered = new Promise<void>((r) => (enter = r));
      const wait = new Promise<void>((r) => (release = r));
      gate = { enter, wait };
      return { entered, release };
    },
  };
}

// ---- API helpers ----

async function createTask(user: TestUser, emails: string[], webhookUrl?: string): Promise<string> {
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(user.apiKey),
    payload: { emails, ...(webhookUrl ? { webhook_url: webhookUrl } : {}) },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: string }>().id;
}

function uploadList(user: TestUser, text: string) {
  const boundary = `----mailprobe-test-${randomBytes(12).toString("hex")}`;
  return ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks/batch/upload",
    headers: { ...ctx.bearer(user.apiKey), "content-type": `multipart/form-data; boundary=${boundary}` },
    payload: Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="list.txt"\r\n` +
          "Content-Type: text/plain\r\n\r\n",
      ),
      Buffer.from(text, "utf8"),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
  });
}

const cancel = (user: TestUser | string, id: string) =>
  ctx.app.inject({
    method: "POST",
    url: `/api/v1/tasks/${id}/cancel`,
    headers: ctx.bearer(typeof user === "string" ? user : user.apiKey),
  });

const remove = (user: TestUser | string, id: string) =>
  ctx.app.inject({
    method: "DELETE",
    url: `/api/v1/tasks/${id}`,
    headers: ctx.bearer(typeof user === "string" ? user : user.apiKey),
  });

const getTask = (user: TestUser, id: string) =>
  ctx.app.inject({ method: "GET", url: `/api/v1/tasks/${id}`, headers: ctx.bearer(user.apiKey) });

const balanceOf = async (user: TestUser): Promise<number> =>
  (await ctx.services.credits.balance(user.userId)).balance;

async function ledgerOf(user: TestUser) {
  const { rows } = await ctx.db.query<{ reason: string; amount: number; balance_after: number }>(
    "select reason, amount, balance_after from credit_transactions where user_id = $1 order by seq",
    [user.userId],
  );
  return rows.map((r) => ({
    reason: r.reason,
    amount: Number(r.amount),
    balanceAfter: Number(r.balance_after),
  }));
}

const refundRows = async (user: TestUser) =>
  (await ledgerOf(user)).filter(
    (r) => r.reason === "task_unknown_refund" || r.reason === "task_cancelled_refund",
  );

async function jobStatuses(taskId: string): Promise<Record<string, string>> {
  const { rows } = await ctx.db.query<{ email_address: string; status: string }>(
    "select email_address, status from email_jobs where task_id = $1",
    [taskId],
  );
  return Object.fromEntries(rows.map((r) => [r.email_address, r.status]));
}

async function deliveriesOf(taskId: string) {
  const { rows } = await ctx.db.query<{ payload: { data: { status?: string } } }>(
    "select payload from webhook_deliveries where task_id = $1",
    [taskId],
  );
  return rows;
}

/** Runs the pool until nothing is due. */
async function drain(p: ScriptedPool): Promise<void> {
  for (let i = 0; i < 50 && (await p.pool.runOnce()); i++);
}

/** Results of the task that are billed: recorded, not unknown. */
async function billedResults(taskId: string): Promise<number> {
  const { rows } = await ctx.db.query<{ n: number }>(
    "select count(*) as n from email_verifications where task_id = $1 and status <> 'unknown'",
    [taskId],
  );
  return Number(rows[0]!.n);
}

// ---- cancel ----

describe("POST /api/v1/tasks/{id}/cancel", () => {
  test("mid-task: pending jobs dropped, the group in flight finishes and is billed, one exact refund, one webhook, nothing runs after", async () => {
    const user = await ctx.createUser(100);
    // Three domains, one group each: a.test runs before the cancel, b.test is in flight, c.test is pending.
    const emails = [
      "v1@a.test",
      "u1@a.test",
      "i1@a.test",
      "v1@b.test",
      "u1@b.test",
      "v1@c.test",
      "v2@c.test",
    ];
    const taskId = await createTask(user, emails, "https://hooks.example.com/mailprobe");
    assert.equal(await balanceOf(user), 93);
    const p = scriptedPool();

    assert.equal(await p.pool.runOnce(), true);
    const firstDomain = p.groups[0]!;
    const held = p.hold();
    const inFlight = p.pool.runOnce();
    await held.entered;
    const flightDomain = p.groups[1]!;

    const res = await cancel(user, taskId);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<{
      cancelled_at: string | null;
      finished_at: string | null;
      metrics: { job_status: Record<string, number>; progress: number };
    }>();
    assert.ok(body.cancelled_at);
    assert.equal(body.finished_at, body.cancelled_at);
    const perDomain = (d: string) => emails.filter((e) => e.endsWith(`@${d}`)).length;
    const pendingAtCancel = 7 - perDomain(firstDomain) - perDomain(flightDomain);
    assert.equal(body.metrics.job_status.cancelled, pendingAtCancel);
    assert.equal(body.metrics.job_status.processing, perDomain(flightDomain));

    // Refund = reserved (7) − billed so far (the first group's non-unknown results).
    const billedBefore = await billedResults(taskId);
    assert.equal(await balanceOf(user), 100 - billedBefore);

    held.release();
    await inFlight;
    const statuses = await jobStatuses(taskId);
    for (const e of emails) {
      const d = e.slice(e.indexOf("@") + 1);
      assert.equal(statuses[e], d === firstDomain || d === flightDomain ? "completed" : "cancelled", e);
    }
    // The group in flight was recorded and its billable results charged.
    const billed = await billedResults(taskId);
    assert.ok(billed > billedBefore);
    assert.equal(await balanceOf(user), 100 - billed);

    // Nothing is claimed after the cancel.
    assert.equal(await p.pool.runOnce(), false);
    assert.equal(p.groups.length, 2);

    const ledger = await ledgerOf(user);
    assert.deepEqual(
      ledger
        .filter((r) => r.reason.startsWith("task_") && r.reason !== "task_reservation")
        .map((r) => r.reason),
      ["task_cancelled_refund", "task_cancelled_late_result"],
    );
    assert.equal(ledger.at(-1)!.balanceAfter, 100 - billed);

    const deliveries = await deliveriesOf(taskId);
    assert.equal(deliveries.length, 1);
    assert.equal(deliveries[0]!.payload.data.status, "cancelled");

    // The webhook is sent exactly once.
    const posts: string[] = [];
    const dispatcher = createWebhookDispatcher({
      db: ctx.db,
      clock: ctx.services.clock,
      logger: ctx.services.logger,
      config: { allowPrivate: true, timeoutMs: 5_000, retryWindowMs: 3_600_000 },
      secrets: ctx.services.webhookSecrets,
      resolve: async () => ["127.0.0.1"],
      fetchImpl: async (req) => {
        posts.push(req.body);
        return { statusCode: 204 };
      },
    });
    for (let i = 0; i < 3; i++) await dispatcher.runOnce();
    await dispatcher.stop();
    const mine = posts.filter((b) => b.includes(taskId));
    assert.equal(mine.length, 1);
    assert.equal((JSON.parse(mine[0]!) as { data: { status: string } }).data.status, "cancelled");

    const detail = (await getTask(user, taskId)).json<{ cancelled_at: string | null }>();
    assert.equal(detail.cancelled_at, body.cancelled_at);

    // The download gives every row a status: dropped addresses say `cancelled`.
    const download = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${taskId}/download?format=csv`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(download.statusCode, 200, download.body);
    const cancelledRows = download.body.split(/\r?\n/).filter((l) => /^[^,]+,cancelled,/.test(l));
    assert.equal(cancelledRows.length, pendingAtCancel, download.body);
  });

  test("a retry of a group in flight ends as cancelled instead of going back to the queue", async () => {
    const user = await ctx.createUser(10);
    const taskId = await createTask(user, ["g1@grey.test", "v1@grey.test"]);
    const p = scriptedPool();
    const held = p.hold();
    const inFlight = p.pool.runOnce();
    await held.entered;
    assert.equal((await cancel(user, taskId)).statusCode, 200);
    assert.equal(await balanceOf(user), 10);
    held.release();
    await inFlight;
    assert.deepEqual(await jobStatuses(taskId), { "g1@grey.test": "cancelled", "v1@grey.test": "completed" });
    assert.equal(await balanceOf(user), 9);
    assert.equal(await p.pool.runOnce(), false);
  });

  test("a cancelled task's job whose worker died ends cancelled when its lease runs out, never run", async () => {
    const user = await ctx.createUser(10);
    const taskId = await createTask(user, ["v1@lease.test"]);
    const p = scriptedPool();
    const now = ctx.services.clock.now();
    await ctx.db.query(
      "update email_jobs set status = 'processing', locked_by = 'dead', locked_until = $2 where task_id = $1",
      [taskId, new Date(now.getTime() + 1_000)],
    );
    assert.equal((await cancel(user, taskId)).statusCode, 200);
    assert.equal(await releaseExpiredLeases(ctx.db, new Date(now.getTime() + 2_000)), 1);
    await drain(p);
    assert.equal(p.groups.includes("lease.test"), false);
    assert.deepEqual(await jobStatuses(taskId), { "v1@lease.test": "cancelled" });
  });

  test("an upload's status becomes cancelled", async () => {
    const user = await ctx.createUser(10);
    const up = await uploadList(user, "v1@up.test\nv2@up.test\n");
    assert.equal(up.statusCode, 202, up.body);
    const { upload_id: uploadId, task_id: taskId } = up.json<{ upload_id: string; task_id: string }>();
    assert.equal((await cancel(user, taskId)).statusCode, 200);
    const status = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/batch/uploads/${uploadId}`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(status.statusCode, 200, status.body);
    assert.equal(status.json<{ status: string }>().status, "cancelled");
    assert.equal((await getTask(user, taskId)).json<{ file: { status: string } }>().file.status, "cancelled");
    assert.equal(await balanceOf(user), 10);
  });

  test("a finished task, a cancelled one, another user's and an unknown id are refused", async () => {
    const user = await ctx.createUser(10);
    const other = await ctx.createUser(10);
    const finished = await createTask(user, ["v1@done.test"]);
    await drain(scriptedPool());
    const res = await cancel(user, finished);
    assert.equal(res.statusCode, 409, res.body);
    assert.equal(res.json<{ error: { code: string } }>().error.code, "CONFLICT");

    const running = await createTask(user, ["v1@later.test"]);
    assert.equal((await cancel(other, running)).statusCode, 404);
    assert.equal((await cancel(user, running)).statusCode, 200);
    const again = await cancel(user, running);
    assert.equal(again.statusCode, 409);
    assert.match(again.json<{ error: { message: string } }>().error.message, /already cancelled/);
    assert.equal((await cancel(user, "00000000-0000-4000-8000-000000000000")).statusCode, 404);
    assert.equal((await cancel(user, "not-a-uuid")).statusCode, 400);
    assert.equal(await balanceOf(user), 9);
  });

  test("an integration key may cancel", async () => {
    const user = await ctx.createUser(10);
    const zap = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(user.apiKey),
      payload: { name: "zap", purpose: "zapier" },
    });
    assert.equal(zap.statusCode, 201, zap.body);
    const taskId = await createTask(user, ["v1@zap.test"]);
    assert.equal((await cancel(zap.json<{ key: string }>().key, taskId)).statusCode, 200);
  });

  test("two cancels at once: one 200, one 409, one refund row, the right balance", async () => {
    for (let round = 0; round < 3; round++) {
      const user = await ctx.createUser(20);
      const taskId = await createTask(user, ["v1@twice.test", "v2@twice.test", "v3@twice.test"]);
      const answers = await Promise.all([cancel(user, taskId), cancel(user, taskId)]);
      assert.deepEqual(answers.map((a) => a.statusCode).sort(), [200, 409]);
      assert.equal((await refundRows(user)).length, 1);
      assert.equal(await balanceOf(user), 20);
    }
  });

  test("a cancel racing the last group: one refund row, and the balance pays exactly the results recorded", async () => {
    // Rounds 0 and 1 fix the order (the cancel lands while the group is in flight; the group is
    // recorded first); the others race, and the database decides who takes the task's lock first.
    const winners: string[] = [];
    for (let round = 0; round < 6; round++) {
      const user = await ctx.createUser(20);
      const taskId = await createTask(user, ["v1@race.test", "u1@race.test", "i1@race.test"]);
      const p = scriptedPool();
      const held = p.hold();
      const run = p.pool.runOnce();
      await held.entered;
      let cancelled: Awaited<ReturnType<typeof cancel>>;
      if (round === 0) {
        cancelled = await cancel(user, taskId);
        held.release();
        await run;
      } else if (round === 1) {
        held.release();
        await run;
        cancelled = await cancel(user, taskId);
      } else {
        const racing = round % 2 === 0 ? [held.release(), run] : [];
        [cancelled] = await Promise.all([cancel(user, taskId), ...racing]);
        held.release();
        await run;
      }
      winners.push(cancelled.statusCode === 200 ? "cancel" : "group");
      await drain(p);
      const refunds = await refundRows(user);
      assert.equal(refunds.length, 1, JSON.stringify(await ledgerOf(user)));
      assert.equal(
        refunds[0]!.reason,
        cancelled.statusCode === 200 ? "task_cancelled_refund" : "task_unknown_refund",
      );
      assert.equal(await balanceOf(user), 20 - (await billedResults(taskId)));
      assert.equal(await billedResults(taskId), 2, "the group's results were recorded either way");
    }
    assert.deepEqual(winners.slice(0, 2), ["cancel", "group"]);
  });

  test("a cancel racing the task's first claim: no deadlock, one refund row, nothing claimed after", async () => {
    for (let round = 0; round < 6; round++) {
      const user = await ctx.createUser(20);
      const taskId = await createTask(user, ["v1@first.test", "u1@first.test", "v1@second.test"]);
      const p = scriptedPool();
      const [answer] = await Promise.all([cancel(user, taskId), p.pool.runOnce()]);
      assert.ok([200, 409].includes(answer.statusCode), answer.body);
      await drain(p);
      const statuses = Object.values(await jobStatuses(taskId));
      assert.ok(!statuses.includes("pending") && !statuses.includes("processing"), statuses.join());
      if (answer.statusCode === 200) {
        const claimedAfter = p.groups.length;
        assert.equal(await p.pool.runOnce(), false);
        assert.equal(p.groups.length, claimedAfter);
      }
      assert.equal((await refundRows(user)).length, 1, JSON.stringify(await ledgerOf(user)));
      assert.equal(await balanceOf(user), 20 - (await billedResults(taskId)));
    }
  });
});

// ---- delete ----

describe("a task's finish after its last write", () => {
  test("a process that dies between the last write and the finish: the sweep finishes the task, refunded once, one webhook", async () => {
    const user = await ctx.createUser(10);
    const taskId = await createTask(
      user,
      ["v1@crash.test", "u1@crash.test", "i1@crash.test"],
      "https://hooks.example.com/x",
    );
    // The write commits, then the process is gone before the finish that follows it.
    const p = scriptedPool(undefined, {
      ...taskGroupRecorder,
      record: (db, worker, outcomes, at, takeTurn) =>
        recordGroup(db, worker, outcomes, at, takeTurn, async () => []),
    });
    await drain(p);
    assert.deepEqual(Object.values(await jobStatuses(taskId)).sort(), [
      "completed",
      "completed",
      "completed",
    ]);
    const unfinished = await ctx.db.query<{ finished_at: Date | null }>(
      "select finished_at from tasks where id = $1",
      [taskId],
    );
    assert.equal(unfinished.rows[0]!.finished_at, null);
    assert.equal(await balanceOf(user), 7);

    const now = ctx.services.clock.now();
    assert.ok((await finishTasksLeftUnfinished(ctx.db, now)).includes(taskId));
    // A second sweep, and a late finish from the recorder, find nothing more to do.
    assert.ok(!(await finishTasksLeftUnfinished(ctx.db, now)).includes(taskId));
    assert.deepEqual(await finishTasksIfDone(ctx.db, [taskId], now), []);
    assert.equal(await balanceOf(user), 8, "the unknown result refunded once");
    const refunds = (await ledgerOf(user)).filter((r) => r.reason === "task_unknown_refund");
    assert.equal(refunds.length, 1);
    assert.equal((await deliveriesOf(taskId)).length, 1);
  });
});

describe("DELETE /api/v1/tasks/{id}", () => {
  test("a finished task's jobs, results and upload are removed; the ledger stays", async () => {
    const user = await ctx.createUser(10);
    const up = await uploadList(user, "v1@del.test\nu1@del.test\n");
    assert.equal(up.statusCode, 202, up.body);
    const { upload_id: uploadId, task_id: taskId } = up.json<{ upload_id: string; task_id: string }>();
    await drain(scriptedPool());
    assert.ok((await getTask(user, taskId)).json<{ finished_at: string | null }>().finished_at);
    const ledgerBefore = await ledgerOf(user);
    const balanceBefore = await balanceOf(user);
    assert.equal(balanceBefore, 9);

    const res = await remove(user, taskId);
    assert.equal(res.statusCode, 204, res.body);
    assert.equal(res.body, "");
    assert.equal((await getTask(user, taskId)).statusCode, 404);
    const jobs = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${taskId}/jobs`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(jobs.statusCode, 404);
    const upload = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/batch/uploads/${uploadId}`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(upload.statusCode, 404);
    for (const [table, column, id] of [
      ["email_jobs", "task_id", taskId],
      ["email_verifications", "task_id", taskId],
      ["uploads", "task_id", taskId],
      ["upload_row_blocks", "upload_id", uploadId],
    ] as const) {
      const { rows } = await ctx.db.query<{ n: number }>(
        `select count(*) as n from ${table} where ${column} = $1`,
        [id],
      );
      assert.equal(Number(rows[0]!.n), 0, table);
    }
    assert.deepEqual(await ledgerOf(user), ledgerBefore);
    assert.equal(await balanceOf(user), balanceBefore);
    const tx = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/credits/transactions?limit=100",
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(tx.statusCode, 200, tx.body);
    assert.ok(tx.body.includes(taskId), "the ledger still names the task");
    assert.equal((await remove(user, taskId)).statusCode, 404);
  });

  test("a cancelled task can be deleted; an unfinished one is a 409", async () => {
    const user = await ctx.createUser(10);
    const taskId = await createTask(user, ["v1@del2.test"], "https://hooks.example.com/x");
    const res = await remove(user, taskId);
    assert.equal(res.statusCode, 409, res.body);
    assert.equal(res.json<{ error: { code: string } }>().error.code, "CONFLICT");
    assert.equal((await cancel(user, taskId)).statusCode, 200);
    assert.equal((await remove(user, taskId)).statusCode, 204);
    // The queued webhook is kept (detached) and still sent once.
    const { rows } = await ctx.db.query<{ n: number }>(
      "select count(*) as n from webhook_deliveries where user_id = $1 and task_id is null",
      [user.userId],
    );
    assert.equal(Number(rows[0]!.n), 1);
  });

  test("another user's task is a 404; an integration key gets a 403", async () => {
    const user = await ctx.createUser(10);
    const other = await ctx.createUser(10);
    const taskId = await createTask(user, ["v1@del3.test"]);
    assert.equal((await cancel(user, taskId)).statusCode, 200);
    assert.equal((await remove(other, taskId)).statusCode, 404);
    const zap = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(user.apiKey),
      payload: { name: "sheet", purpose: "google sheets" },
    });
    assert.equal(zap.statusCode, 201, zap.body);
    const denied = await remove(zap.json<{ key: string }>().key, taskId);
    assert.equal(denied.statusCode, 403, denied.body);
    assert.equal(denied.json<{ error: { code: string } }>().error.code, "FORBIDDEN");
    assert.equal((await getTask(user, taskId)).statusCode, 200);
  });
});

// ---- retention ----

describe("RESULT_RETENTION_DAYS", () => {
  test("config: unset keeps forever; a positive number of days; anything else is refused", () => {
    assert.equal(loadConfig({}).resultRetentionDays, null);
    assert.equal(loadConfig({ RESULT_RETENTION_DAYS: "30" }).resultRetentionDays, 30);
    assert.throws(() => loadConfig({ RESULT_RETENTION_DAYS: "0" }), /RESULT_RETENTION_DAYS/);
    assert.throws(() => loadConfig({ RESULT_RETENTION_DAYS: "ten" }), /RESULT_RETENTION_DAYS/);
  });

  test("the purge deletes tasks finished before the cutoff, in bounded batches, and keeps the ledger", async () => {
    const clock = new ManualClock("2030-01-01T00:00:00Z");
    const aged = await createTestContext({ db: ctx.db, clock, env: { RESULT_RETENTION_DAYS: "30" } });
    try {
      const user = await aged.createUser(100);
      const create = async (emails: string[]) => {
        const res = await aged.app.inject({
          method: "POST",
          url: "/api/v1/tasks",
          headers: aged.bearer(user.apiKey),
          payload: { emails },
        });
        assert.equal(res.statusCode, 201, res.body);
        return res.json<{ id: string }>().id;
      };
      const cancelAt = (id: string) =>
        aged.app.inject({
          method: "POST",
          url: `/api/v1/tasks/${id}/cancel`,
          headers: aged.bearer(user.apiKey),
        });
      const old = await create(["v1@old.test"]);
      assert.equal((await cancelAt(old)).statusCode, 200);
      const running = await create(["v1@running.test"]); // unfinished: never purged
      clock.advance(20 * 86_400_000);
      const recent = await create(["v1@recent.test"]);
      assert.equal((await cancelAt(recent)).statusCode, 200);
      const ledgerBefore = await ledgerOf(user);

      const sweeper = createRetentionSweeper({
        db: aged.db,
        clock,
        logger: aged.services.logger,
        retentionDays: aged.config.resultRetentionDays,
      });
      const exists = async (id: string) =>
        Number(
          (await aged.db.query<{ n: number }>("select count(*) as n from tasks where id = $1", [id])).rows[0]!
            .n,
        );
      // Other tests' tasks in this database finished in real time (2026), long before this clock's
      // cutoff: the sweeper takes them too. Only this user's tasks are looked at.
      await sweeper.runOnce();
      assert.equal(await exists(old), 1, "not 30 days old yet");
      clock.advance(11 * 86_400_000);
      await sweeper.runOnce();
      assert.equal(await exists(old), 0);
      assert.equal(await exists(recent), 1);
      assert.equal(await exists(running), 1);
      assert.deepEqual(await ledgerOf(user), ledgerBefore);
      clock.advance(20 * 86_400_000);
      await sweeper.runOnce();
      assert.equal(await exists(recent), 0);
      assert.equal(await exists(running), 1);

      // Bounded: a tick purges at most batchSize × maxBatchesPerTick tasks; the timer drives ticks.
      const backlog: string[] = [];
      for (let i = 0; i < 5; i++) {
        const id = await create([`v${i}@backlog.test`]);
        assert.equal((await cancelAt(id)).statusCode, 200);
        backlog.push(id);
      }
      clock.advance(31 * 86_400_000);
      const bounded = createRetentionSweeper({
        db: aged.db,
        clock,
        logger: aged.services.logger,
        retentionDays: 30,
        batchSize: 2,
        maxBatchesPerTick: 2,
        intervalMs: 20,
      });
      assert.equal(await bounded.runOnce(), 4);
      bounded.start();
      // The five finished at the same instant, so the purge takes them in no particular order.
      const left = async () => (await Promise.all(backlog.map(exists))).reduce((a, b) => a + b, 0);
      for (let i = 0; i < 100 && (await left()) > 0; i++) await delay(20);
      await bounded.stop();
      for (const id of backlog) assert.equal(await exists(id), 0);
      assert.equal(await exists(running), 1);
    } finally {
      await aged.close();
    }
  });

  test("unset: the sweeper does nothing", async () => {
    const sweeper = createRetentionSweeper({
      db: ctx.db,
      clock: new ManualClock("2100-01-01T00:00:00Z"),
      logger: ctx.services.logger,
      retentionDays: null,
    });
    sweeper.start();
    assert.equal(await sweeper.runOnce(), 0);
    await sweeper.stop();
  });
});
