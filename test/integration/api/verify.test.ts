// POST /api/v1/verify against the real app, the real test database and the mail-world simulator:
// the request rules (400s), the result fields, and the spec's five credit rules.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";

let world: MailWorld;
let ctx: TestContext;
let slowCtx: TestContext;
const clock = new ManualClock("2026-03-10T12:00:00Z");

before(async () => {
  world = await startMailWorld({
    domains: [
      {
        name: "acme.test",
        hosts: [{ name: "mx1.acme.test", kind: "postfix" }],
        mailboxes: ["alice", "bob", "info", "carol"],
      },
      { name: "grey.test", hosts: [{ name: "mx.grey.test" }], mailboxes: ["gina"], greylistSeconds: 3600 },
      { name: "slow.test", hosts: [{ name: "mx.slow.test", bannerDelayMs: 3000 }], mailboxes: ["sam"] },
    ],
  });
  const env = worldEnv(world);

  ctx = await createTestContext({ env, clock });
  slowCtx = await createTestContext({ env: { ...env, VERIFY_TIMEOUT_MS: "400" }, clock, db: ctx.db });
});

after(async () => {
  await slowCtx?.close();
  await ctx?.close();
  await world?.close();
});

async function verify(user: TestUser, email: unknown, headers: Record<string, string> = {}) {
  return ctx.app.inject({
    method: "POST",
    url: "/api/v1/verify",
    headers: { ...ctx.bearer(user.apiKey), ...headers },
    payload: { email },
  });
}

async function balanceOf(user: TestUser): Promise<number> {
  return (await ctx.services.credits.balance(user.userId)).balance;
}

async function deductions(user: TestUser) {
  const { rows } = await ctx.db.query<{
    amount: number;
    metadata: Record<string, unknown>;
    idempotency_key: string;
  }>(
    "select amount, metadata, idempotency_key from credit_transactions where user_id = $1 and type = 'deduction'",
    [user.userId],
  );
  return rows;
}

describe("request rules", () => {
  const cases: Array<[string, unknown, string]> = [
    ["missing", undefined, "is required"],
    ["a number", 123, "must be string"],
    ["empty", "", "must not be empty"],
    ["blank", "   ", "must not be empty"],
    [
      "over 320 characters",
      `${"a".repeat(64)}@${"b".repeat(252)}.test`,
      "must NOT have more than 320 characters",
    ],
    ["without @", "alice.acme.test", "must contain an @ with text on both sides"],
    ["nothing before @", "@acme.test", "must contain an @ with text on both sides"],
    ["nothing after @", "alice@", "must contain an @ with text on both sides"],
  ];
  for (const [name, email, reason] of cases) {
    test(`email ${name} → 400 VALIDATION_ERROR, nothing billed`, async () => {
      const user = await ctx.createUser(5);
      const res = await verify(user, email);
      assert.equal(res.statusCode, 400);
      const body = res.json();
      assert.equal(body.error.code, "VALIDATION_ERROR");
      assert.deepEqual(body.error.details, [{ field: "email", reason }]);
      assert.equal(await balanceOf(user), 5);
    });
  }

  test("exactly 320 characters passes the edge check (and fails RFC syntax: 200 invalid_syntax)", async () => {
    const user = await ctx.createUser(5);
    const email = `${"a".repeat(64)}@${"b".repeat(250)}.test`;
    assert.equal(email.length, 320);
    const res = await verify(user, email);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().status, "invalid_syntax");
  });

  test("an address that fails RFC rules is a billed 200 invalid_syntax", async () => {
    const user = await ctx.createUser(5);
    const res = await verify(user, "a..b@acme.test");
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().status, "invalid_syntax");
    assert.equal(await balanceOf(user), 4);
  });

  test("no credentials → 401", async () => {
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/verify",
      payload: { email: "alice@acme.test" },
    });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().error.code, "UNAUTHORIZED");
  });
});

describe("results", () => {
  test("valid mailbox: every field, a stored record id, 1 credit attributed to the key", async () => {
    const user = await ctx.createUser(3);
    const res = await verify(user, "  Alice@ACME.test ");
    assert.equal(res.statusCode, 200);
    const r = res.json();
    assert.match(r.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      { ...r, id: undefined, validated_at: undefined },
      {
        id: undefined,
        validated_at: undefined,
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
      },
    );
    assert.equal(r.validated_at, clock.now().toISOString());
    const stored = await ctx.db.query<{ id: string }>("select id from email_verifications where id = $1", [
      r.id,
    ]);
    assert.equal(stored.rows.length, 1);
    assert.equal(await balanceOf(user), 2);
    const [charge] = await deductions(user);
    assert.equal(charge!.amount, -1);
    assert.deepEqual(
      {
        source: charge!.metadata.source,
        api_key_id: charge!.metadata.api_key_id,
        purpose: charge!.metadata.api_key_purpose,
      },
      { source: "api_key", api_key_id: user.apiKeyId, purpose: "custom" },
    );
  });

  test("unknown mailbox → invalid (billed); role account flagged", async () => {
    const user = await ctx.createUser(3);
    const missing = (await verify(user, "nobody@acme.test")).json();
    assert.equal(missing.status, "invalid");
    const role = (await verify(user, "info@acme.test")).json();
    assert.equal(role.status, "valid");
    assert.equal(role.is_role_based, true);
    assert.equal(await balanceOf(user), 1);
  });

  test("a dashboard JWT attributes the charge to the frontend", async () => {
    const user = await ctx.createUser(2);
    const session = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/session",
      headers: ctx.bearer(user.apiKey),
    });
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/verify",
      headers: ctx.bearer(session.json().token),
      payload: { email: "bob@acme.test" },
    });
    assert.equal(res.statusCode, 200);
    const [charge] = await deductions(user);
    assert.deepEqual(charge!.metadata.source, "frontend");
    assert.equal(charge!.metadata.api_key_id, undefined);
  });
});

describe("credit rules", () => {
  test("rule 2: an unknown result (greylisted) costs nothing and is not cached", async () => {
    const user = await ctx.createUser(1);
    for (let i = 0; i < 2; i++) {
      const res = await verify(user, "gina@grey.test");
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().status, "unknown");
      assert.equal(res.json().unknown_reason, "greylisted");
    }
    assert.equal(await balanceOf(user), 1);
    assert.equal((await deductions(user)).length, 0);
  });

  test("rules 3 and 4: a repeat within 24 h is free and served from cache; after 24 h it is charged again", async () => {
    const user = await ctx.createUser(5);
    assert.equal((await verify(user, "carol@acme.test")).statusCode, 200);
    assert.equal(await balanceOf(user), 4);
    const connectionsBefore = world.counters("mx1.acme.test").connections;

    clock.advance(23 * 3600_000);
    const repeat = await verify(user, " CAROL@acme.test");
    assert.equal(repeat.statusCode, 200);
    assert.equal(repeat.json().status, "valid");
    assert.equal(await balanceOf(user), 4, "repeat within 24 h is free");
    assert.equal(
      world.counters("mx1.acme.test").connections,
      connectionsBefore,
      "served from cache, no SMTP",
    );

    clock.advance(2 * 3600_000);
    assert.equal((await verify(user, "carol@acme.test")).statusCode, 200);
    assert.equal(await balanceOf(user), 3, "25 h after the paid one: charged again");
  });

  test("rule 4: the result cache is per user: another user's answer is not served, and is charged", async () => {
    const first = await ctx.createUser(2);
    const second = await ctx.createUser(2);
    await verify(first, "bob@acme.test");
    const asked = (): number => world.counters("mx1.acme.test").rcptByAddress["bob@acme.test"] ?? 0;
    const before = asked();
    const res = await verify(second, "bob@acme.test");
    assert.equal(res.json().status, "valid");
    assert.ok(asked() > before, "verified afresh");
    assert.equal(await balanceOf(second), 1);
  });

  test("rule 5: 20 concurrent identical requests (distinct X-Request-IDs) charge once", async () => {
    const user = await ctx.createUser(50);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => verify(user, "alice@acme.test", { "x-request-id": `req-${i}` })),
    );
    assert.deepEqual(new Set(replies.map((r) => r.statusCode)), new Set([200]));
    const rows = await deductions(user);
    assert.equal(rows.length, 1);
    assert.match(rows[0]!.idempotency_key, /^realtime:[0-9a-f]{32}:\d+$/);
    assert.equal(await balanceOf(user), 49);
  });

  test("402 when the balance is zero, but a free repeat still answers", async () => {
    const user = await ctx.createUser(1);
    assert.equal((await verify(user, "alice@acme.test")).statusCode, 200);
    assert.equal(await balanceOf(user), 0);
    const repeat = await verify(user, "alice@acme.test");
    assert.equal(repeat.statusCode, 200);
    const other = await verify(user, "bob@acme.test");
    assert.equal(other.statusCode, 402);
    assert.equal(other.json().error.code, "INSUFFICIENT_CREDITS");
    assert.equal(await balanceOf(user), 0);
  });
});

test("408 past VERIFY_TIMEOUT_MS with the partial result, not billed", async () => {
  const user = await ctx.createUser(2);
  const res = await slowCtx.app.inject({
    method: "POST",
    url: "/api/v1/verify",
    headers: slowCtx.bearer(user.apiKey),
    payload: { email: "sam@slow.test" },
  });
  assert.equal(res.statusCode, 408);
  const body = res.json();
  assert.equal(body.error.code, "VERIFICATION_TIMEOUT");
  assert.equal(body.result.status, "unknown");
  assert.equal(body.result.unknown_reason, "timeout_smtp");
  assert.equal(body.result.has_mx_records, true);
  assert.equal(body.result.host_name, "mx.slow.test");
  assert.equal(await balanceOf(user), 2);
});
