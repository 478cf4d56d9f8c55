// POST /api/v1/tasks?dry_run=true (DESIGN §5: dry runs price a task without creating it): the
// counts equal the real call's on the same body, nothing is written to any table, too little
// credit is a 200 with the figures (the real call's 402), and bad input gets the real call's 400.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { assertError } from "../../support/assert-error.ts";
import { waitForTaskFinished } from "../../support/batch.ts";
import { rowCounts } from "../../support/row-counts.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

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

interface DryRunReply {
  dry_run: true;
  email_count: number;
  submitted_count: number;
  unique_count: number;
  duplicate_count: number;
  domain_count: number;
  invalid_syntax_count: number;
  sandbox_count: number;
  credits_required: number;
  balance: number;
  has_enough_credits: boolean;
}

interface Call {
  body: unknown;
  key?: string | null;
  headers?: Record<string, string>;
}

function create(user: TestUser, call: Call, query = "") {
  const key = call.key === undefined ? user.apiKey : call.key;
  return ctx.app.inject({
    method: "POST",
    url: `/api/v1/tasks${query}`,
    headers: { ...(key ? ctx.bearer(key) : {}), ...call.headers },
    payload: call.body as Record<string, unknown>,
  });
}

const dryRun = (user: TestUser, call: Call) => create(user, call, "?dry_run=true");

describe("task dry run", () => {
  test("counts equal the real call's on the same body, and the dry run creates nothing", async () => {
    const user = await ctx.createUser(50);
    const before = await rowCounts(ctx.db);
    const dry = await dryRun(user, { body: { emails: EMAILS, webhook_url: "https://hooks.example.com/t" } });
    assert.equal(dry.statusCode, 200, dry.body);
    const quote = dry.json<DryRunReply>();
    assert.deepEqual(await rowCounts(ctx.db), before);
    assert.deepEqual(quote, {
      dry_run: true,
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
    const dry = await dryRun(user, { body: { emails: RUNNABLE } });
    assert.equal(dry.statusCode, 200, dry.body);
    const quote = dry.json<DryRunReply>();
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
    const dry = await dryRun(user, { body: { emails: EMAILS } });
    assert.equal(dry.statusCode, 200, dry.body);
    const quote = dry.json<DryRunReply>();
    assert.deepEqual([quote.credits_required, quote.balance, quote.has_enough_credits], [5, 4, false]);
    assertError(await create(user, { body: { emails: EMAILS } }), 402, "INSUFFICIENT_CREDITS");
    assert.deepEqual(await rowCounts(ctx.db), before);
  });

  test("a sandbox-only task costs nothing and needs no balance", async () => {
    const user = await ctx.createUser(0);
    const dry = await dryRun(user, { body: { emails: ["valid@sandbox.mailprobe.invalid"] } });
    assert.equal(dry.statusCode, 200, dry.body);
    const quote = dry.json<DryRunReply>();
    assert.deepEqual([quote.credits_required, quote.balance, quote.has_enough_credits], [0, 0, true]);
    assert.equal(
      (await create(user, { body: { emails: ["valid@sandbox.mailprobe.invalid"] } })).statusCode,
      201,
    );
  });

  test("an Idempotency-Key is neither recorded nor replayed by a dry run", async () => {
    const user = await ctx.createUser(50);
    const headers = { "idempotency-key": `dry-${randomBytes(6).toString("hex")}` };
    const before = await rowCounts(ctx.db);
    assert.equal((await dryRun(user, { body: { emails: EMAILS }, headers })).statusCode, 200);
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
      const dry = await dryRun(user, call);
      assert.ok(real.statusCode >= 400, `${name}: the real call answered ${real.statusCode}`);
      assert.equal(dry.statusCode, real.statusCode, `${name}: ${dry.body}`);
      const errorOf = (res: typeof dry) =>
        res.json<{ error: { code: string; message: string; details?: unknown } }>().error;
      const { code, message, details } = errorOf(real);
      assert.deepEqual(errorOf(dry), { code, message, ...(details ? { details } : {}) }, name);
    }
    assertError(
      await create(user, { body: { emails: ["ann@example.test"] } }, "?dry_run=maybe"),
      400,
      "VALIDATION_ERROR",
    );
    assert.deepEqual(await rowCounts(ctx.db), before);
  });

  test("integration keys may dry-run as they may create tasks (DESIGN §5 key scopes)", async () => {
    const user = await ctx.createUser(50);
    const created = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(user.apiKey),
      payload: { name: "zap", purpose: "zapier" },
    });
    assert.equal(created.statusCode, 201, created.body);
    const dry = await dryRun(user, { body: { emails: EMAILS }, key: created.json<{ key: string }>().key });
    assert.equal(dry.statusCode, 200, dry.body);
    assert.equal(dry.json<DryRunReply>().credits_required, 5);
  });
});
