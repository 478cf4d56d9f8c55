// A task finishes when the user wants. `POST /api/v1/tasks/{id}/finish` settles
// the addresses waiting for a server's retry as unknown (refunded), and a task's retry window
// settles them by itself. Real parts: the mail-world simulator greylists one domain for an hour
// (every attempt 451), VERIFY_RETRY_DELAYS keeps retries far away, the worker role runs the real
// engine, and a ManualClock moves time. Runs on PGlite and, with TEST_DATABASE_URL, on PostgreSQL.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { loadConfig } from "../../../src/config/index.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";

const SCHEDULE_S = [1_800, 1_800];
const HOOK = "https://hooks.example.test/mailprobe";

let world: MailWorld;
let ctx: TestContext;
const clock = new ManualClock(new Date());

before(async () => {
  world = await startMailWorld({
    domains: [
      {
        name: "grey.test",
        hosts: [{ name: "mx.grey.test" }],
        mailboxes: ["gil", "gus"],
        greylistSeconds: 3_600,
      },
      { name: "ok.test", hosts: [{ name: "mx.ok.test" }], mailboxes: ["ann"] },
      // A host that waits before its banner: its group is still being verified when a finish lands.
      {
        name: "slow.test",
        hosts: [{ name: "mx.slow.test", bannerDelayMs: 600 }],
        mailboxes: ["sam"],
        greylistSeconds: 3_600,
      },
      { name: "slowok.test", hosts: [{ name: "mx.slowok.test", bannerDelayMs: 600 }], mailboxes: ["sue"] },
    ],
  });
  ctx = await createTestContext({
    clock,
    env: worldEnv(world, { VERIFY_RETRY_DELAYS: SCHEDULE_S.join(","), JOB_LEASE_SECONDS: "60" }),
  });
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

// ---- helpers ----

async function createTask(
  user: TestUser,
  emails: string[],
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(user.apiKey),
    payload: { emails, webhook_url: HOOK, ...extra },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: string }>().id;
}

const finish = (user: TestUser | string, id: string) =>
  ctx.app.inject({
    method: "POST",
    url: `/api/v1/tasks/${id}/finish`,
    headers: ctx.bearer(typeof user === "string" ? user : user.apiKey),
  });

interface TaskReply {
  finished_at: string | null;
  started_at: string | null;
  retry_window_minutes: number | null;
  metrics: {
    job_status: Record<string, number>;
    verification_status: Record<string, number>;
    retries: {
      pending: number;
      next_attempt_at: string | null;
      last_attempt_at: string | null;
      settles_at: string | null;
    };
  };
}

async function getTask(user: TestUser, id: string): Promise<TaskReply> {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/tasks/${id}`,
    headers: ctx.bearer(user.apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<TaskReply>();
}

const balanceOf = async (user: TestUser): Promise<number> =>
  (await ctx.services.credits.balance(user.userId)).balance;

async function ledgerOf(user: TestUser) {
  const { rows } = await ctx.db.query<{ reason: string; amount: number }>(
    "select reason, amount from credit_transactions where user_id = $1 order by seq",
    [user.userId],
  );
  return rows.map((r) => ({ reason: r.reason, amount: Number(r.amount) }));
}

async function resultsOf(taskId: string) {
  const { rows } = await ctx.db.query<{
    email_address: string;
    job: string;
    status: string | null;
    unknown_reason: string | null;
    host_name: string | null;
  }>(
    `select j.email_address, j.status as job, v.status, v.unknown_reason, v.host_name
       from email_jobs j left join email_verifications v on v.id = j.email_id
      where j.task_id = $1 order by j.email_address`,
    [taskId],
  );
  return rows;
}

async function completionWebhooks(taskId: string) {
  const { rows } = await ctx.db.query<{ payload: { data: { status?: string } } }>(
    "select payload from webhook_deliveries where task_id = $1",
    [taskId],
  );
  return rows.map((r) => r.payload.data.status);
}

/** Billed results of a task: recorded and not unknown. */
async function billedResults(taskId: string): Promise<number> {
  const { rows } = await ctx.db.query<{ n: number }>(
    "select count(*) as n from email_verifications where task_id = $1 and status <> 'unknown'",
    [taskId],
  );
  return Number(rows[0]!.n);
}

type Role = ReturnType<typeof createWorkerRole>;

/** Runs the worker until nothing is due now. */
async function drain(role: Role): Promise<void> {
  for (let i = 0; i < 50 && (await role.pool.runOnce()); i++);
}

async function withWorker<T>(fn: (role: Role) => Promise<T>): Promise<T> {
  const role = createWorkerRole(ctx.services);
  try {
    return await fn(role);
  } finally {
    await role.stop(1_000);
  }
}

/** The ledger adds up: grant − reservation + refunds = balance, and only unknowns were refunded. */
async function assertLedgerExact(user: TestUser, granted: number, taskId: string, reserved: number) {
  const ledger = await ledgerOf(user);
  const reservation = ledger.filter((r) => r.reason === "task_reservation");
  const refunds = ledger.filter((r) => r.reason === "task_unknown_refund");
  assert.deepEqual(
    reservation.map((r) => r.amount),
    [-reserved],
  );
  assert.equal(refunds.length, 1, JSON.stringify(ledger));
  const billed = await billedResults(taskId);
  assert.equal(refunds[0]!.amount, reserved - billed, "every unknown, and only those, refunded");
  assert.equal(
    ledger.reduce((sum, r) => sum + r.amount, 0),
    await balanceOf(user),
  );
  assert.equal(await balanceOf(user), granted - billed);
}

// ---- finish now ----

describe("POST /api/v1/tasks/{id}/finish", () => {
  test("greylisted addresses waiting for a retry end unknown (greylisted), refunded; the task completes, one webhook; a second finish changes nothing", async () => {
    const user = await ctx.createUser(10);
    const taskId = await createTask(user, ["gil@grey.test", "gus@grey.test", "ann@ok.test", "bob@ok.test"]);
    await withWorker(drain);

    const waiting = await getTask(user, taskId);
    assert.equal(waiting.finished_at, null);
    assert.equal(waiting.retry_window_minutes, 60);
    assert.equal(waiting.metrics.retries.pending, 2);
    const startedAt = new Date(waiting.started_at!).getTime();
    assert.equal(waiting.metrics.retries.settles_at, new Date(startedAt + 60 * 60_000).toISOString());
    assert.equal(waiting.metrics.retries.last_attempt_at, waiting.metrics.retries.next_attempt_at);
    assert.equal(
      new Date(waiting.metrics.retries.next_attempt_at!).getTime(),
      clock.now().getTime() + SCHEDULE_S[0]! * 1000,
    );

    const finished = await finish(user, taskId);
    assert.equal(finished.statusCode, 200, finished.body);
    const body = finished.json<TaskReply>();
    assert.ok(body.finished_at);
    assert.equal(body.metrics.job_status.pending, 0);
    assert.equal(body.metrics.retries.pending, 0);
    assert.equal(body.metrics.retries.settles_at, null);
    assert.deepEqual(body.metrics.verification_status.unknown, 2);

    // The reason and the host they were waiting on, as a result like any other.
    assert.deepEqual(
      (await resultsOf(taskId)).map((r) => [r.email_address, r.job, r.status, r.unknown_reason, r.host_name]),
      [
        ["ann@ok.test", "completed", "valid", null, "mx.ok.test"],
        ["bob@ok.test", "completed", "invalid", null, "mx.ok.test"],
        ["gil@grey.test", "completed", "unknown", "greylisted", "mx.grey.test"],
        ["gus@grey.test", "completed", "unknown", "greylisted", "mx.grey.test"],
      ],
    );
    await assertLedgerExact(user, 10, taskId, 4);
    assert.equal(await balanceOf(user), 8);
    assert.deepEqual(await completionWebhooks(taskId), ["completed"]);

    // Downloads show them like any unknown.
    const csv = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${taskId}/download?format=csv`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(csv.statusCode, 200, csv.body);
    const greyLines = csv.body.split(/\r?\n/).filter((l) => l.includes("@grey.test"));
    assert.equal(greyLines.length, 2);
    for (const line of greyLines) assert.match(line, /unknown/);

    // Idempotent: the same task, nothing moved, nothing sent again; and no work is left.
    const again = await finish(user, taskId);
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json<TaskReply>().finished_at, body.finished_at);
    await assertLedgerExact(user, 10, taskId, 4);
    assert.deepEqual(await completionWebhooks(taskId), ["completed"]);
    clock.advance(2 * SCHEDULE_S[0]! * 1000);
    assert.equal(await withWorker((role) => role.pool.runOnce()), false);
  });

  test("a finish before any work settles everything pending, as unknown `cancelled`, all refunded", async () => {
    const user = await ctx.createUser(5);
    const taskId = await createTask(user, ["ann@ok.test", "gil@grey.test"]);
    const res = await finish(user, taskId);
    assert.equal(res.statusCode, 200, res.body);
    assert.ok(res.json<TaskReply>().finished_at);
    assert.deepEqual(
      (await resultsOf(taskId)).map((r) => [r.job, r.status, r.unknown_reason]),
      [
        ["completed", "unknown", "cancelled"],
        ["completed", "unknown", "cancelled"],
      ],
    );
    await assertLedgerExact(user, 5, taskId, 2);
    assert.equal(await balanceOf(user), 5);
    assert.deepEqual(await completionWebhooks(taskId), ["completed"]);
  });

  test("a group being verified when the finish lands is recorded, not settled: its retry ends unknown, its answer is billed once, the last write completes the task", async () => {
    const user = await ctx.createUser(10);
    const taskId = await createTask(user, ["gil@grey.test", "sam@slow.test", "sue@slowok.test"]);
    await withWorker(async (role) => {
      // The three groups run at once: gil's answer (greylisted, retried) comes back at once, the
      // slow hosts are still before their banner when the finish lands.
      const running = [role.pool.runOnce(), role.pool.runOnce(), role.pool.runOnce()];
      await waitForJobs(taskId, { processing: 2, retrying: 1 });
      const res = await finish(user, taskId);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<TaskReply>();
      assert.equal(body.finished_at, null, "finishing: two groups are being verified");
      assert.equal(body.metrics.job_status.processing, 2);
      assert.equal(body.metrics.job_status.pending, 0);
      // A second finish meanwhile changes nothing and is not an error.
      assert.equal((await finish(user, taskId)).statusCode, 200);
      await Promise.all(running);
      await drain(role);
    });
    const task = await getTask(user, taskId);
    assert.ok(task.finished_at, "the write of the last group completed the task");
    assert.deepEqual(
      (await resultsOf(taskId)).map((r) => [r.email_address, r.status, r.unknown_reason]),
      [
        ["gil@grey.test", "unknown", "greylisted"],
        ["sam@slow.test", "unknown", "greylisted"],
        ["sue@slowok.test", "valid", null],
      ],
    );
    await assertLedgerExact(user, 10, taskId, 3);
    assert.equal(await balanceOf(user), 9);
    assert.deepEqual(await completionWebhooks(taskId), ["completed"]);
  });

  test("a finish racing the worker's writes: never billed twice, one refund, one webhook", async () => {
    for (let round = 0; round < 4; round++) {
      const user = await ctx.createUser(20);
      const emails = ["gil@grey.test", "gus@grey.test", "ann@ok.test", "sue@slowok.test", "sam@slow.test"];
      const taskId = await createTask(user, emails);
      await withWorker(async (role) => {
        if (round % 2 === 1) await role.pool.runOnce();
        const [answer] = await Promise.all([
          (async () => {
            await delay(round * 150);
            return finish(user, taskId);
          })(),
          drain(role),
        ]);
        assert.equal(answer.statusCode, 200, answer.body);
        await drain(role);
      });
      const task = await getTask(user, taskId);
      assert.ok(task.finished_at, `round ${round}: finished`);
      assert.equal(task.metrics.job_status.completed, emails.length);
      await assertLedgerExact(user, 20, taskId, emails.length);
      assert.deepEqual(await completionWebhooks(taskId), ["completed"]);
    }
  });

  test("errors: unknown id and another user's task 404, a cancelled task 409; an integration key may finish", async () => {
    const owner = await ctx.createUser(10);
    const other = await ctx.createUser(10);
    const taskId = await createTask(owner, ["ann@ok.test"]);
    assert.equal((await finish(other, taskId)).statusCode, 404);
    assert.equal((await finish(owner, "00000000-0000-4000-8000-000000000000")).statusCode, 404);
    assert.equal((await finish(owner, "not-a-uuid")).statusCode, 400);
    const none = await ctx.app.inject({ method: "POST", url: `/api/v1/tasks/${taskId}/finish` });
    assert.equal(none.statusCode, 401);

    const zap = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(owner.apiKey),
      payload: { name: "zap", purpose: "zapier" },
    });
    assert.equal(zap.statusCode, 201, zap.body);
    assert.equal((await finish(zap.json<{ key: string }>().key, taskId)).statusCode, 200);

    const cancelledId = await createTask(owner, ["gil@grey.test"]);
    const cancelled = await ctx.app.inject({
      method: "POST",
      url: `/api/v1/tasks/${cancelledId}/cancel`,
      headers: ctx.bearer(owner.apiKey),
    });
    assert.equal(cancelled.statusCode, 200);
    const res = await finish(owner, cancelledId);
    assert.equal(res.statusCode, 409);
    assert.equal(res.json<{ error: { code: string } }>().error.code, "CONFLICT");
  });
});

async function waitForJobs(taskId: string, want: { processing: number; retrying: number }): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await ctx.db.query<{ processing: number; retrying: number }>(
      `select count(*) filter (where status = 'processing') as processing,
              count(*) filter (where status = 'pending' and attempts > 0) as retrying
         from email_jobs where task_id = $1`,
      [taskId],
    );
    const now = { processing: Number(rows[0]!.processing), retrying: Number(rows[0]!.retrying) };
    if (now.processing === want.processing && now.retrying === want.retrying) return;
    if (Date.now() > deadline) throw new Error(`jobs of ${taskId}: ${JSON.stringify(now)}`);
    await delay(10);
  }
}

// ---- the retry window ----

describe("retry_window_minutes", () => {
  test("0: a deferred answer is settled at once; the task completes without waiting", async () => {
    const user = await ctx.createUser(5);
    const taskId = await createTask(user, ["gil@grey.test", "ann@ok.test"], { retry_window_minutes: 0 });
    await withWorker(drain);
    const task = await getTask(user, taskId);
    assert.equal(task.retry_window_minutes, 0);
    assert.ok(task.finished_at);
    assert.deepEqual(
      (await resultsOf(taskId)).map((r) => [r.email_address, r.status, r.unknown_reason]),
      [
        ["ann@ok.test", "valid", null],
        ["gil@grey.test", "unknown", "greylisted"],
      ],
    );
    await assertLedgerExact(user, 5, taskId, 2);
    assert.deepEqual(await completionWebhooks(taskId), ["completed"]);
  });

  test("a retry due inside the window is made; one that would come after it is not: the address settles, across a worker restart", async () => {
    const user = await ctx.createUser(5);
    // 45 min: the first retry (30 min) fits, the second (60 min) would not.
    const taskId = await createTask(user, ["gil@grey.test"], { retry_window_minutes: 45 });
    await withWorker(drain);
    const waiting = await getTask(user, taskId);
    assert.equal(waiting.metrics.retries.pending, 1);
    assert.equal(
      waiting.metrics.retries.settles_at,
      new Date(new Date(waiting.started_at!).getTime() + 45 * 60_000).toISOString(),
    );
    // A new worker (a restart): the deadline is on the task's row.
    clock.set(new Date(waiting.metrics.retries.next_attempt_at!));
    await withWorker(drain);
    const task = await getTask(user, taskId);
    assert.ok(task.finished_at, "settled instead of a retry past the window");
    assert.deepEqual(
      (await resultsOf(taskId)).map((r) => [r.status, r.unknown_reason]),
      [["unknown", "greylisted"]],
    );
    const { rows } = await ctx.db.query<{ attempts: number; deferred_retries: number }>(
      "select attempts, deferred_retries from email_jobs where task_id = $1",
      [taskId],
    );
    assert.deepEqual(
      rows.map((r) => [r.attempts, r.deferred_retries]),
      [[2, 1]],
    );
    await assertLedgerExact(user, 5, taskId, 1);
    assert.equal(await balanceOf(user), 5);
  });

  test("JSON tasks: 0 and 1440 accepted, -1, 1441 and 1.5 refused with the field named; absent takes the configured default", async () => {
    const user = await ctx.createUser(50);
    for (const minutes of [0, 1_440]) {
      const id = await createTask(user, ["ann@ok.test"], { retry_window_minutes: minutes });
      assert.equal((await getTask(user, id)).retry_window_minutes, minutes);
    }
    for (const minutes of [-1, 1_441, 1.5, "ten"]) {
      const res = await ctx.app.inject({
        method: "POST",
        url: "/api/v1/tasks",
        headers: ctx.bearer(user.apiKey),
        payload: { emails: ["ann@ok.test"], retry_window_minutes: minutes },
      });
      assert.equal(res.statusCode, 400, `${minutes}: ${res.body}`);
      assert.match(res.body, /retry_window_minutes/);
    }
    const id = await createTask(user, ["ann@ok.test"]);
    assert.equal((await getTask(user, id)).retry_window_minutes, ctx.config.taskRetryWindowMinutes);
    assert.equal(ctx.config.taskRetryWindowMinutes, 60);
  });

  test("uploads: the form field, with the same bounds", async () => {
    const user = await ctx.createUser(50);
    for (const [field, expected] of [
      ["0", 0],
      ["1440", 1_440],
      [null, 60],
      [" ", 60],
    ] as const) {
      const res = await upload(user, field);
      assert.equal(res.statusCode, 202, res.body);
      const id = res.json<{ task_id: string }>().task_id;
      assert.equal((await getTask(user, id)).retry_window_minutes, expected);
    }
    for (const field of ["-1", "1441", "1.5", "ten"]) {
      const res = await upload(user, field);
      assert.equal(res.statusCode, 400, `${field}: ${res.body}`);
      assert.match(res.body, /retry_window_minutes/);
    }
  });

  test("TASK_RETRY_WINDOW_MINUTES: 0 to 1440, named when wrong", () => {
    const base = { SMTP_HELO_NAME: "probe.mailprobe.test", DATA_DIR: "/nonexistent-in-tests" };
    assert.equal(loadConfig({ ...base }).taskRetryWindowMinutes, 60);
    assert.equal(loadConfig({ ...base, TASK_RETRY_WINDOW_MINUTES: "0" }).taskRetryWindowMinutes, 0);
    assert.equal(loadConfig({ ...base, TASK_RETRY_WINDOW_MINUTES: "1440" }).taskRetryWindowMinutes, 1_440);
    for (const bad of ["-1", "1441", "soon"])
      assert.throws(
        () => loadConfig({ ...base, TASK_RETRY_WINDOW_MINUTES: bad }),
        /TASK_RETRY_WINDOW_MINUTES/,
      );
  });
});

function upload(user: TestUser, retryWindow: string | null) {
  const boundary = `----mailprobe-test-${randomBytes(12).toString("hex")}`;
  const field =
    retryWindow === null
      ? ""
      : `--${boundary}\r\nContent-Disposition: form-data; name="retry_window_minutes"\r\n\r\n${retryWindow}\r\n`;
  return ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks/batch/upload",
    headers: { ...ctx.bearer(user.apiKey), "content-type": `multipart/form-data; boundary=${boundary}` },
    payload: Buffer.concat([
      Buffer.from(field),
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="list.txt"\r\n` +
          "Content-Type: text/plain\r\n\r\nann@ok.test\r\n",
      ),
      Buffer.from(`--${boundary}--\r\n`),
    ]),
  });
}
