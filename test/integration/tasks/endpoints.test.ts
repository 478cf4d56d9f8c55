// HTTP contract of the batch task endpoints (spec: "POST/GET /api/v1/tasks…", "Batch metrics
// object", "Email job", Limits; DESIGN.md §5), against the real app, the real test database and
// the mail-world simulator. The worker pool is driven with runOnce() on a ManualClock, so every
// timestamp, retry and series date is deterministic.
//
// Two eras keep the queue clean. Tasks that are never processed are created at IDLE (2099):
// no worker with a sane clock, ours included, ever finds their jobs due. Processed tasks are
// created at WORK (mid-2025) and drained to the end inside their test, so no test inherits
// another's jobs.
//
// On PostgreSQL this file works in a database of its own: every file of a `--pg` run otherwise
// shares one database, and job claims are global, so another file's running worker (pipeline,
// crash recovery, webhooks: system clock, so our mid-2025 jobs are the oldest due ones) would
// take this file's jobs and verify them against its own mail world. The series tests live in
// this file for the same reason.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import type { Database } from "../../../src/db/client.ts";
import { migrate } from "../../../src/db/migrate.ts";
import { openPostgres } from "../../../src/db/postgres.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { openTestDatabase } from "../../support/test-db.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError, type FieldDetail } from "../../support/assert-error.ts";

const IDLE = "2099-01-05T10:00:00.000Z";
const WORK = "2025-06-02T09:00:00.000Z";
const HOUR = 3_600_000;
const DAY = 86_400_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING_ID = "00000000-0000-4000-8000-000000000000";
const RFC3339_REASON = "must be an RFC 3339 date-time with an offset, e.g. 2026-01-31T00:00:00Z";
const BLOCKED = { code: 554, text: "5.7.1 Client host rejected: blocked using zen.spamhaus.org" };

let world: MailWorld;
let ctx: TestContext;
let role: WorkerRole;
let db: Database;
let dropDb = async (): Promise<void> => {};
const clock = new ManualClock(IDLE);

/** PGlite: the usual per-file database. PostgreSQL: a fresh database next to TEST_DATABASE_URL's. */
async function openFileDatabase(): Promise<Database> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return openTestDatabase();
  const name = `mailprobe_tasks_endpoints_${randomBytes(4).toString("hex")}`;
  const admin = openPostgres(base, 1);
  await admin.query(`create database ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  const own = openPostgres(url.toString(), 8);
  dropDb = async () => {
    await own.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.close();
  };
  await migrate(own);
  return own;
}

before(async () => {
  world = await startMailWorld({
    domains: [
      {
        name: "acme.test",
        hosts: [{ name: "mx1.acme.test", kind: "postfix" }],
        mailboxes: ["alice", "bob", "carol", "info"],
      },
      { name: "catch.test", hosts: [{ name: "mx.catch.test" }], catchAll: true },
      { name: "grey.test", hosts: [{ name: "mx.grey.test" }], mailboxes: ["gina"], greylistSeconds: 3600 },
      {
        name: "block.test",
        hosts: [{ name: "mx.block.test", rcptReply: BLOCKED }],
        mailboxes: ["bob", "carol"],
      },
      {
        name: "down.test",
        hosts: [{ name: "mx.down.test", refuseConnections: true }],
        mailboxes: ["dan", "dave"],
      },
    ],
  });
  db = await openFileDatabase();
  // One retry an hour after a temporary answer: a greylisted address stays pending until the
  // test moves the clock, and the retry after that settles the result.
  ctx = await createTestContext({
    env: worldEnv(world, { VERIFY_RETRY_DELAYS: "3600", VERIFY_UNREACHABLE_RETRY_DELAYS: "3600" }),
    clock,
    db,
  });
  role = createWorkerRole(ctx.services);
});

after(async () => {
  await role?.stop(1000);
  await ctx?.close();
  await db?.close();
  await dropDb();
  await world?.close();
});

// ---------------------------------------------------------------------------------------------
// helpers

type Headers = Record<string, string>;

const tokenOf = (who: TestUser | string): string => (typeof who === "string" ? who : who.apiKey);

function createTask(who: TestUser | string, payload: unknown, headers: Headers = {}) {
  return ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: { ...ctx.bearer(tokenOf(who)), ...headers },
    payload: payload as Record<string, unknown>,
  });
}

function get(who: TestUser | string, url: string) {
  return ctx.app.inject({ method: "GET", url, headers: ctx.bearer(tokenOf(who)) });
}

interface CreatedTask {
  id: string;
  user_id: string | null;
  webhook_url: string | null;
  source: string;
  created_at: string;
  email_count: number;
  submitted_count: number;
  unique_count: number;
  domain_count: number;
}

interface TaskList {
  tasks: Array<{ id: string; user_id: string; source: string; is_file_backed: boolean }>;
  source?: string;
  count: number;
  limit: number;
  offset: number;
}

/** Creates a task and returns its 201 body (fails the test on any other status). */
async function newTask(
  who: TestUser | string,
  emails: string[],
  extra: Record<string, unknown> = {},
): Promise<CreatedTask> {
  const res = await createTask(who, { emails, ...extra });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<CreatedTask>();
}

/** A dashboard session for the user: its tasks get source `frontend`. */
async function jwtOf(user: TestUser): Promise<string> {
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/auth/session",
    headers: ctx.bearer(user.apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ token: string }>().token;
}

async function balanceOf(user: TestUser): Promise<number> {
  const res = await get(user, "/api/v1/credits/balance");
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ balance: number }>().balance;
}

interface TxRow {
  type: string;
  amount: number;
  balance_after: number;
  reason: string;
  metadata: Record<string, unknown>;
}

async function transactionsOf(user: TestUser, reason: string): Promise<TxRow[]> {
  const { rows } = await ctx.db.query<TxRow>(
    "select type, amount, balance_after, reason, metadata from credit_transactions where user_id = $1 and reason = $2 order by created_at, id",
    [user.userId, reason],
  );
  return rows.map((r) => ({ ...r, amount: Number(r.amount), balance_after: Number(r.balance_after) }));
}

async function countRows(table: "tasks" | "email_jobs", user: TestUser): Promise<number> {
  const { rows } = await ctx.db.query<{ n: number }>(
    `select count(*) as n from ${table} where user_id = $1`,
    [user.userId],
  );
  return Number(rows[0]!.n);
}

/** Runs the worker until nothing is due (bounded: a stuck pipeline fails instead of hanging). */
async function drain(maxRounds = 30): Promise<void> {
  for (let i = 0; i < maxRounds; i++) {
    if (!(await role.pool.runOnce())) return;
  }
  throw new Error(`the worker still had due jobs after ${maxRounds} rounds`);
}

const zeroStatus = {
  valid: 0,
  invalid: 0,
  catchall: 0,
  invalid_syntax: 0,
  disposable_domain: 0,
  unknown: 0,
  role_based: 0,
  disposable_domain_emails: 0,
};

/** The metrics object of a task none of whose jobs has been claimed yet. */
const untouchedMetrics = (n: number, createdAt: string) => ({
  total_email_addresses: n,
  job_status: { pending: n, processing: 0, completed: 0, failed: 0, cancelled: 0 },
  progress: 0,
  progress_percent: 0,
  verification_status: zeroStatus,
  last_verification_requested_at: createdAt,
  last_verification_completed_at: null,
  retries: { pending: 0, next_attempt_at: null, last_attempt_at: null, settles_at: null },
  paced: [],
});

const emptyPoint = (date: string) => ({
  date,
  total_email_addresses: 0,
  job_status: { pending: 0, processing: 0, completed: 0, failed: 0, cancelled: 0 },
  progress: 0,
  progress_percent: 0,
  verification_status: zeroStatus,
  last_verification_requested_at: null,
  last_verification_completed_at: null,
  retries: { pending: 0, next_attempt_at: null, last_attempt_at: null, settles_at: null },
  paced: [],
});

const q = (params: Record<string, string>): string => new URLSearchParams(params).toString();

// ---------------------------------------------------------------------------------------------

describe("POST /api/v1/tasks: creation", () => {
  test("201 body: exactly the spec's fields (+ submitted_count, unique_count), webhook_url null when absent, source api_key", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(10);
    const res = await createTask(user, { emails: ["alice@acme.test", "bob@acme.test", "kim@catch.test"] });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.match(body.id, UUID);
    assert.deepEqual(body, {
      id: body.id,
      user_id: user.userId,
      webhook_url: null,
      source: "api_key",
      created_at: IDLE,
      email_count: 3,
      submitted_count: 3,
      unique_count: 3,
      domain_count: 2,
    });
  });

  test("webhook_url is stored and echoed; X-API-Key authenticates like Bearer", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(1);
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/tasks",
      headers: { "x-api-key": user.apiKey },
      payload: { emails: ["alice@acme.test"], webhook_url: "https://hooks.example.com/mailprobe?x=1" },
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().webhook_url, "https://hooks.example.com/mailprobe?x=1");
    const detail = await get(user, `/api/v1/tasks/${res.json().id}`);
    assert.equal(detail.json().webhook_url, "https://hooks.example.com/mailprobe?x=1");
  });

  test("a dashboard JWT creates a task with source frontend (and a frontend reservation)", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(5);
    const task = await newTask(await jwtOf(user), ["alice@acme.test", "bob@acme.test"]);
    assert.equal(task.source, "frontend");
    assert.equal(task.user_id, user.userId);
    const [reservation, ...more] = await transactionsOf(user, "task_reservation");
    assert.equal(more.length, 0);
    assert.deepEqual(reservation!.metadata, { source: "frontend", task_id: task.id });
    assert.equal(await balanceOf(user), 3);
  });

  test("duplicates (case, whitespace, IDN forms) are counted and billed once; one reservation row", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(10);
    const emails = [
      "alice@acme.test",
      "  Alice@ACME.test ",
      "ALICE@acme.TEST",
      "bob@acme.test",
      "bob@acme.test",
      "kim@catch.test",
      "jo@bücher.test",
      "jo@xn--bcher-kva.test",
      "a..b@acme.test", // passes the edge check, fails RFC syntax: a job, no domain
      "A..B@acme.test",
    ];
    const task = await newTask(user, emails);
    assert.equal(task.email_count, 10, "the spec's email_count: emails submitted");
    assert.equal(task.submitted_count, 10);
    assert.equal(task.unique_count, 5, "alice, bob, kim, jo@bücher, a..b");
    assert.equal(task.domain_count, 3, "acme.test, catch.test, xn--bcher-kva.test (not the invalid address)");
    assert.equal(await balanceOf(user), 5);
    const reservations = await transactionsOf(user, "task_reservation");
    assert.equal(reservations.length, 1);
    const r = reservations[0]!;
    assert.equal(r.type, "deduction");
    assert.equal(r.amount, -5);
    assert.equal(r.balance_after, 5);
    assert.equal(r.metadata.source, "api_key");
    assert.equal(r.metadata.api_key_id, user.apiKeyId);
    assert.equal(r.metadata.task_id, task.id);
    assert.equal(await countRows("email_jobs", user), 5);
    const jobs = await get(user, `/api/v1/tasks/${task.id}/jobs`);
    assert.deepEqual(
      jobs
        .json()
        .jobs.map((j: { email_address: string }) => j.email_address)
        .sort(),
      ["a..b@acme.test", "alice@acme.test", "bob@acme.test", "jo@xn--bcher-kva.test", "kim@catch.test"],
    );
  });

  test("exactly 10,000 addresses are accepted and reserve 10,000 credits", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(10_000);
    const emails = Array.from({ length: 10_000 }, (_, i) => `u${i}@bulk${i % 7}.test`);
    const task = await newTask(user, emails);
    assert.equal(task.email_count, 10_000);
    assert.equal(task.domain_count, 7);
    assert.equal(await balanceOf(user), 0);
    const jobs = await get(user, `/api/v1/tasks/${task.id}/jobs?limit=1`);
    assert.equal(jobs.json().count, 10_000);
    // Never processed: created at IDLE, its jobs are never due for any worker of the run.
  });
});

describe("POST /api/v1/tasks: 400, 401, 402", () => {
  const bodyCases: Array<[string, unknown, Array<{ field: string; reason: string }>]> = [
    ["emails missing", {}, [{ field: "emails", reason: "is required" }]],
    ["emails not an array", { emails: "alice@acme.test" }, [{ field: "emails", reason: "must be array" }]],
    ["emails empty", { emails: [] }, [{ field: "emails", reason: "must not be empty" }]],
    [
      "a non-string entry",
      { emails: ["alice@acme.test", 42] },
      [{ field: "emails[1]", reason: "must be string" }],
    ],
    ["a null entry", { emails: [null] }, [{ field: "emails[0]", reason: "must be string" }]],
    [
      "blank entries and entries without a usable @",
      { emails: ["alice@acme.test", "", "   ", "alice.acme.test", "@acme.test", "alice@"] },
      [
        { field: "emails[1]", reason: "must not be empty" },
        { field: "emails[2]", reason: "must not be empty" },
        { field: "emails[3]", reason: "must contain an @ with text on both sides" },
        { field: "emails[4]", reason: "must contain an @ with text on both sides" },
        { field: "emails[5]", reason: "must contain an @ with text on both sides" },
      ],
    ],
    [
      "an entry over 320 characters",
      { emails: [`${"a".repeat(64)}@${"b".repeat(252)}.test`] },
      [{ field: "emails[0]", reason: "must be at most 320 characters" }],
    ],
    [
      "webhook_url relative",
      { emails: ["alice@acme.test"], webhook_url: "/hooks/done" },
      [{ field: "webhook_url", reason: "must be an absolute URL" }],
    ],
    [
      "webhook_url ftp:",
      { emails: ["alice@acme.test"], webhook_url: "ftp://example.com/x" },
      [{ field: "webhook_url", reason: "must use http or https" }],
    ],
    [
      "webhook_url loopback",
      { emails: ["alice@acme.test"], webhook_url: "http://127.0.0.1/x" },
      [{ field: "webhook_url", reason: "must not point to a loopback, private or link-local address" }],
    ],
    [
      "webhook_url cloud metadata (link-local)",
      { emails: ["alice@acme.test"], webhook_url: "http://169.254.169.254/" },
      [{ field: "webhook_url", reason: "must not point to a loopback, private or link-local address" }],
    ],
    [
      "webhook_url over 2048 characters",
      { emails: ["alice@acme.test"], webhook_url: `https://hooks.example.com/${"a".repeat(2030)}` },
      [{ field: "webhook_url", reason: "must be at most 2048 characters" }],
    ],
    [
      "webhook_url with credentials",
      { emails: ["alice@acme.test"], webhook_url: "https://user:secret@hooks.example.com/x" },
      [{ field: "webhook_url", reason: "must not contain credentials" }],
    ],
    [
      "webhook_url not a string",
      { emails: ["alice@acme.test"], webhook_url: 5 },
      [{ field: "webhook_url", reason: "must be string" }],
    ],
  ];
  for (const [name, payload, details] of bodyCases) {
    test(`${name} → 400 VALIDATION_ERROR naming the field; nothing written`, async () => {
      clock.set(IDLE);
      const user = await ctx.createUser(100);
      assertError(await createTask(user, payload), 400, "VALIDATION_ERROR", details);
      assert.equal(await countRows("tasks", user), 0);
      assert.equal(await balanceOf(user), 100);
    });
  }

  test("more than 20 bad entries → exactly the first 20 details, in list order", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(100);
    // 15 bad entries at the odd indices 1…29, then 6 blank ones at 30…35: 21 in all.
    const emails = Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? `ok${i}@acme.test` : `bad${i}`));
    emails.push("", "", "", "", "", "");
    const res = await createTask(user, { emails });
    assertError(res, 400, "VALIDATION_ERROR");
    const expected = [
      ...Array.from({ length: 15 }, (_, k) => ({
        field: `emails[${2 * k + 1}]`,
        reason: "must contain an @ with text on both sides",
      })),
      ...Array.from({ length: 5 }, (_, k) => ({ field: `emails[${30 + k}]`, reason: "must not be empty" })),
    ];
    assert.deepEqual(res.json().error.details, expected);
    assert.equal(await countRows("tasks", user), 0);
  });

  test("10,001 entries → 400 naming emails; nothing written", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(20_000);
    const emails = Array.from({ length: 10_001 }, (_, i) => `u${i}@acme.test`);
    assertError(await createTask(user, { emails }), 400, "VALIDATION_ERROR", [
      { field: "emails", reason: "must contain at most 10000 items (got 10001)" },
    ]);
    assert.equal(await countRows("tasks", user), 0);
    assert.equal(await balanceOf(user), 20_000);
  });

  for (const [name, key] of [
    ["empty", ""],
    ["blank", "   "],
    ["256 characters", "k".repeat(256)],
  ] as const) {
    test(`Idempotency-Key ${name} → 400 naming the header`, async () => {
      clock.set(IDLE);
      const user = await ctx.createUser(5);
      assertError(
        await createTask(user, { emails: ["alice@acme.test"] }, { "idempotency-key": key }),
        400,
        "VALIDATION_ERROR",
        [{ field: "Idempotency-Key", reason: "must be 1-255 characters" }],
      );
      assert.equal(await countRows("tasks", user), 0);
      assert.equal(await balanceOf(user), 5);
    });
  }

  test("Idempotency-Key of 255 characters is accepted", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(5);
    const res = await createTask(
      user,
      { emails: ["alice@acme.test"] },
      { "idempotency-key": "k".repeat(255) },
    );
    assert.equal(res.statusCode, 201, res.body);
  });

  test("402 INSUFFICIENT_CREDITS when the balance is below the distinct count; nothing written", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(2);
    const res = await createTask(user, {
      emails: ["alice@acme.test", "bob@acme.test", "carol@acme.test", "ALICE@acme.test"],
    });
    assertError(res, 402, "INSUFFICIENT_CREDITS");
    assert.equal(await countRows("tasks", user), 0);
    assert.equal(await countRows("email_jobs", user), 0);
    assert.equal(await balanceOf(user), 2);
    assert.equal((await transactionsOf(user, "task_reservation")).length, 0);
    // Exactly enough for the distinct addresses is fine.
    const ok = await createTask(user, { emails: ["alice@acme.test", "ALICE@acme.test", "bob@acme.test"] });
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal(await balanceOf(user), 0);
  });

  test("401 UNAUTHORIZED without credentials or with an unknown key", async () => {
    clock.set(IDLE);
    const none = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/tasks",
      payload: { emails: ["alice@acme.test"] },
    });
    assertError(none, 401, "UNAUTHORIZED");
    assertError(await createTask("not-a-key", { emails: ["alice@acme.test"] }), 401, "UNAUTHORIZED");
  });
});

describe("POST /api/v1/tasks: concurrent reservations", () => {
  test("parallel tasks never overdraw: with 5 credits, exactly two of three 2-address tasks are accepted", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(5);
    const results = await Promise.all(
      [0, 1, 2].map((i) => createTask(user, { emails: [`a${i}@acme.test`, `b${i}@acme.test`] })),
    );
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [201, 201, 402]);
    assertError(
      results.find((r) => r.statusCode === 402)!,
      402,
      "INSUFFICIENT_CREDITS",
    );
    assert.equal(await countRows("tasks", user), 2);
    assert.equal(await countRows("email_jobs", user), 4);
    assert.equal(await balanceOf(user), 1);
  });
});

describe("POST /api/v1/tasks: Idempotency-Key", () => {
  test("same key + same body → the same task twice, one reservation", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(10);
    const body = { emails: ["alice@acme.test", "bob@acme.test"], webhook_url: "https://hooks.example.com/a" };
    const first = await createTask(user, body, { "idempotency-key": "order-42" });
    const second = await createTask(user, body, { "idempotency-key": "order-42" });
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(second.statusCode, 201, second.body);
    assert.deepEqual(second.json(), first.json());
    assert.equal(await countRows("tasks", user), 1);
    assert.equal((await transactionsOf(user, "task_reservation")).length, 1);
    assert.equal(await balanceOf(user), 8);
  });

  test("same key + a different body → 400 naming the header; nothing new written", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(10);
    await newTask(user, ["alice@acme.test"], {});
    const first = await createTask(user, { emails: ["alice@acme.test"] }, { "idempotency-key": "k1" });
    assert.equal(first.statusCode, 201, first.body);
    for (const other of [
      { emails: ["bob@acme.test"] },
      { emails: ["alice@acme.test"], webhook_url: "https://hooks.example.com/a" },
    ]) {
      assertError(await createTask(user, other, { "idempotency-key": "k1" }), 400, "VALIDATION_ERROR", [
        { field: "Idempotency-Key", reason: "reused with a different body" },
      ]);
    }
    assert.equal(await countRows("tasks", user), 2);
    assert.equal(await balanceOf(user), 8);
  });

  test("keys are per user: another user's identical key creates that user's own task", async () => {
    clock.set(IDLE);
    const a = await ctx.createUser(5);
    const b = await ctx.createUser(5);
    const resA = await createTask(a, { emails: ["alice@acme.test"] }, { "idempotency-key": "shared" });
    const resB = await createTask(b, { emails: ["alice@acme.test"] }, { "idempotency-key": "shared" });
    assert.equal(resA.statusCode, 201, resA.body);
    assert.equal(resB.statusCode, 201, resB.body);
    assert.notEqual(resB.json().id, resA.json().id);
    assert.equal(resB.json().user_id, b.userId);
    assert.equal(await balanceOf(b), 4);
  });

  test("the same key more than 24 h later → a new task (and a new reservation)", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(10);
    const body = { emails: ["alice@acme.test"] };
    const first = await createTask(user, body, { "idempotency-key": "daily" });
    clock.advance(24 * HOUR - 1);
    const within = await createTask(user, body, { "idempotency-key": "daily" });
    assert.equal(within.json().id, first.json().id, "a millisecond before 24 h the key still replays");
    clock.advance(2); // 24 h + 1 ms after the first request
    const later = await createTask(user, body, { "idempotency-key": "daily" });
    assert.equal(later.statusCode, 201, later.body);
    assert.notEqual(later.json().id, first.json().id);
    assert.equal(later.json().created_at, clock.now().toISOString());
    // …and that new task is what the key now replays.
    const again = await createTask(user, body, { "idempotency-key": "daily" });
    assert.equal(again.json().id, later.json().id);
    assert.equal(await countRows("tasks", user), 2);
    assert.equal((await transactionsOf(user, "task_reservation")).length, 2);
    assert.equal(await balanceOf(user), 8);
  });

  test("10 concurrent requests with one key → exactly one task and one reservation", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(100);
    const body = { emails: ["alice@acme.test", "bob@acme.test", "carol@acme.test"] };
    const results = await Promise.all(
      Array.from({ length: 10 }, () => createTask(user, body, { "idempotency-key": "burst" })),
    );
    for (const r of results) assert.equal(r.statusCode, 201, r.body);
    assert.equal(new Set(results.map((r) => r.json<{ id: string }>().id)).size, 1);
    assert.equal(await countRows("tasks", user), 1);
    assert.equal(await countRows("email_jobs", user), 3);
    assert.equal((await transactionsOf(user, "task_reservation")).length, 1);
    assert.equal(await balanceOf(user), 97);
  });
});

describe("GET /api/v1/tasks", () => {
  /** n tasks one minute apart; returns their ids oldest first. */
  async function tasksFor(user: TestUser | string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      clock.advance(60_000);
      ids.push((await newTask(user, [`t${i}@acme.test`])).id);
    }
    return ids;
  }

  test("default page: limit 10, offset 0, count = all matching, newest first, summaries exactly", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(100);
    const ids = await tasksFor(user, 12);
    const res = await get(user, "/api/v1/tasks");
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.count, 12);
    assert.equal(body.limit, 10);
    assert.equal(body.offset, 0);
    assert.equal(body.source, "api_key");
    assert.deepEqual(
      body.tasks.map((t: { id: string }) => t.id),
      [...ids].reverse().slice(0, 10),
    );
    const newest = body.tasks[0];
    const createdAt = clock.now().toISOString();
    assert.deepEqual(newest, {
      id: ids[11],
      user_id: user.userId,
      webhook_url: null,
      source: "api_key",
      created_at: createdAt,
      updated_at: createdAt,
      is_file_backed: false,
      file: null,
      metrics: untouchedMetrics(1, createdAt),
    });
  });

  test("limit and offset page through; limit 100 is allowed", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(100);
    const ids = [...(await tasksFor(user, 12))].reverse();
    const page = (await get(user, "/api/v1/tasks?limit=5&offset=10")).json();
    assert.deepEqual(
      page.tasks.map((t: { id: string }) => t.id),
      ids.slice(10),
    );
    assert.deepEqual([page.count, page.limit, page.offset], [12, 5, 10]);
    const beyond = (await get(user, "/api/v1/tasks?limit=5&offset=12")).json();
    assert.deepEqual([beyond.tasks.length, beyond.count], [0, 12]);
    const max = await get(user, "/api/v1/tasks?limit=100");
    assert.equal(max.statusCode, 200);
    assert.equal(max.json().tasks.length, 12);
  });

  const badQueries: Array<[string, Array<{ field: string; reason: string }>]> = [
    ["limit=101", [{ field: "limit", reason: "must be <= 100" }]],
    ["limit=0", [{ field: "limit", reason: "must be >= 1" }]],
    ["limit=abc", [{ field: "limit", reason: "must be integer" }]],
    ["offset=-1", [{ field: "offset", reason: "must be >= 0" }]],
    ["is_file_backed=maybe", [{ field: "is_file_backed", reason: "must be boolean" }]],
    [
      "created_after=yesterday",
      [{ field: "created_after", reason: "must be an RFC 3339 date-time with an offset" }],
    ],
    [
      "created_before=2026-03-10",
      [{ field: "created_before", reason: "must be an RFC 3339 date-time with an offset" }],
    ],
    [
      "created_after=2026-03-10T00%3A00%3A00&created_before=2026-02-30T00%3A00%3A00Z",
      [
        { field: "created_after", reason: "must be an RFC 3339 date-time with an offset" },
        { field: "created_before", reason: "must be an RFC 3339 date-time with an offset" },
      ],
    ],
  ];
  for (const [query, details] of badQueries) {
    test(`${decodeURIComponent(query)} → 400 naming the field`, async () => {
      const user = await ctx.createUser(0);
      assertError(await get(user, `/api/v1/tasks?${query}`), 400, "VALIDATION_ERROR", details);
    });
  }

  test("created_after / created_before filter (exclusive bounds); count follows the filter", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(10);
    const at: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      clock.advance(HOUR);
      at.push(clock.now().toISOString());
      ids.push((await newTask(user, [`f${i}@acme.test`])).id);
    }
    const list = async (params: Record<string, string>) => {
      const res = await get(user, `/api/v1/tasks?${q(params)}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<TaskList>();
    };
    const afterFirst = await list({ created_after: at[0]! });
    assert.deepEqual(
      afterFirst.tasks.map((t: { id: string }) => t.id),
      [ids[2], ids[1]],
    );
    assert.equal(afterFirst.count, 2);
    const beforeLast = await list({ created_before: at[2]! });
    assert.deepEqual(
      beforeLast.tasks.map((t: { id: string }) => t.id),
      [ids[1], ids[0]],
    );
    const between = await list({ created_after: at[0]!, created_before: at[2]! });
    assert.deepEqual(
      between.tasks.map((t: { id: string }) => t.id),
      [ids[1]],
    );
    assert.equal(between.count, 1);
    // The same instant written with an offset.
    const offset = new Date(new Date(at[1]!).getTime() + 2 * HOUR)
      .toISOString()
      .replace("Z", "+02:00")
      .replace(".000", "");
    const sameInstant = await list({ created_after: offset });
    assert.deepEqual(
      sameInstant.tasks.map((t: { id: string }) => t.id),
      [ids[2]],
    );
    const none = await list({ created_after: at[2]! });
    assert.deepEqual([none.tasks.length, none.count], [0, 0]);
    assert.equal("source" in none, false, "no tasks, no shared origin");
  });

  test("is_file_backed filter", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(10);
    const [plain] = await tasksFor(user, 1);
    clock.advance(60_000);
    // A file-backed task through the same use case the upload endpoint uses.
    const principal = {
      userId: user.userId,
      source: "api_key" as const,
      apiKeyId: user.apiKeyId,
      apiKeyPurpose: "custom",
      credentialId: user.apiKeyId,
    };
    const created = await ctx.services.tasks.create(principal, {
      emails: ["file@acme.test"],
      webhookUrl: null,
      retryWindowMinutes: 60,
      idempotencyKey: null,
      isFileBacked: true,
    });
    assert.ok("task" in created, "the balance pays for it");
    const fileTask = created.task;
    const filtered = (await get(user, "/api/v1/tasks?is_file_backed=true")).json();
    assert.deepEqual(
      filtered.tasks.map((t: { id: string; is_file_backed: boolean }) => [t.id, t.is_file_backed]),
      [[fileTask.id, true]],
    );
    assert.equal(filtered.count, 1);
    const notFiltered = (await get(user, "/api/v1/tasks?is_file_backed=false")).json();
    assert.deepEqual(
      notFiltered.tasks.map((t: { id: string; is_file_backed: boolean }) => [t.id, t.is_file_backed]),
      [[plain, false]],
    );
    assert.equal(notFiltered.count, 1);
    assert.equal((await get(user, "/api/v1/tasks")).json().count, 2);
  });

  test("top-level source: present when every task shares one origin, absent when mixed", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(10);
    const jwt = await jwtOf(user);
    await tasksFor(jwt, 2);
    const onlyFrontend = (await get(user, "/api/v1/tasks")).json();
    assert.equal(onlyFrontend.source, "frontend");
    assert.deepEqual(
      onlyFrontend.tasks.map((t: { source: string }) => t.source),
      ["frontend", "frontend"],
    );
    await tasksFor(user, 1);
    const mixed = (await get(jwt, "/api/v1/tasks")).json();
    assert.equal(mixed.count, 3);
    assert.equal("source" in mixed, false);
    assert.deepEqual(
      mixed.tasks.map((t: { source: string }) => t.source),
      ["api_key", "frontend", "frontend"],
    );
  });

  test("another user's tasks never appear", async () => {
    clock.set(IDLE);
    const a = await ctx.createUser(10);
    const b = await ctx.createUser(10);
    const mine = await tasksFor(a, 2);
    await tasksFor(b, 3);
    const res = (await get(a, "/api/v1/tasks?limit=100")).json();
    assert.equal(res.count, 2);
    assert.deepEqual(
      res.tasks.map((t: { id: string }) => t.id),
      [...mine].reverse(),
    );
    assert.ok(res.tasks.every((t: { user_id: string }) => t.user_id === a.userId));
    const fresh = await ctx.createUser(0);
    const empty = (await get(fresh, "/api/v1/tasks")).json();
    assert.deepEqual(empty, { tasks: [], count: 0, limit: 10, offset: 0 });
  });

  test("an offset beyond any page is a 400, not a 500 (tasks and jobs lists)", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(1);
    const task = await newTask(user, ["alice@acme.test"]);
    for (const url of [
      "/api/v1/tasks?offset=100000000000000000000",
      `/api/v1/tasks/${task.id}/jobs?offset=100000000000000000000`,
    ]) {
      const res = await get(user, url);
      assertError(res, 400, "VALIDATION_ERROR");
      assert.equal(res.json<{ error: { details: FieldDetail[] } }>().error.details[0]!.field, "offset");
    }
  });

  test("401 without credentials", async () => {
    assertError(await ctx.app.inject({ method: "GET", url: "/api/v1/tasks" }), 401, "UNAUTHORIZED");
  });
});

describe("GET /api/v1/tasks/{id}", () => {
  test("before processing: started_at and finished_at null; after: set, metrics exact, progress 1", async () => {
    clock.set(WORK);
    const user = await ctx.createUser(20);
    const emails = [
      "alice@acme.test", // valid
      "info@acme.test", // valid, role account
      "zed@acme.test", // invalid
      "kim@catch.test", // catchall
      "temp123@mailinator.com", // disposable, no SMTP
      "bob@block.test", // unknown: the RCPT is refused by a blocklist (not retried)
      "a..b@acme.test", // invalid_syntax
    ];
    const created = await newTask(user, emails);
    const before = await get(user, `/api/v1/tasks/${created.id}`);
    assert.equal(before.statusCode, 200, before.body);
    assert.deepEqual(before.json(), {
      id: created.id,
      user_id: user.userId,
      webhook_url: null,
      source: "api_key",
      created_at: WORK,
      updated_at: WORK,
      is_file_backed: false,
      file: null,
      metrics: untouchedMetrics(7, WORK),
      started_at: null,
      finished_at: null,
      cancelled_at: null,
      retry_window_minutes: 60,
    });

    clock.advance(5 * 60_000);
    const processedAt = clock.now().toISOString();
    await drain();
    const res = await get(user, `/api/v1/tasks/${created.id}`);
    assert.equal(res.statusCode, 200, res.body);
    const task = res.json();
    assert.equal(task.started_at, processedAt);
    assert.equal(task.finished_at, processedAt);
    assert.equal(task.created_at, WORK);
    assert.deepEqual(task.metrics, {
      total_email_addresses: 7,
      job_status: { pending: 0, processing: 0, completed: 7, failed: 0, cancelled: 0 },
      progress: 1,
      progress_percent: 100,
      verification_status: {
        valid: 2,
        invalid: 1,
        catchall: 1,
        invalid_syntax: 1,
        disposable_domain: 1,
        unknown: 1,
        role_based: 1,
        disposable_domain_emails: 1,
      },
      last_verification_requested_at: WORK,
      last_verification_completed_at: processedAt,
      retries: { pending: 0, next_attempt_at: null, last_attempt_at: null, settles_at: null },
      paced: [],
    });
    // 7 reserved, the one unknown refunded.
    assert.equal(await balanceOf(user), 20 - 6);
    // The list shows the same metrics as the task itself.
    const listed = (await get(user, "/api/v1/tasks")).json<{
      tasks: Array<{ id: string; metrics: unknown }>;
    }>();
    assert.deepEqual(
      listed.tasks.map((t) => [t.id, t.metrics]),
      [[created.id, task.metrics]],
    );
  });

  test("a greylisted address still pending: partial progress, finished_at null; settles after its retry", async () => {
    clock.set(WORK);
    const user = await ctx.createUser(10);
    const created = await newTask(user, ["alice@acme.test", "gina@grey.test"]);
    await drain();
    const mid = (await get(user, `/api/v1/tasks/${created.id}`)).json();
    assert.equal(mid.started_at, WORK);
    assert.equal(mid.finished_at, null);
    assert.deepEqual(mid.metrics.job_status, {
      pending: 1,
      processing: 0,
      completed: 1,
      failed: 0,
      cancelled: 0,
    });
    assert.equal(mid.metrics.progress, 0.5);
    assert.equal(mid.metrics.progress_percent, 50);
    assert.deepEqual(mid.metrics.verification_status, { ...zeroStatus, valid: 1 });
    assert.equal(
      (await transactionsOf(user, "task_unknown_refund")).length,
      0,
      "no refund before the task finishes",
    );

    // The retry an hour later is greylisted again; the schedule is exhausted, so unknown stands.
    clock.advance(HOUR);
    await drain();
    const done = (await get(user, `/api/v1/tasks/${created.id}`)).json();
    assert.equal(done.finished_at, clock.now().toISOString());
    assert.deepEqual(done.metrics.job_status, {
      pending: 0,
      processing: 0,
      completed: 2,
      failed: 0,
      cancelled: 0,
    });
    assert.equal(done.metrics.progress, 1);
    assert.deepEqual(done.metrics.verification_status, { ...zeroStatus, valid: 1, unknown: 1 });
    assert.equal(await balanceOf(user), 9);
  });

  test("an upper-case spelling of the id names the same task, with the same metrics", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(5);
    const task = await newTask(user, ["alice@acme.test", "bob@acme.test"]);
    const lower = await get(user, `/api/v1/tasks/${task.id}`);
    const upper = await get(user, `/api/v1/tasks/${task.id.toUpperCase()}`);
    assert.equal(upper.statusCode, 200, upper.body);
    assert.deepEqual(upper.json(), lower.json());
  });

  test("bad UUID → 400 naming id; unknown id → 404; another user's task → 404", async () => {
    clock.set(IDLE);
    const owner = await ctx.createUser(1);
    const other = await ctx.createUser(1);
    const task = await newTask(owner, ["alice@acme.test"]);
    assertError(await get(owner, "/api/v1/tasks/not-a-uuid"), 400, "VALIDATION_ERROR", [
      { field: "id", reason: "must be a valid uuid" },
    ]);
    assertError(await get(owner, `/api/v1/tasks/${MISSING_ID}`), 404, "NOT_FOUND");
    assertError(await get(other, `/api/v1/tasks/${task.id}`), 404, "NOT_FOUND");
    assertError(
      await ctx.app.inject({ method: "GET", url: `/api/v1/tasks/${task.id}` }),
      401,
      "UNAUTHORIZED",
    );
  });
});

describe("GET /api/v1/tasks/{id}/jobs", () => {
  test("reverse submission order, pending jobs without `email`, limit/offset/count", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(20);
    const emails = Array.from({ length: 12 }, (_, i) => `p${i}@acme.test`);
    emails[3] = "  P3@ACME.test ";
    const task = await newTask(user, emails);
    const res = await get(user, `/api/v1/tasks/${task.id}/jobs`);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual([body.count, body.limit, body.offset], [12, 10, 0]);
    const expected = emails.map((e) => e.trim().toLowerCase()).reverse();
    assert.deepEqual(
      body.jobs.map((j: { email_address: string }) => j.email_address),
      expected.slice(0, 10),
    );
    const job = body.jobs[0];
    assert.match(job.id, UUID);
    assert.deepEqual(job, {
      id: job.id,
      task_id: task.id,
      email_address: "p11@acme.test",
      status: "pending",
      attempts: 0,
      unknown_reason: null,
      next_attempt_at: IDLE,
      created_at: IDLE,
      updated_at: IDLE,
    });
    assert.ok(body.jobs.every((j: object) => !("email" in j)));
    const tail = (await get(user, `/api/v1/tasks/${task.id}/jobs?limit=5&offset=10`)).json();
    assert.deepEqual(
      tail.jobs.map((j: { email_address: string }) => j.email_address),
      expected.slice(10),
    );
    assert.deepEqual([tail.count, tail.limit, tail.offset], [12, 5, 10]);
    const all = (await get(user, `/api/v1/tasks/${task.id}/jobs?limit=100`)).json();
    assert.equal(all.jobs.length, 12);
    assert.equal(new Set(all.jobs.map((j: { id: string }) => j.id)).size, 12);
  });

  test("?status= filters by job state or by result status; count is the matching total", async () => {
    clock.set(WORK);
    const user = await ctx.createUser(10);
    const task = await newTask(user, ["alice@acme.test", "nobody@acme.test", "gina@grey.test"]);
    await drain();
    const byStatus = async (status: string) => {
      const res = await get(user, `/api/v1/tasks/${task.id}/jobs?status=${status}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<{ count: number; jobs: Array<{ email_address: string }> }>();
      assert.equal(body.count, body.jobs.length);
      return body.jobs.map((j) => j.email_address);
    };
    assert.deepEqual(await byStatus("valid"), ["alice@acme.test"]);
    assert.deepEqual(await byStatus("invalid"), ["nobody@acme.test"]);
    assert.deepEqual(await byStatus("pending"), ["gina@grey.test"]);
    assert.deepEqual(await byStatus("completed"), ["nobody@acme.test", "alice@acme.test"]);
    assert.deepEqual(await byStatus("catchall"), []);
    const bad = await get(user, `/api/v1/tasks/${task.id}/jobs?status=green`);
    assert.equal(bad.statusCode, 400);
    assert.equal(
      bad.json<{ error: { details: Array<{ field: string }> } }>().error.details[0]!.field,
      "status",
    );
  });

  test("completed jobs carry the full verification result; pending ones do not", async () => {
    clock.set(WORK);
    const user = await ctx.createUser(10);
    const task = await newTask(user, ["Alice@ACME.test", "gina@grey.test"]);
    await drain();
    const res = await get(user, `/api/v1/tasks/${task.id}/jobs`);
    assert.equal(res.statusCode, 200, res.body);
    const [grey, alice] = res.json().jobs;
    assert.deepEqual(grey, {
      id: grey.id,
      task_id: task.id,
      email_address: "gina@grey.test",
      status: "pending",
      // Greylisted once: the job says why it waits and until when.
      attempts: 1,
      unknown_reason: "greylisted",
      next_attempt_at: grey.next_attempt_at,
      created_at: WORK,
      updated_at: WORK,
    });
    assert.ok(Date.parse(grey.next_attempt_at) > Date.parse(WORK), grey.next_attempt_at);
    assert.equal(alice.status, "completed");
    assert.equal(alice.email_address, "alice@acme.test");
    assert.match(alice.email.id, UUID);
    assert.deepEqual(alice.email, {
      id: alice.email.id,
      email: "alice@acme.test",
      status: "valid",
      is_role_based: false,
      is_disposable: false,
      has_mx_records: true,
      has_reverse_dns: true,
      domain_name: "acme.test",
      host_name: "mx1.acme.test",
      server_type: "postfix",
      is_catchall: false,
      validated_at: WORK,
      unknown_reason: null,
      needs_physical_verify: false,
      did_you_mean: null,
      is_free_provider: false,
      checks: {
        syntax: { status: "passed", reason: null },
        dns: { status: "passed", reason: null },
        mx: { status: "passed", reason: "mx_records" },
        reverse_dns: { status: "passed", reason: null },
        smtp: { status: "passed", reason: "accepted" },
      },
    });
    const stored = await ctx.db.query<{ task_id: string }>(
      "select task_id from email_verifications where id = $1",
      [alice.email.id],
    );
    assert.deepEqual(stored.rows, [{ task_id: task.id }]);

    // Settle the greylisted one so nothing of this test stays due.
    clock.advance(HOUR);
    await drain();
    const [settled] = (await get(user, `/api/v1/tasks/${task.id}/jobs?limit=1`)).json().jobs;
    assert.equal(settled.status, "completed");
    assert.equal(settled.email.status, "unknown");
    assert.equal(settled.email.unknown_reason, "greylisted");
    assert.equal(settled.email.validated_at, clock.now().toISOString());
  });

  test("400 bad id / bad pagination; 404 unknown task and another user's task", async () => {
    clock.set(IDLE);
    const owner = await ctx.createUser(1);
    const other = await ctx.createUser(1);
    const task = await newTask(owner, ["alice@acme.test"]);
    assertError(await get(owner, "/api/v1/tasks/123/jobs"), 400, "VALIDATION_ERROR", [
      { field: "id", reason: "must be a valid uuid" },
    ]);
    for (const [query, details] of [
      ["limit=0", [{ field: "limit", reason: "must be >= 1" }]],
      ["limit=101", [{ field: "limit", reason: "must be <= 100" }]],
      ["limit=ten", [{ field: "limit", reason: "must be integer" }]],
      ["offset=-1", [{ field: "offset", reason: "must be >= 0" }]],
    ] as const) {
      assertError(await get(owner, `/api/v1/tasks/${task.id}/jobs?${query}`), 400, "VALIDATION_ERROR", [
        ...details,
      ]);
    }
    assertError(await get(owner, `/api/v1/tasks/${MISSING_ID}/jobs`), 404, "NOT_FOUND");
    assertError(await get(other, `/api/v1/tasks/${task.id}/jobs`), 404, "NOT_FOUND");
    assertError(
      await ctx.app.inject({ method: "GET", url: `/api/v1/tasks/${task.id}/jobs` }),
      401,
      "UNAUTHORIZED",
    );
  });
});

describe("refund of unknown results when a task finishes", () => {
  test("blocklisted RCPTs: one task_unknown_refund grant of the unknown count; charge = known results", async () => {
    clock.set(WORK);
    const user = await ctx.createUser(10);
    const task = await newTask(user, [
      "alice@acme.test",
      "bob@acme.test",
      "bob@block.test",
      "carol@block.test",
    ]);
    assert.equal(await balanceOf(user), 6);
    await drain();
    const detail = (await get(user, `/api/v1/tasks/${task.id}`)).json();
    assert.notEqual(detail.finished_at, null);
    assert.deepEqual(detail.metrics.verification_status, { ...zeroStatus, valid: 2, unknown: 2 });
    const refunds = await transactionsOf(user, "task_unknown_refund");
    assert.equal(refunds.length, 1);
    const refund = refunds[0]!;
    assert.deepEqual(
      [refund.type, refund.amount, refund.balance_after, refund.reason],
      ["grant", 2, 8, "task_unknown_refund"],
    );
    assert.deepEqual(
      [refund.metadata.source, refund.metadata.api_key_id, refund.metadata.task_id],
      ["api_key", user.apiKeyId, task.id],
    );
    assert.equal(await balanceOf(user), 10 - 2);
  });

  test("the refund carries the same API-key attribution as the reservation (api_key_purpose included)", async () => {
    clock.set(WORK);
    const user = await ctx.createUser(5);
    const task = await newTask(user, ["alice@acme.test", "bob@block.test"]);
    await drain();
    const [reservation] = await transactionsOf(user, "task_reservation");
    const [refund] = await transactionsOf(user, "task_unknown_refund");
    assert.equal(reservation!.metadata.api_key_purpose, "custom");
    assert.deepEqual(refund!.metadata, { ...reservation!.metadata, task_id: task.id });
  });

  test("connection failures: retried, then unknown; the refund comes only when the task finishes", async () => {
    clock.set(WORK);
    const user = await ctx.createUser(5);
    const task = await newTask(user, ["alice@acme.test", "dan@down.test", "dave@down.test"]);
    await drain();
    const mid = (await get(user, `/api/v1/tasks/${task.id}`)).json();
    assert.equal(mid.finished_at, null);
    assert.equal(mid.metrics.job_status.pending, 2);
    assert.equal((await transactionsOf(user, "task_unknown_refund")).length, 0);
    assert.equal(await balanceOf(user), 2);

    clock.advance(HOUR);
    await drain();
    const jobs = (await get(user, `/api/v1/tasks/${task.id}/jobs`)).json().jobs;
    assert.deepEqual(
      jobs.map((j: { email_address: string; email: { status: string; unknown_reason: string | null } }) => [
        j.email_address,
        j.email.status,
        j.email.unknown_reason,
      ]),
      [
        ["dave@down.test", "unknown", "connection_failed"],
        ["dan@down.test", "unknown", "connection_failed"],
        ["alice@acme.test", "valid", null],
      ],
    );
    const refunds = await transactionsOf(user, "task_unknown_refund");
    assert.deepEqual(
      refunds.map((r) => [r.type, r.amount, r.metadata.task_id]),
      [["grant", 2, task.id]],
    );
    assert.equal(await balanceOf(user), 5 - 1);
  });
});

describe("GET /api/v1/tasks/{id}/series", () => {
  // One task processed over two days: three results on 06-02, the greylisted one on 06-04.
  const D0 = "2025-06-02T09:00:00.000Z";
  const D2 = "2025-06-04T15:00:00.000Z";
  let owner: TestUser;
  let taskId: string;

  const seriesOf = async (who: TestUser, params: Record<string, string> = {}, id = taskId) =>
    get(who, `/api/v1/tasks/${id}/series${Object.keys(params).length ? `?${q(params)}` : ""}`);

  let midDay: Awaited<ReturnType<typeof get>>;

  before(async () => {
    clock.set(D0);
    owner = await ctx.createUser(10);
    taskId = (await newTask(owner, ["alice@acme.test", "bob@acme.test", "zed@acme.test", "gina@grey.test"]))
      .id;
    await drain();
    clock.advance(HOUR / 2);
    midDay = await seriesOf(owner, { from: "2025-06-02T00:00:00Z", to: "2025-06-03T00:00:00Z" });
    clock.set(D2);
    await drain();
  });

  test("a point counts pending jobs on their creation day and results on their validation day", async () => {
    assert.equal(midDay.statusCode, 200, midDay.body);
    assert.deepEqual(midDay.json(), {
      task_id: taskId,
      source: "api_key",
      series: [
        {
          date: "2025-06-02",
          total_email_addresses: 4,
          job_status: { pending: 1, processing: 0, completed: 3, failed: 0, cancelled: 0 },
          progress: 0.75,
          progress_percent: 75,
          verification_status: { ...zeroStatus, valid: 2, invalid: 1 },
          last_verification_requested_at: D0,
          last_verification_completed_at: D0,
          // gina was greylisted and waits for her retry, an hour after the first attempt.
          // Her retry window (60 min from the task's start at 09:00) ends then too.
          retries: {
            pending: 1,
            next_attempt_at: "2025-06-02T10:00:00.000Z",
            last_attempt_at: "2025-06-02T10:00:00.000Z",
            settles_at: "2025-06-02T10:00:00.000Z",
          },
          paced: [],
        },
        emptyPoint("2025-06-03"),
      ],
    });
    assert.equal((await get(owner, `/api/v1/tasks/${taskId}`)).json().finished_at, D2);
  });

  test("default range: the last 7 days → 7 points, today and the 6 UTC dates before it, zeros on idle days", async () => {
    clock.set("2025-06-05T08:00:00Z");
    const res = await seriesOf(owner);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.task_id, taskId);
    assert.equal(body.source, "api_key");
    assert.deepEqual(
      body.series.map((p: { date: string }) => p.date),
      ["2025-05-30", "2025-05-31", "2025-06-01", "2025-06-02", "2025-06-03", "2025-06-04", "2025-06-05"],
    );
    const byDate = new Map<string, unknown>(body.series.map((p: { date: string }) => [p.date, p]));
    for (const date of ["2025-05-30", "2025-05-31", "2025-06-01", "2025-06-03", "2025-06-05"]) {
      assert.deepEqual(byDate.get(date), emptyPoint(date));
    }
    assert.deepEqual(byDate.get("2025-06-02"), {
      date: "2025-06-02",
      total_email_addresses: 3,
      job_status: { pending: 0, processing: 0, completed: 3, failed: 0, cancelled: 0 },
      progress: 1,
      progress_percent: 100,
      verification_status: { ...zeroStatus, valid: 2, invalid: 1 },
      last_verification_requested_at: D0,
      last_verification_completed_at: D0,
      retries: { pending: 0, next_attempt_at: null, last_attempt_at: null, settles_at: null },
      paced: [],
    });
    assert.deepEqual(byDate.get("2025-06-04"), {
      date: "2025-06-04",
      total_email_addresses: 1,
      job_status: { pending: 0, processing: 0, completed: 1, failed: 0, cancelled: 0 },
      progress: 1,
      progress_percent: 100,
      verification_status: { ...zeroStatus, unknown: 1 },
      last_verification_requested_at: D0,
      last_verification_completed_at: D2,
      retries: { pending: 0, next_attempt_at: null, last_attempt_at: null, settles_at: null },
      paced: [],
    });
  });

  test("the default window ends now: a day more than 6 days back is left out", async () => {
    clock.set("2025-06-10T08:00:00Z");
    const body = (await seriesOf(owner)).json();
    assert.deepEqual(
      body.series.map((p: { date: string }) => p.date),
      ["2025-06-04", "2025-06-05", "2025-06-06", "2025-06-07", "2025-06-08", "2025-06-09", "2025-06-10"],
    );
    assert.equal(body.series[0].total_email_addresses, 1);
    assert.equal(
      body.series.filter((p: { total_email_addresses: number }) => p.total_email_addresses > 0).length,
      1,
    );
  });

  test("the default window's edges: 7 points at the first and the last instant of a UTC day", async () => {
    type Point = { date: string; total_email_addresses: number };
    const datesAt = async (now: string): Promise<Array<[string, number]>> => {
      clock.set(now);
      const body = (await seriesOf(owner)).json<{ series: Point[] }>();
      return body.series.map((p) => [p.date, p.total_email_addresses]);
    };
    const lastInstant = await datesAt("2025-06-10T23:59:59.999Z");
    assert.equal(lastInstant.length, 7);
    assert.deepEqual(lastInstant[0], ["2025-06-04", 1], "the day 6 days back counts whole");
    // Midnight starts the next day: the window moves by one whole day, 2025-06-04 leaves it.
    const midnight = await datesAt("2025-06-11T00:00:00.000Z");
    assert.deepEqual(
      midnight.map(([date]) => date),
      ["2025-06-05", "2025-06-06", "2025-06-07", "2025-06-08", "2025-06-09", "2025-06-10", "2025-06-11"],
    );
    assert.ok(midnight.every(([, n]) => n === 0));
  });

  test("from + to: a point for every UTC day of the range, offsets converted to UTC", async () => {
    clock.set("2025-07-01T00:00:00Z");
    const res = await seriesOf(owner, { from: "2025-06-01T00:00:00Z", to: "2025-06-05T00:00:00Z" });
    assert.equal(res.statusCode, 200, res.body);
    const series = res.json().series;
    assert.deepEqual(
      series.map((p: { date: string; total_email_addresses: number }) => [p.date, p.total_email_addresses]),
      [
        ["2025-06-01", 0],
        ["2025-06-02", 3],
        ["2025-06-03", 0],
        ["2025-06-04", 1],
        ["2025-06-05", 0],
      ],
    );
    // 2025-06-02T01:00+02:00 is 06-01T23:00Z; 2025-06-03T23:30-02:00 is 06-04T01:30Z.
    const shifted = (
      await seriesOf(owner, { from: "2025-06-02T01:00:00+02:00", to: "2025-06-03T23:30:00-02:00" })
    ).json().series;
    assert.deepEqual(
      shifted.map((p: { date: string; total_email_addresses: number }) => [p.date, p.total_email_addresses]),
      [
        ["2025-06-01", 0],
        ["2025-06-02", 3],
        ["2025-06-03", 0],
        ["2025-06-04", 0],
      ],
    );
  });

  test("exactly 90 days is accepted (91 points); a millisecond more is not", async () => {
    const ok = await seriesOf(owner, { from: "2025-03-06T00:00:00Z", to: "2025-06-04T00:00:00Z" });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().series.length, 91);
    assertError(
      await seriesOf(owner, { from: "2025-03-06T00:00:00Z", to: "2025-06-04T00:00:00.001Z" }),
      400,
      "VALIDATION_ERROR",
      [{ field: "to", reason: "must be at most 90 days after from" }],
    );
  });

  const badRanges: Array<[string, Record<string, string>, Array<{ field: string; reason: string }>]> = [
    [
      "only from",
      { from: "2025-06-01T00:00:00Z" },
      [{ field: "to", reason: "is required when from is given" }],
    ],
    ["only to", { to: "2025-06-01T00:00:00Z" }, [{ field: "from", reason: "is required when to is given" }]],
    [
      "reversed",
      { from: "2025-06-05T00:00:00Z", to: "2025-06-01T00:00:00Z" },
      [{ field: "to", reason: "must not be earlier than from" }],
    ],
    [
      "91 days",
      { from: "2025-03-01T00:00:00Z", to: "2025-05-31T00:00:00Z" },
      [{ field: "to", reason: "must be at most 90 days after from" }],
    ],
    [
      "unparsable from",
      { from: "2025-06-01", to: "2025-06-05T00:00:00Z" },
      [{ field: "from", reason: RFC3339_REASON }],
    ],
    [
      "both unparsable",
      { from: "last week", to: "2025-06-31T00:00:00Z" },
      [
        { field: "from", reason: RFC3339_REASON },
        { field: "to", reason: RFC3339_REASON },
      ],
    ],
  ];
  for (const [name, params, details] of badRanges) {
    test(`${name} → 400 naming the field`, async () => {
      assertError(await seriesOf(owner, params), 400, "VALIDATION_ERROR", details);
    });
  }

  test("403 FORBIDDEN for another user's task, 404 for an unknown one, 400 for a bad id, 401 without credentials", async () => {
    const stranger = await ctx.createUser(0);
    assertError(await seriesOf(stranger), 403, "FORBIDDEN");
    assertError(await seriesOf(owner, {}, MISSING_ID), 404, "NOT_FOUND");
    assertError(await seriesOf(owner, {}, "nope"), 400, "VALIDATION_ERROR", [
      { field: "id", reason: "must be a valid uuid" },
    ]);
    assertError(
      await ctx.app.inject({ method: "GET", url: `/api/v1/tasks/${taskId}/series` }),
      401,
      "UNAUTHORIZED",
    );
  });

  test("a frontend task's series says source frontend; an unprocessed task counts its jobs on the creation day", async () => {
    clock.set(IDLE);
    const user = await ctx.createUser(5);
    const task = await newTask(await jwtOf(user), ["alice@acme.test", "bob@acme.test"]);
    clock.advance(DAY);
    const body = (await seriesOf(user, {}, task.id)).json();
    assert.equal(body.source, "frontend");
    assert.equal(body.series.length, 7);
    assert.deepEqual(body.series[5], { date: IDLE.slice(0, 10), ...untouchedMetrics(2, IDLE) });
    assert.deepEqual(body.series[6], emptyPoint(clock.now().toISOString().slice(0, 10)));
  });
});
