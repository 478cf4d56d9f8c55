// The operator API: disabled without ADMIN_TOKEN, a bearer token compared in
// constant time with failed attempts limited per address, and users, grants, keys and queue
// health read from the real tables. Runs on PGlite and, with TEST_DATABASE_URL, on PostgreSQL.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { rescheduleJobs } from "../../../src/db/queries/jobs.ts";
import { claimNextGroup } from "../../../src/jobs/claim.ts";
import {
  claimWebhookDeliveries,
  insertWebhookDelivery,
  recordWebhookAttempt,
} from "../../../src/db/queries/webhook-deliveries.ts";
import { OPERATOR_MAX_FAILURES } from "../../../src/http/routes/operator.ts";
import { newId } from "../../../src/lib/ids.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { assertError } from "./helpers.ts";

const TOKEN = "operator-token-0123456789abcdef";
const operator = { authorization: `Bearer ${TOKEN}` };

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext({ env: { ADMIN_TOKEN: TOKEN } });
});
after(async () => {
  await ctx.close();
});

interface UserJson {
  user_id: string;
  email: string | null;
  balance: number;
  is_active: boolean;
  deactivated_at: string | null;
  active_keys: number;
  usage: { days: number; verifications: number; credits_charged: number };
}

const get = (url: string, headers: Record<string, string> = operator) =>
  ctx.app.inject({ method: "GET", url, headers });

async function userWithEmail(credits: number): Promise<{ userId: string; apiKey: string; email: string }> {
  const email = `op-${newId().slice(0, 8)}@Example.test`;
  const created = await ctx.services.users.create({ email, credits });
  return { userId: created.user.id, apiKey: created.apiKey.plaintext, email };
}

describe("access", () => {
  test("without ADMIN_TOKEN the API does not exist: 404 in the error envelope, even with a token", async (t) => {
    const off = await createTestContext({ db: ctx.db });
    t.after(() => off.close());
    for (const url of ["/api/v1/operator/users", "/api/v1/operator/queue"]) {
      const res = await off.app.inject({ method: "GET", url, headers: operator });
      assertError(res, 404, "NOT_FOUND");
    }
  });

  test("a short ADMIN_TOKEN is a configuration error", async () => {
    await assert.rejects(createTestContext({ db: ctx.db, env: { ADMIN_TOKEN: "short" } }), /ADMIN_TOKEN/);
  });

  test("missing or wrong token → 401; an API key is not an operator token", async () => {
    const u = await ctx.createUser(0);
    assertError(await get("/api/v1/operator/users", {}), 401, "UNAUTHORIZED");
    assertError(await get("/api/v1/operator/users", ctx.bearer(u.apiKey)), 401, "UNAUTHORIZED");
    assertError(await get("/api/v1/operator/users", ctx.bearer(TOKEN + "x")), 401, "UNAUTHORIZED");
  });

  test(`after ${OPERATOR_MAX_FAILURES} wrong tokens the address gets 429, even with the right one`, async (t) => {
    // Its own app: the failure count is per process, and the other tests share this address.
    const own = await createTestContext({ db: ctx.db, env: { ADMIN_TOKEN: TOKEN } });
    t.after(() => own.close());
    const wrong = () =>
      own.app.inject({
        method: "GET",
        url: "/api/v1/operator/queue",
        headers: own.bearer("guess-" + newId()),
      });
    for (let i = 1; i < OPERATOR_MAX_FAILURES; i++) assertError(await wrong(), 401, "UNAUTHORIZED");
    const last = await wrong();
    assertError(last, 429, "RATE_LIMITED");
    assert.ok(Number(last.headers["retry-after"]) > 60, String(last.headers["retry-after"]));
    const right = await own.app.inject({ method: "GET", url: "/api/v1/operator/queue", headers: operator });
    assertError(right, 429, "RATE_LIMITED");
    // Another address is not affected.
    const elsewhere = await own.app.inject({
      method: "GET",
      url: "/api/v1/operator/queue",
      headers: operator,
      remoteAddress: "203.0.113.9",
    });
    assert.equal(elsewhere.statusCode, 200, elsewhere.body);
  });

  test("the right token is rate limited like any credential (RATE_LIMIT_*)", async (t) => {
    const own = await createTestContext({
      db: ctx.db,
      env: { ADMIN_TOKEN: TOKEN, RATE_LIMIT_PER_SECOND: "2", RATE_LIMIT_BURST: "2" },
    });
    t.after(() => own.close());
    const codes: number[] = [];
    for (let i = 0; i < 5; i++)
      codes.push(
        (await own.app.inject({ method: "GET", url: "/api/v1/operator/queue", headers: operator }))
          .statusCode,
      );
    assert.deepEqual(codes.slice(0, 2), [200, 200]);
    assert.ok(codes.includes(429), codes.join(","));
  });
});

describe("users", () => {
  test("list finds by part of the email, case-insensitively, with balance and usage; pages are bounded", async () => {
    const u = await userWithEmail(25);
    const res = await get(`/api/v1/operator/users?email=${encodeURIComponent(u.email.toUpperCase())}`);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<{ users: UserJson[]; total: number; limit: number; offset: number }>();
    assert.equal(body.total, 1);
    assert.equal(body.users[0]!.user_id, u.userId);
    assert.equal(body.users[0]!.balance, 25);
    assert.equal(body.users[0]!.is_active, true);
    assert.equal(body.users[0]!.active_keys, 1);
    assert.deepEqual(body.users[0]!.usage, { days: 30, verifications: 0, credits_charged: 0 });
    assertError(await get("/api/v1/operator/users?limit=101"), 400, "VALIDATION_ERROR");
    const page = await get("/api/v1/operator/users?limit=1&offset=1");
    assert.equal(page.json<{ users: UserJson[] }>().users.length, 1);
  });

  test("usage counts what the user's key verified and was charged", async () => {
    const u = await userWithEmail(5);
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/verify",
      headers: ctx.bearer(u.apiKey),
      payload: { email: "someone@mailinator.com" },
    });
    assert.equal(res.statusCode, 200, res.body);
    const shown = (await get(`/api/v1/operator/users/${u.userId}`)).json<UserJson>();
    assert.equal(shown.usage.verifications, 1);
    assert.equal(shown.usage.credits_charged, 5 - shown.balance);
  });

  test("show of an unknown user → 404; a malformed id → 400", async () => {
    assertError(await get(`/api/v1/operator/users/${newId()}`), 404, "NOT_FOUND");
    assertError(await get("/api/v1/operator/users/nope"), 400, "VALIDATION_ERROR");
  });

  test("deactivate ends the user's keys and sessions and blocks new keys; idempotent", async () => {
    const u = await userWithEmail(3);
    const second = await ctx.services.apiKeys.create(u.userId, "second", "custom");
    const session = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/session",
      headers: ctx.bearer(u.apiKey),
    });
    assert.equal(session.statusCode, 200, session.body);
    const jwt = session.json<{ token: string }>().token;
    for (const credential of [u.apiKey, second.plaintext, jwt]) {
      const ok = await ctx.app.inject({
        method: "GET",
        url: "/api/v1/credits/balance",
        headers: ctx.bearer(credential),
      });
      assert.equal(ok.statusCode, 200);
    }
    assert.equal(await ctx.services.apiKeys.isActiveUser(u.userId), true);

    const res = await ctx.app.inject({
      method: "POST",
      url: `/api/v1/operator/users/${u.userId}/deactivate`,
      headers: operator,
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<{ user: UserJson; deactivated_key_ids: string[] }>();
    assert.equal(body.user.is_active, false);
    assert.equal(body.user.active_keys, 0);
    assert.equal(body.deactivated_key_ids.length, 2);

    for (const credential of [u.apiKey, second.plaintext, jwt]) {
      const refused = await ctx.app.inject({
        method: "GET",
        url: "/api/v1/credits/balance",
        headers: ctx.bearer(credential),
      });
      assertError(refused, 401, "UNAUTHORIZED");
    }
    // Sessions not opened with a key (an external JWT) are checked against the user itself.
    await new Promise((r) => setTimeout(r, 1_050));
    assert.equal(await ctx.services.apiKeys.isActiveUser(u.userId), false);
    await assert.rejects(ctx.services.apiKeys.create(u.userId, "again", "custom"), /deactivated/);

    const again = await ctx.app.inject({
      method: "POST",
      url: `/api/v1/operator/users/${u.userId}/deactivate`,
      headers: operator,
    });
    assert.equal(again.statusCode, 200);
    assert.equal(again.json<{ user: UserJson }>().user.deactivated_at, body.user.deactivated_at);
    assert.deepEqual(again.json<{ deactivated_key_ids: string[] }>().deactivated_key_ids, []);
  });
});

describe("grants", () => {
  test("one ledger row with metadata.source operator and the reason, in the balance's transaction", async () => {
    const u = await userWithEmail(10);
    const res = await ctx.app.inject({
      method: "POST",
      url: `/api/v1/operator/users/${u.userId}/grants`,
      headers: operator,
      payload: { amount: 40, reason: "  goodwill for ticket 12  " },
    });
    assert.equal(res.statusCode, 201, res.body);
    const t = res.json<{
      id: string;
      amount: number;
      balance_after: number;
      reason: string;
      metadata: object;
    }>();
    assert.equal(t.amount, 40);
    assert.equal(t.balance_after, 50);
    assert.equal(t.reason, "goodwill for ticket 12");
    assert.deepEqual(t.metadata, { source: "operator" });
    const { rows } = await ctx.db.query<{ n: number; sum: string; balance: string }>(
      `select count(*)::int as n, sum(amount)::text as sum,
              (select balance::text from users where id = $1) as balance
         from credit_transactions where user_id = $1 and metadata->>'source' = 'operator'`,
      [u.userId],
    );
    // The opening 10 credits are an operator grant too (spec rule 4).
    assert.deepEqual(rows[0], { n: 2, sum: "50", balance: "50" });
    // The ledger still sums to the balance.
    const sum = await ctx.db.query<{ s: string }>(
      "select sum(amount)::text as s from credit_transactions where user_id = $1",
      [u.userId],
    );
    assert.equal(sum.rows[0]!.s, "50");
  });

  test("refusals: blank reason, zero amount, unknown user", async () => {
    const u = await ctx.createUser(0);
    const grant = (id: string, payload: object) =>
      ctx.app.inject({
        method: "POST",
        url: `/api/v1/operator/users/${id}/grants`,
        headers: operator,
        payload,
      });
    assertError(await grant(u.userId, { amount: 1, reason: "   " }), 400, "VALIDATION_ERROR", [
      { field: "reason", reason: "must not be blank" },
    ]);
    assertError(await grant(u.userId, { amount: 0, reason: "x" }), 400, "VALIDATION_ERROR");
    assertError(await grant(newId(), { amount: 1, reason: "x" }), 404, "NOT_FOUND");
  });
});

describe("keys", () => {
  test("list and revoke a user's key; the last active key is kept", async () => {
    const u = await ctx.createUser(0);
    const extra = await ctx.services.apiKeys.create(u.userId, "extra", "zapier");
    const list = await get(`/api/v1/operator/users/${u.userId}/api-keys`);
    assert.equal(list.statusCode, 200, list.body);
    const keys = list.json<{ api_keys: Array<{ id: string; is_active: boolean; key?: string }> }>().api_keys;
    assert.deepEqual(keys.map((k) => k.id).sort(), [u.apiKeyId, extra.record.id].sort());
    assert.ok(keys.every((k) => k.key === undefined));
    const revoke = (keyId: string) =>
      ctx.app.inject({
        method: "DELETE",
        url: `/api/v1/operator/users/${u.userId}/api-keys/${keyId}`,
        headers: operator,
      });
    assert.equal((await revoke(extra.record.id)).statusCode, 204);
    const refused = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/credits/balance",
      headers: ctx.bearer(extra.plaintext),
    });
    assertError(refused, 401, "UNAUTHORIZED");
    assertError(await revoke(u.apiKeyId), 409, "CONFLICT");
    assertError(await get(`/api/v1/operator/users/${newId()}/api-keys`), 404, "NOT_FOUND");
  });
});

describe("queue health", () => {
  test("due jobs, a worker's lease, the retry backlog and a failing webhook, from a real task", async (t) => {
    // A database of its own: the figures are global.
    const q = await createTestContext({ env: { ADMIN_TOKEN: TOKEN } });
    t.after(() => q.close());
    const health = async () => {
      const res = await q.app.inject({ method: "GET", url: "/api/v1/operator/queue", headers: operator });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{
        jobs: {
          due: number;
          retry_backlog: number;
          next_retry_at: string | null;
          processing: number;
          expired_leases: number;
        };
        workers: Array<{ worker: string; jobs: number; lease_until: string; is_live: boolean }>;
        webhooks: { pending: number; retrying: number; next_attempt_at: string | null; failed_24h: number };
        failing_deliveries: Array<{
          id: string;
          attempts: number;
          last_status_code: number | null;
          status: string;
        }>;
      }>();
    };
    const empty = await health();
    assert.deepEqual(empty.jobs, {
      due: 0,
      retry_backlog: 0,
      next_retry_at: null,
      processing: 0,
      expired_leases: 0,
    });
    assert.deepEqual(empty.workers, []);

    const user = await q.createUser(10);
    const created = await q.app.inject({
      method: "POST",
      url: "/api/v1/tasks",
      headers: q.bearer(user.apiKey),
      payload: { emails: ["a@one.test", "b@one.test", "c@two.test"] },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal((await health()).jobs.due, 3);

    // A worker claims one domain's jobs (the real claim statement), then defers one of them.
    const now = new Date();
    const claimed = await claimNextGroup(q.db, {
      worker: "worker-test-1",
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
      max: 10,
    });
    assert.ok(claimed.length >= 1);
    let h = await health();
    assert.equal(h.jobs.processing, claimed.length);
    assert.equal(h.jobs.due, 3 - claimed.length);
    assert.deepEqual(h.workers, [
      {
        worker: "worker-test-1",
        jobs: claimed.length,
        lease_until: h.workers[0]!.lease_until,
        is_live: true,
      },
    ]);

    const retryAt = new Date(now.getTime() + 300_000);
    const job = claimed[0]!;
    const moved = await rescheduleJobs(
      q.db,
      [
        {
          id: job.id,
          runAfter: retryAt,
          error: "451 greylisted",
          refundAttempt: false,
          schedule: "deferred",
          result: null,
        },
      ],
      "worker-test-1",
      new Date(),
    );
    assert.equal(moved, 1);
    h = await health();
    assert.equal(h.jobs.retry_backlog, 1);
    assert.equal(h.jobs.next_retry_at, retryAt.toISOString());
    assert.equal(h.jobs.processing, claimed.length - 1);

    // A webhook delivery whose receiver answered 500: retrying, listed as failing.
    const deliveryId = newId();
    await insertWebhookDelivery(q.db, {
      id: deliveryId,
      userId: user.userId,
      taskId: created.json<{ id: string }>().id,
      eventType: "task.completed",
      url: "https://hooks.example.com/x",
      payload: {},
      at: new Date(),
    });
    const [d] = await claimWebhookDeliveries(q.db, {
      now: new Date(),
      limit: 5,
      lockedUntil: new Date(Date.now() + 60_000),
      maxPerHost: 2,
      maxPerUser: 2,
    });
    assert.equal(d?.id, deliveryId);
    await recordWebhookAttempt(q.db, {
      id: newId(),
      deliveryId,
      claimAttempts: d.attempts,
      attemptedAt: new Date(),
      finishedAt: new Date(),
      durationMs: 5,
      statusCode: 500,
      error: "HTTP 500",
      disposition: { kind: "retry", delayMs: 120_000, retryWindowMs: 3_600_000 },
    });
    h = await health();
    assert.equal(h.webhooks.pending, 1);
    assert.equal(h.webhooks.retrying, 1);
    assert.ok(h.webhooks.next_attempt_at);
    assert.deepEqual(
      h.failing_deliveries.map((f) => [f.id, f.status, f.attempts, f.last_status_code]),
      [[deliveryId, "pending", 1, 500]],
    );
  });
});
