// Spec rule 1: task creation's `email_count` is "emails submitted" (spec, task
// resource), every entry of `emails`; `unique_count` is the distinct count that is queued and
// billed. An upload's `email_count` ("emails queued") is not this rule: uploads/upload.test.ts.
//
// No worker runs in this file: the counts are fixed at creation, and jobs stay pending.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { assertError } from "../../support/assert-error.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

interface CreatedTask {
  id: string;
  email_count: number;
  submitted_count: number;
  unique_count: number;
  domain_count: number;
}

/** 21 distinct addresses over three domains, then the first one again in another letter case. */
const TWENTY_ONE = Array.from({ length: 21 }, (_, i) => `user${i}@count${i % 3}.test`);
const WITH_CASE_DUPLICATE = [...TWENTY_ONE, "USER0@Count0.TEST"];

function post(user: TestUser, emails: string[], path = "", headers: Record<string, string> = {}) {
  return ctx.app.inject({
    method: "POST",
    url: `/api/v1/tasks${path}`,
    headers: { ...ctx.bearer(user.apiKey), ...headers },
    payload: { emails },
  });
}

async function create(user: TestUser, emails: string[], headers: Record<string, string> = {}) {
  const res = await post(user, emails, "", headers);
  assert.equal(res.statusCode, 201, res.body);
  return res.json<CreatedTask>();
}

async function reservedFor(user: TestUser, taskId: string): Promise<number[]> {
  const { rows } = await ctx.db.query<{ amount: number }>(
    `select amount::int as amount from credit_transactions
      where user_id = $1 and reason = 'task_reservation' and metadata->>'task_id' = $2`,
    [user.userId, taskId],
  );
  return rows.map((r) => -r.amount);
}

async function jobCount(taskId: string): Promise<number> {
  const { rows } = await ctx.db.query<{ n: number }>(
    "select count(*)::int as n from email_jobs where task_id = $1",
    [taskId],
  );
  return rows[0]!.n;
}

async function balanceOf(user: TestUser): Promise<number> {
  const res = await ctx.app.inject({
    method: "GET",
    url: "/api/v1/credits/balance",
    headers: ctx.bearer(user.apiKey),
  });
  return res.json<{ balance: number }>().balance;
}

describe("rule 1: POST /api/v1/tasks email_count is the number of emails submitted", () => {
  test("22 entries with one case-duplicate: email_count 22, submitted_count 22, unique_count 21, 21 credits reserved", async () => {
    const user = await ctx.createUser(100);
    assert.equal(WITH_CASE_DUPLICATE.length, 22);
    const task = await create(user, WITH_CASE_DUPLICATE);
    assert.deepEqual(
      [task.email_count, task.submitted_count, task.unique_count, task.domain_count],
      [22, 22, 21, 3],
    );
    assert.deepEqual(await reservedFor(user, task.id), [21], "billed: the distinct addresses");
    assert.equal(await balanceOf(user), 79);
    assert.equal(await jobCount(task.id), 21, "queued once per distinct address");
  });

  test("invalid_syntax entries are emails submitted (and billed jobs); duplicates by case and surrounding spaces count as submitted", async () => {
    const user = await ctx.createUser(100);
    const emails = [
      ...TWENTY_ONE.slice(0, 5),
      "a..b@count0.test", // address-shaped, fails RFC 5321: a job whose result is invalid_syntax
      ".lead@count1.test", // the same
      "A..B@count0.test", // a case-duplicate of the first invalid one
      "  user1@count1.test ", // trimmed: a duplicate
    ];
    const task = await create(user, emails);
    assert.deepEqual(
      [task.email_count, task.submitted_count, task.unique_count],
      [9, 9, 7],
      "9 submitted; 5 valid + 2 invalid_syntax distinct addresses",
    );
    assert.deepEqual(await reservedFor(user, task.id), [7], "invalid_syntax is billed (spec rule 1)");
    assert.equal(await jobCount(task.id), 7);
  });

  test("a blank or non-address entry is not an email: 400, nothing created, so never counted", async () => {
    const user = await ctx.createUser(100);
    const before = await balanceOf(user);
    for (const bad of ["", "   ", "not an address"]) {
      assertError(await post(user, [...TWENTY_ONE, bad]), 400, "VALIDATION_ERROR");
    }
    assert.equal(await balanceOf(user), before);
    const { rows } = await ctx.db.query<{ n: number }>(
      "select count(*)::int as n from tasks where user_id = $1",
      [user.userId],
    );
    assert.equal(rows[0]!.n, 0);
  });

  test("the quote answers the same email_count as the real call", async () => {
    const user = await ctx.createUser(100);
    const priced = await post(user, WITH_CASE_DUPLICATE, "/quote");
    assert.equal(priced.statusCode, 200, priced.body);
    const quote = priced.json<CreatedTask & { credits_required: number; duplicate_count: number }>();
    assert.deepEqual(
      [quote.email_count, quote.submitted_count, quote.unique_count, quote.duplicate_count],
      [22, 22, 21, 1],
    );
    assert.equal(quote.credits_required, 21);
    const real = await create(user, WITH_CASE_DUPLICATE);
    assert.deepEqual(
      [real.email_count, real.submitted_count, real.unique_count],
      [quote.email_count, quote.submitted_count, quote.unique_count],
    );
  });

  test("an Idempotency-Key replay answers the stored counts: email_count 22 again, one reservation", async () => {
    const user = await ctx.createUser(100);
    const headers = { "idempotency-key": `count-${randomBytes(6).toString("hex")}` };
    const first = await create(user, WITH_CASE_DUPLICATE, headers);
    const again = await create(user, WITH_CASE_DUPLICATE, headers);
    assert.equal(again.id, first.id);
    assert.deepEqual([again.email_count, again.submitted_count, again.unique_count], [22, 22, 21]);
    assert.deepEqual(await reservedFor(user, first.id), [21]);
  });
});
