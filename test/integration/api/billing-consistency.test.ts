// One billing and syntax rule across realtime, JSON tasks and
// uploads (DESIGN §5 "Syntax, one rule everywhere", "Billing units"), against the real app, a
// running worker pool and the mail-world simulator.
//
// On PostgreSQL this file works in a database of its own (as tasks/endpoints.test.ts does): its
// worker pool would otherwise claim other files' jobs, and theirs this file's.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { parse as parseCsv } from "csv-parse/sync";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import type { Database } from "../../../src/db/client.ts";
import { migrate } from "../../../src/db/migrate.ts";
import { openPostgres } from "../../../src/db/postgres.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { openTestDatabase } from "../../support/test-db.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";
import { insertVerificationRow } from "../reports/history.ts";

const HOUR = 3_600_000;

let world: MailWorld;
let ctx: TestContext;
let role: WorkerRole;
let db: Database;
let dropDb = async (): Promise<void> => {};
const clock = new ManualClock("2026-03-10T12:00:00Z");

/** PGlite: the usual per-file database. PostgreSQL: a fresh database next to TEST_DATABASE_URL's. */
async function openFileDatabase(): Promise<Database> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) {
    // The context doesn't own a database it was handed: close it here, or the process stays up.
    const lite = await openTestDatabase();
    dropDb = () => lite.close();
    return lite;
  }
  const name = `mailprobe_billing_${randomBytes(4).toString("hex")}`;
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
        mailboxes: ["alice", "bob", "carol", "dave", "erin", "fred"],
      },
    ],
  });
  db = await openFileDatabase();
  ctx = await createTestContext({ env: worldEnv(world), clock, db });
  role = createWorkerRole(ctx.services);
  role.start();
});

after(async () => {
  await role?.stop(1000);
  await ctx?.close();
  await dropDb();
  await world?.close();
});

// ---------------------------------------------------------------------------------------------
// helpers

const verify = (user: TestUser, email: string) =>
  ctx.app.inject({
    method: "POST",
    url: "/api/v1/verify",
    headers: ctx.bearer(user.apiKey),
    payload: { email },
  });

const createTask = (user: TestUser, emails: string[]) =>
  ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(user.apiKey),
    payload: { emails },
  });

function upload(user: TestUser, filename: string, data: string) {
  const boundary = `----mailprobe-test-${randomBytes(12).toString("hex")}`;
  const payload = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
        "Content-Type: application/octet-stream\r\n\r\n",
    ),
    Buffer.from(data, "utf8"),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks/batch/upload",
    headers: { ...ctx.bearer(user.apiKey), "content-type": `multipart/form-data; boundary=${boundary}` },
    payload,
  });
}

const balanceOf = async (user: TestUser): Promise<number> =>
  (await ctx.services.credits.balance(user.userId)).balance;

/** Stored verifications of (user, address). */
async function rowsOf(user: TestUser, email: string): Promise<Array<{ id: string; origin: string }>> {
  const { rows } = await db.query<{ id: string; origin: string }>(
    "select id, origin from email_verifications where user_id = $1 and email = $2 order by created_at",
    [user.userId, email],
  );
  return rows;
}

/** Per-verification (realtime) charges of the user. */
async function realtimeCharges(user: TestUser): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "select count(*)::int as n from credit_transactions where user_id = $1 and reason = 'verification'",
    [user.userId],
  );
  return rows[0]!.n;
}

async function jobStatuses(taskId: string): Promise<Record<string, string>> {
  const { rows } = await db.query<{ email_address: string; status: string }>(
    `select j.email_address, v.status from email_jobs j join email_verifications v on v.id = j.email_id
      where j.task_id = $1`,
    [taskId],
  );
  return Object.fromEntries(rows.map((r) => [r.email_address, r.status]));
}

// ---------------------------------------------------------------------------------------------

describe("a batch result is a prior charge for the realtime free-repeat window", () => {
  test("batch, then realtime of the same address within 24 h: free, answered by the batch result", async () => {
    const user = await ctx.createUser(10);
    const created = await createTask(user, ["alice@acme.test"]);
    assert.equal(created.statusCode, 201, created.body);
    await waitForTaskFinished(db, created.json<{ id: string }>().id);
    assert.equal(await balanceOf(user), 9, "the task's reservation paid for alice");
    const [batch] = await rowsOf(user, "alice@acme.test");
    assert.equal(batch?.origin, "batch");

    clock.advance(HOUR);
    const res = await verify(user, " ALICE@acme.test");
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, "valid");
    assert.equal(res.json().id, batch.id, "the stored batch result is the answer");
    assert.equal(await balanceOf(user), 9, "free repeat: not charged twice");
    assert.equal(await realtimeCharges(user), 0);
    assert.equal((await rowsOf(user, "alice@acme.test")).length, 1, "nothing new stored");

    clock.advance(24 * HOUR);
    assert.equal((await verify(user, "alice@acme.test")).statusCode, 200);
    assert.equal(await balanceOf(user), 8, "25 h after the batch result: charged again");
  });

  test("a refunded (unknown) batch result is not a prior charge", async () => {
    const user = await ctx.createUser(3);
    await insertVerificationRow(db, user.userId, {
      email: "bob@acme.test",
      status: "unknown",
      origin: "batch",
      createdAt: clock.now().toISOString(),
    });
    const res = await verify(user, "bob@acme.test");
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, "valid");
    assert.equal(await balanceOf(user), 2, "charged: the unknown batch result cost nothing");
  });

  test("a balance of 0 still answers a repeat of a billed batch result (no 402)", async () => {
    const user = await ctx.createUser(0);
    await insertVerificationRow(db, user.userId, {
      email: "carol@acme.test",
      status: "valid",
      origin: "batch",
      createdAt: clock.now().toISOString(),
    });
    clock.advance(60_000);
    const res = await verify(user, "carol@acme.test");
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(await balanceOf(user), 0);
  });
});

describe("one syntax rule for JSON tasks and uploads", () => {
  test("address-shaped but RFC-invalid → invalid_syntax job, billed; not an address → 400 / skipped row", async () => {
    const user = await ctx.createUser(20);

    const refused = await createTask(user, ["dave@acme.test", "not an address"]);
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(await balanceOf(user), 20, "a 400 writes nothing");

    const json = await createTask(user, ["dave@acme.test", "bad..dots@acme.test"]);
    assert.equal(json.statusCode, 201, json.body);
    const jsonTask = json.json<{ id: string; email_count: number }>();
    assert.equal(jsonTask.email_count, 2);
    await waitForTaskFinished(db, jsonTask.id);
    assert.deepEqual(await jobStatuses(jsonTask.id), {
      "dave@acme.test": "valid",
      "bad..dots@acme.test": "invalid_syntax",
    });
    assert.equal(await balanceOf(user), 18, "invalid_syntax is billed (spec rule 1), not refunded");

    const csv = [
      "Email,N",
      "dave@acme.test,1",
      "Bad..Dots@acme.test,2",
      "not an address,3",
      ",4",
      "DAVE@acme.test,5",
    ].join("\n");
    const res = await upload(user, "same.csv", csv);
    assert.equal(res.statusCode, 202, res.body);
    const up = res.json();
    assert.deepEqual(
      {
        email_count: up.email_count,
        submitted_count: up.submitted_count,
        unique_count: up.unique_count,
        duplicate_count: up.duplicate_count,
        skipped_count: up.skipped_count,
      },
      { email_count: 2, submitted_count: 3, unique_count: 2, duplicate_count: 1, skipped_count: 2 },
      "5 rows = 2 queued + 1 duplicate + 2 without an address",
    );
    assert.equal(
      up.message,
      "2 addresses queued for verification (1 duplicate row, 2 rows skipped: no address)",
    );
    await waitForTaskFinished(db, up.task_id);
    assert.deepEqual(await jobStatuses(up.task_id), {
      "dave@acme.test": "valid",
      "bad..dots@acme.test": "invalid_syntax",
    });
    assert.equal(await balanceOf(user), 16, "the upload bills the same two addresses");

    const status = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/batch/uploads/${up.upload_id}`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(status.json().skipped_count, 2);
    assert.equal(status.json().duplicate_count, 1);

    // Every row of the download has a status: no blank result columns.
    const dl = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${up.task_id}/download`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(dl.statusCode, 200, dl.body);
    const table: string[][] = parseCsv(dl.rawPayload, { bom: true });
    const [header, ...rows] = table;
    // The list has its own "Email" column: the result columns are prefixed (README: Downloads).
    const statusAt = header!.indexOf("mailprobe_status");
    assert.deepEqual(
      rows.map((r) => [r[1], r[statusAt]]),
      [
        ["1", "valid"],
        ["2", "invalid_syntax"],
        ["3", "skipped"],
        ["4", "skipped"],
        ["5", "valid"],
      ],
    );
  });
});

describe("submitted and unique counts", () => {
  test("a JSON task with duplicates: email_count = submitted_count 3, unique_count = credits reserved 2", async () => {
    const user = await ctx.createUser(5);
    const res = await createTask(user, ["erin@acme.test", " ERIN@acme.test", "fred@acme.test"]);
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.equal(body.submitted_count, 3);
    assert.equal(body.unique_count, 2);
    assert.equal(body.email_count, 3, "the spec's email_count: emails submitted");
    assert.equal(await balanceOf(user), 3);
    await waitForTaskFinished(db, body.id);
  });
});

describe("stored realtime results and tenants", () => {
  test("20 identical verifies: one charge, one stored row, the same record every time", async () => {
    const user = await ctx.createUser(5);
    const ids = new Set<string>();
    for (let i = 0; i < 20; i += 1) {
      const res = await verify(user, "fred@acme.test");
      assert.equal(res.statusCode, 200, res.body);
      ids.add(res.json<{ id: string }>().id);
      clock.advance(1_000);
    }
    assert.equal(ids.size, 1);
    assert.equal((await rowsOf(user, "fred@acme.test")).length, 1);
    assert.equal(await balanceOf(user), 4);
  });

  test("another tenant's result is never served: a fresh verification with this user's own time", async () => {
    const first = await ctx.createUser(2);
    const second = await ctx.createUser(2);
    const a = await verify(first, "carol@acme.test");
    assert.equal(a.statusCode, 200, a.body);
    clock.advance(10 * 60_000);
    // Asked again at the server (perhaps on a connection still open from A's session).
    const asked = (): number => world.counters("mx1.acme.test").rcptByAddress["carol@acme.test"] ?? 0;
    const before = asked();
    const b = await verify(second, "carol@acme.test");
    assert.equal(b.statusCode, 200, b.body);
    assert.equal(b.json().status, "valid");
    assert.ok(asked() > before, "verified afresh, not from A's cache");
    assert.notEqual(b.json().id, a.json().id);
    assert.equal(b.json().validated_at, clock.now().toISOString(), "B's own validation time");
    assert.notEqual(b.json().validated_at, a.json().validated_at);
    assert.equal(await balanceOf(second), 1, "B's first verification of the address is charged");
    assert.equal((await rowsOf(second, "carol@acme.test")).length, 1);
  });
});
