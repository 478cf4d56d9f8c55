// POST /api/v1/tasks/quote (DESIGN §5: a quote prices a task without creating it): the counts
// equal the real call's on the same body, nothing is written to any table, too little credit is
// a 200 with the figures (the real call's 402), bad input gets the real call's 400, and `dry_run`
// on the real call (its former way in) is a 400 naming the quote.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { assertError } from "../../support/assert-error.ts";
import { waitForTaskFinished } from "../../support/batch.ts";
import { rowCounts } from "../../support/row-counts.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import type { TaskQuote } from "../../../sdk/src/index.ts";

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext({ env: { WORKER_POLL_INTERVAL_MS: "50" } });
});

after(async () => {
  await ctx?.close();
});

// Only sandbox and RFC-invalid addresses get verified here (neither needs DNS or SMTP); the
// example.test ones are priced and created but never run.
const EMAILS = [
  "valid@sandbox.mailprobe.invalid",
  "VALID@sandbox.mailprobe.invalid",
  "invalid@sandbox.mailprobe.invalid",
  "john..doe@example.test",
  ".lead@example.test",
  "John..Doe@example.test",
  " ann@example.test ",
  "ann@EXAMPLE.test",
  "bob@other.test",
  "x y@example.test",
];
const RUNNABLE = [
  "valid@sandbox.mailprobe.invalid",
  "VALID@sandbox.mailprobe.invalid",
  "invalid@sandbox.mailprobe.invalid",
  "john..doe@example.test",
  ".lead@example.test",
  "x y@example.test",
];

/** The 200 of the quote, as the SDK types it from the document. */
type QuoteReply = TaskQuote;

interface Call {
  body: unknown;
  /** Appended to the operation's path (a query string). */
  path?: string;
  key?: string | null;
  headers?: Record<string, string>;
}

function create(user: TestUser, call: Call, path = "") {
  const key = call.key === undefined ? user.apiKey : call.key;
  return ctx.app.inject({
    method: "POST",
    url: `/api/v1/tasks${path}${call.path ?? ""}`,
    headers: { ...(key ? ctx.bearer(key) : {}), ...call.headers },
    payload: call.body as Record<string, unknown>,
  });
}

const priceOf = (user: TestUser, call: Call) => create(user, call, "/quote");

describe("task quote", () => {
  test("counts equal the real call's on the same body, and the quote creates nothing", async () => {
    const user = await ctx.createUser(50);
    const before = await rowCounts(ctx.db);
    const priced = await priceOf(user, {
      body: { emails: EMAILS, webhook_url: "https://hooks.example.com/t" },
    });
    assert.equal(priced.statusCode, 200, priced.body);
    const quote = priced.json<QuoteReply>();
    assert.deepEqual(await rowCounts(ctx.db), before);
    assert.deepEqual(quote, {
      email_count: 10,
      submitted_count: 10,
      unique_count: 7,
      duplicate_count: 3,
      domain_count: 3,
      invalid_syntax_count: 3,
      sandbox_count: 2,
      credits_required: 5,
      balance: 50,
      has_enough_credits: true,
    });

    const real = await create(user, { body: { emails: EMAILS, webhook_url: "https://hooks.example.com/t" } });
    assert.equal(real.statusCode, 201, real.body);
    const task = real.json<Record<string, unknown>>();
    for (const field of ["email_count", "submitted_count", "unique_count", "domain_count"] as const)
      assert.equal(task[field], quote[field], field);
    const { rows } = await ctx.db.query<{ amount: number }>(
      "select amount from credit_transactions where user_id = $1 and reason = 'task_reservation'",
      [user.userId],
    );
    assert.deepEqual(
      rows.map((r) => -Number(r.amount)),
      [quote.credits_required],
    );
    const after = await rowCounts(ctx.db);
    assert.equal(after.tasks, before.tasks + 1);
    assert.equal(after.email_jobs, before.email_jobs + quote.unique_count);
  });

  test("the invalid syntax count is what the task's results report", async () => {
    const user = await ctx.createUser(50);
    const priced = await priceOf(user, { body: { emails: RUNNABLE } });
    assert.equal(priced.statusCode, 200, priced.body);
    const quote = priced.json<QuoteReply>();
    assert.equal(quote.invalid_syntax_count, 3);
    assert.equal(quote.sandbox_count, 2);
    const real = await create(user, { body: { emails: RUNNABLE } });
    assert.equal(real.statusCode, 201, real.body);
    const taskId = real.json<{ id: string }>().id;
    const role = createWorkerRole(ctx.services);
    role.start();
    try {
      await waitForTaskFinished(ctx.db, taskId, 30_000);
    } finally {
      await role.stop(1000);
    }
    const done = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${taskId}`,
      headers: ctx.bearer(user.apiKey),
    });
    const metrics = done.json<{ metrics: { verification_status: { invalid_syntax: number } } }>().metrics;
    assert.equal(metrics.verification_status.invalid_syntax, quote.invalid_syntax_count);
  });

  test("too little credit: 200 with the figures, where the real call is a 402", async () => {
    const user = await ctx.createUser(4);
    const before = await rowCounts(ctx.db);
    const priced = await priceOf(user, { body: { emails: EMAILS } });
    assert.equal(priced.statusCode, 200, priced.body);
    const quote = priced.json<QuoteReply>();
    assert.deepEqual([quote.credits_required, quote.balance, quote.has_enough_credits], [5, 4, false]);
    assertError(await create(user, { body: { emails: EMAILS } }), 402, "INSUFFICIENT_CREDITS");
    assert.deepEqual(await rowCounts(ctx.db), before);
  });

  test("a sandbox-only task costs nothing and needs no balance", async () => {
    const user = await ctx.createUser(0);
    const priced = await priceOf(user, { body: { emails: ["valid@sandbox.mailprobe.invalid"] } });
    assert.equal(priced.statusCode, 200, priced.body);
    const quote = priced.json<QuoteReply>();
    assert.deepEqual([quote.credits_required, quote.balance, quote.has_enough_credits], [0, 0, true]);
    assert.equal(
      (await create(user, { body: { emails: ["valid@sandbox.mailprobe.invalid"] } })).statusCode,
      201,
    );
  });

  test("an Idempotency-Key is neither recorded nor replayed by a quote", async () => {
    const user = await ctx.createUser(50);
    const headers = { "idempotency-key": `dry-${randomBytes(6).toString("hex")}` };
    const before = await rowCounts(ctx.db);
    assert.equal((await priceOf(user, { body: { emails: EMAILS }, headers })).statusCode, 200);
    assert.deepEqual(await rowCounts(ctx.db), before);
    const first = await create(user, { body: { emails: EMAILS }, headers });
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(first.json<{ unique_count: number }>().unique_count, 7);
  });

  test("bad input gets the real call's error, and creates nothing", async () => {
    const user = await ctx.createUser(50);
    const cases: Array<[string, Call]> = [
      ["no emails", { body: { emails: [] } }],
      ["missing emails", { body: { webhook_url: "https://hooks.example.com/t" } }],
      ["not addresses", { body: { emails: ["ann@example.test", "nobody", " "] } }],
      ["too many", { body: { emails: Array.from({ length: 10_001 }, (_, i) => `u${i}@example.test`) } }],
      ["unknown property", { body: { emails: ["ann@example.test"], user_id: user.userId } }],
      ["dry_run in the body", { body: { emails: ["ann@example.test"], dry_run: true } }],
      ["unknown query parameter", { body: { emails: ["ann@example.test"] }, path: "?verbose=1" }],
      ["loopback webhook", { body: { emails: ["ann@example.test"], webhook_url: "http://10.0.0.1/h" } }],
      ["not a URL", { body: { emails: ["ann@example.test"], webhook_url: "ftp://hooks.example.com" } }],
      [
        "blank Idempotency-Key",
        { body: { emails: ["ann@example.test"] }, headers: { "idempotency-key": " " } },
      ],
      ["no credentials", { body: { emails: ["ann@example.test"] }, key: null }],
    ];
    const before = await rowCounts(ctx.db);
    for (const [name, call] of cases) {
      const real = await create(user, call);
      const priced = await priceOf(user, call);
      assert.ok(real.statusCode >= 400, `${name}: the real call answered ${real.statusCode}`);
      assert.equal(priced.statusCode, real.statusCode, `${name}: ${priced.body}`);
      const errorOf = (res: typeof priced) =>
        res.json<{ error: { code: string; message: string; details?: unknown } }>().error;
      const { code, message, details } = errorOf(real);
      assert.deepEqual(errorOf(priced), { code, message, ...(details ? { details } : {}) }, name);
    }
    assert.deepEqual(await rowCounts(ctx.db), before);
  });

  test("dry_run on POST /api/v1/tasks is a 400 naming the quote, whatever its value; nothing is created", async () => {
    const user = await ctx.createUser(50);
    const before = await rowCounts(ctx.db);
    for (const value of ["true", "false", "maybe", ""]) {
      assertError(
        await create(user, { body: { emails: EMAILS } }, `?dry_run=${value}`),
        400,
        "VALIDATION_ERROR",
        [
          {
            field: "dry_run",
            reason:
              "was replaced by POST /api/v1/tasks/quote (same request, answers the price and creates nothing)",
          },
        ],
      );
    }
    assert.deepEqual(await rowCounts(ctx.db), before);
  });

  test("a quote is rate-limited as any request: it spends the credential's allowance", async () => {
    const limited = await createTestContext({ env: { RATE_LIMIT_PER_SECOND: "1", RATE_LIMIT_BURST: "2" } });
    try {
      const user = await limited.createUser(50);
      const call = () =>
        limited.app.inject({
          method: "POST",
          url: "/api/v1/tasks/quote",
          headers: limited.bearer(user.apiKey),
          payload: { emails: ["ann@example.test"] },
        });
      const codes = [];
      for (let i = 0; i < 4; i++) codes.push((await call()).statusCode);
      assert.ok(codes.includes(429), `no 429 in ${codes.join(",")}`);
    } finally {
      await limited.close();
    }
  });

  test("integration keys may ask for a quote as they may create tasks (DESIGN §5 key scopes)", async () => {
    const user = await ctx.createUser(50);
    const created = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(user.apiKey),
      payload: { name: "zap", purpose: "zapier" },
    });
    assert.equal(created.statusCode, 201, created.body);
    const priced = await priceOf(user, {
      body: { emails: EMAILS },
      key: created.json<{ key: string }>().key,
    });
    assert.equal(priced.statusCode, 200, priced.body);
    assert.equal(priced.json<QuoteReply>().credits_required, 5);
  });
});
