// The batch pipeline end to end: real app, real database, real worker pool, the mail-world
// simulator. Results must match the world's ground truth, billing must be exact, and the
// per-host connection limit must hold across workers.
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { after, before, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { generateMixedWorld, startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

const big = generateMixedWorld({
  seed: 7,
  domains: 300,
  addressesPerDomain: [30, 37],
  // Greylisting and rate limits change answers over time; they have their own tests below.
  mix: { greylist: 0, rate_limit: 0 },
});
const addresses = big.addresses.slice(0, 10_000);

let world: MailWorld;
let ctx: TestContext;

before(async () => {
  world = await startMailWorld({
    ...big.spec,
    domains: [
      ...big.spec.domains,
      {
        name: "grey.test",
        hosts: [{ name: "mx.grey.test" }],
        mailboxes: ["gina", "gus"],
        greylistSeconds: 1,
      },
      // Forty domains hosted on one provider's MX: the politeness limit is per host, not per domain.
      ...Array.from({ length: 40 }, (_, i) => ({
        name: `hosted${i}.test`,
        hosts: [{ name: "mx.bighost.test" }],
        mailboxes: ["a", "b", "c"],
      })),
    ],
  });
  // Temporary failures (connection refused, SERVFAIL, drops) are retried twice, quickly, then settle;
  // unreachable hosts too (their default 30 + 120 s was most of this file's time, spent idle).
  ctx = await createTestContext({
    env: worldEnv(world, {
      VERIFY_RETRY_DELAYS: "0.05,0.05",
      VERIFY_UNREACHABLE_RETRY_DELAYS: "0.05,0.05",
      WEBHOOK_ALLOW_PRIVATE: "true",
    }),
  });
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

async function createTask(user: TestUser, emails: string[], extra: Record<string, unknown> = {}) {
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(user.apiKey),
    payload: { emails, ...extra },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: string; email_count: number; domain_count: number }>();
}

async function getTask(user: TestUser, id: string) {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/tasks/${id}`,
    headers: ctx.bearer(user.apiKey),
  });
  return res.json<{
    metrics: {
      total_email_addresses: number;
      job_status: Record<string, number>;
      progress: number;
      verification_status: Record<string, number>;
    };
  }>();
}

async function ledgerOf(user: TestUser) {
  const { rows } = await ctx.db.query<{
    type: string;
    amount: number;
    reason: string;
    metadata: Record<string, unknown>;
  }>(
    "select type, amount, reason, metadata from credit_transactions where user_id = $1 order by created_at, id",
    [user.userId],
  );
  return rows;
}

test("10,000 addresses over 300 domains: every result matches the world, refund equals the unknown count", async () => {
  const user = await ctx.createUser(10_000);
  const created = await createTask(user, addresses);
  assert.equal(created.email_count, 10_000);
  const role = createWorkerRole(ctx.services);
  role.start();
  try {
    await waitForTaskFinished(ctx.db, created.id, 240_000);
  } finally {
    await role.stop(5_000);
  }

  const expected = { valid: 0, invalid: 0, catchall: 0, invalid_syntax: 0, disposable_domain: 0, unknown: 0 };
  for (const a of addresses) expected[world.expectation(a).status]++;
  const task = await getTask(user, created.id);
  assert.equal(task.metrics.total_email_addresses, 10_000);
  assert.deepEqual(task.metrics.job_status, {
    pending: 0,
    processing: 0,
    completed: 10_000,
    failed: 0,
    cancelled: 0,
  });
  assert.equal(task.metrics.progress, 1);
  const { role_based: _r, disposable_domain_emails: _d, ...statuses } = task.metrics.verification_status;
  assert.deepEqual(statuses, expected);

  // Address by address: the stored result agrees with the ground truth.
  const { rows } = await ctx.db.query<{ email: string; status: string; unknown_reason: string | null }>(
    `select v.email, v.status, v.unknown_reason from email_jobs j join email_verifications v on v.id = j.email_id
      where j.task_id = $1`,
    [created.id],
  );
  const mismatches = rows.filter((r) => world.expectation(r.email).status !== r.status);
  assert.deepEqual(mismatches.slice(0, 5), []);

  const ledger = await ledgerOf(user);
  const reservation = ledger.filter((t) => t.reason === "task_reservation");
  const refunds = ledger.filter((t) => t.reason === "task_unknown_refund");
  assert.deepEqual(
    reservation.map((t) => t.amount),
    [-10_000],
  );
  assert.deepEqual(
    refunds.map((t) => t.amount),
    expected.unknown > 0 ? [expected.unknown] : [],
  );
  assert.equal((await ctx.services.credits.balance(user.userId)).balance, expected.unknown);
});

test("greylisted addresses are retried later and end valid", async () => {
  const user = await ctx.createUser(10);
  const created = await createTask(user, ["gina@grey.test", "gus@grey.test", "nobody@grey.test"]);
  const role = createWorkerRole(ctx.services, {});
  // The schedule must outlast the simulator's greylisting window (1 s) for the retry to pass.
  const slowRetry = await createTestContext({
    db: ctx.db,
    env: worldEnv(world, { VERIFY_RETRY_DELAYS: "1.2" }),
  });
  await role.stop(0);
  const retrying = createWorkerRole(slowRetry.services);
  retrying.start();
  try {
    await waitForTaskFinished(ctx.db, created.id, 30_000);
  } finally {
    await retrying.stop(2_000);
    await slowRetry.close();
  }
  const jobs = (
    await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${created.id}/jobs`,
      headers: ctx.bearer(user.apiKey),
    })
  ).json().jobs as Array<{ email_address: string; email: { status: string } }>;
  const byAddress = Object.fromEntries(jobs.map((j) => [j.email_address, j.email.status]));
  assert.deepEqual(byAddress, {
    "gina@grey.test": "valid",
    "gus@grey.test": "valid",
    "nobody@grey.test": "invalid",
  });
  const attempts = await ctx.db.query<{ attempts: number }>(
    "select attempts from email_jobs where task_id = $1",
    [created.id],
  );
  assert.ok(
    attempts.rows.every((r) => r.attempts === 2),
    "one greylisted attempt, one successful retry",
  );
});

test("two worker pools never exceed SMTP_MAX_CONNECTIONS_PER_HOST on a shared MX host", async () => {
  const user = await ctx.createUser(200);
  const emails = Array.from({ length: 40 }, (_, i) =>
    ["a", "b", "c"].map((l) => `${l}@hosted${i}.test`),
  ).flat();
  world.resetCounters();
  const hostCtx = await createTestContext({
    db: ctx.db,
    env: worldEnv(world, { SMTP_MAX_CONNECTIONS_PER_HOST: "2", WORKER_CONCURRENCY: "8" }),
  });
  const created = await createTask(user, emails);
  const first = createWorkerRole(hostCtx.services, { workerId: "pool-a" });
  const second = createWorkerRole(hostCtx.services, { workerId: "pool-b" });
  first.start();
  second.start();
  try {
    await waitForTaskFinished(ctx.db, created.id, 60_000);
  } finally {
    await Promise.all([first.stop(2_000), second.stop(2_000)]);
    await hostCtx.close();
  }
  const counters = world.counters("mx.bighost.test");
  // 40 domain groups on one server IP: every address asked, each group in its own transaction,
  // on no more connections than groups (a connection left idle serves the next group).
  assert.ok(
    emails.every((e) => (counters.rcptByAddress[e] ?? 0) >= 1),
    "every address asked",
  );
  assert.ok(counters.connections <= 40, `connections ${counters.connections}`);
  assert.ok(counters.maxConcurrent <= 2, `max concurrent sessions ${counters.maxConcurrent} > 2`);
  assert.ok(counters.maxConcurrent >= 1);
  const task = await getTask(user, created.id);
  assert.equal(task.metrics.verification_status.valid, 120);
});

test("a finished task with a webhook_url gets exactly one signed delivery", async () => {
  const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  const receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks/mailprobe`;
  const user = await ctx.createUser(5);
  const created = await createTask(user, ["alice@hosted1.test", "zed@hosted1.test"], { webhook_url: url });
  const role = createWorkerRole(ctx.services);
  role.start();
  try {
    await waitForTaskFinished(ctx.db, created.id, 30_000);
    for (let i = 0; i < 100 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await role.stop(2_000);
    await new Promise<void>((r) => receiver.close(() => r()));
  }
  assert.equal(received.length, 1);
  const secret = (
    await ctx.app.inject({ method: "GET", url: "/api/v1/webhooks/secret", headers: ctx.bearer(user.apiKey) })
  ).json().secret as string;
  const { headers, body } = received[0]!;
  const payload = new Webhook(secret).verify(body, {
    "webhook-id": String(headers["webhook-id"]),
    "webhook-timestamp": String(headers["webhook-timestamp"]),
    "webhook-signature": String(headers["webhook-signature"]),
  }) as {
    type: string;
    data: { task_id: string; metrics: { total_email_addresses: number; progress: number } };
  };
  assert.equal(payload.type, "task.completed");
  assert.equal(payload.data.task_id, created.id);
  assert.equal(payload.data.metrics.total_email_addresses, 2);
  assert.equal(payload.data.metrics.progress, 1);
});

test("a literal private webhook_url is refused at creation by default", async () => {
  const strict = await createTestContext({ db: ctx.db, env: worldEnv(world) });
  try {
    const user = await strict.createUser(5);
    const res = await strict.app.inject({
      method: "POST",
      url: "/api/v1/tasks",
      headers: strict.bearer(user.apiKey),
      payload: { emails: ["a@hosted1.test"], webhook_url: "http://127.0.0.1:9/hook" },
    });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.details[0].field, "webhook_url");
  } finally {
    await strict.close();
  }
});
