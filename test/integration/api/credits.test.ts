// Credits over HTTP (spec GET /api/v1/credits/balance and /transactions).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { deductCredits, grantCredits, type LedgerEntry } from "../../../src/credits/ledger.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError, UUID_RE } from "./helpers.ts";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

interface TransactionReply {
  id: string;
  user_id: string;
  type: "grant" | "deduction";
  amount: number;
  balance_after: number;
  reason?: string;
  metadata?: Record<string, unknown>;
  created_at: string;
}

interface Page {
  transactions: TransactionReply[];
  total: number;
  limit: number;
  offset: number;
}

const T0 = Date.parse("2026-03-01T12:00:00.000Z");

/**
 * Writes `n` grants of 1 credit through the ledger, one second apart, so "newest first" has one
 * right answer: the k-th grant (1-based) has balance_after k.
 */
async function seedGrants(userId: string, n: number): Promise<void> {
  for (let i = 1; i <= n; i++) {
    const entry: LedgerEntry = {
      userId,
      amount: 1,
      reason: `seed ${i}`,
      metadata: { seq: i },
      at: new Date(T0 + i * 1000),
    };
    const outcome = await ctx.db.transaction((tx) => grantCredits(tx, entry));
    assert.equal(outcome.kind, "applied");
  }
}

async function page(u: TestUser, query = ""): Promise<Page> {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/credits/transactions${query}`,
    headers: ctx.bearer(u.apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<Page>();
}

describe("balance", () => {
  test("a new user without credits → 0", async () => {
    const u = await ctx.createUser(0);
    const res = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/credits/balance",
      headers: ctx.bearer(u.apiKey),
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { user_id: u.userId, balance: 0 });
  });

  test("follows the ledger: opening grant, then a deduction", async () => {
    const u = await ctx.createUser(30);
    const outcome = await ctx.db.transaction((tx) =>
      deductCredits(tx, { userId: u.userId, amount: 12, reason: "test", metadata: {}, at: new Date() }),
    );
    assert.equal(outcome.kind, "applied");
    const res = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/credits/balance",
      headers: ctx.bearer(u.apiKey),
    });
    assert.deepEqual(res.json(), { user_id: u.userId, balance: 18 });
  });
});

describe("transactions", () => {
  test("a user without movements → an empty page with the defaults", async () => {
    const u = await ctx.createUser(0);
    assert.deepEqual(await page(u), { transactions: [], total: 0, limit: 50, offset: 0 });
  });

  test("the opening grant is a transaction with the spec's fields", async () => {
    const u = await ctx.createUser(25);
    const { transactions, total } = await page(u);
    assert.equal(total, 1);
    const [t] = transactions;
    assert.match(t!.id, UUID_RE);
    assert.equal(new Date(t!.created_at).toISOString(), t!.created_at);
    assert.deepEqual(
      { ...t, id: "", created_at: "" },
      {
        id: "",
        user_id: u.userId,
        type: "grant",
        amount: 25,
        balance_after: 25,
        reason: "initial_grant",
        metadata: { source: "operator" },
        created_at: "",
      },
    );
  });

  test("a deduction is negative and carries its attribution metadata", async () => {
    const u = await ctx.createUser(10);
    const metadata = { source: "api_key" as const, api_key_id: u.apiKeyId, api_key_purpose: "custom" };
    await ctx.db.transaction((tx) =>
      deductCredits(tx, { userId: u.userId, amount: 3, reason: "verify", metadata, at: new Date() }),
    );
    const [newest] = (await page(u)).transactions;
    assert.equal(newest!.type, "deduction");
    assert.equal(newest!.amount, -3);
    assert.equal(newest!.balance_after, 7);
    assert.equal(newest!.reason, "verify");
    assert.deepEqual(newest!.metadata, metadata);
  });

  test("default limit 50, total counts everything, newest first", async () => {
    const u = await ctx.createUser(0);
    await seedGrants(u.userId, 55);
    const p = await page(u);
    assert.equal(p.limit, 50);
    assert.equal(p.offset, 0);
    assert.equal(p.total, 55);
    assert.deepEqual(
      p.transactions.map((t) => t.balance_after),
      Array.from({ length: 50 }, (_, i) => 55 - i),
    );
    const times = p.transactions.map((t) => Date.parse(t.created_at));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
    );
  });

  test("limit and offset page through without overlap or gap", async () => {
    const u = await ctx.createUser(0);
    await seedGrants(u.userId, 23);
    const seen: number[] = [];
    for (let offset = 0; offset < 23; offset += 10) {
      const p = await page(u, `?limit=10&offset=${offset}`);
      assert.equal(p.limit, 10);
      assert.equal(p.offset, offset);
      assert.equal(p.total, 23);
      assert.equal(p.transactions.length, Math.min(10, 23 - offset));
      seen.push(...p.transactions.map((t) => t.balance_after));
    }
    assert.deepEqual(
      seen,
      Array.from({ length: 23 }, (_, i) => 23 - i),
    );
    const beyond = await page(u, "?limit=10&offset=100");
    assert.deepEqual(beyond.transactions, []);
    assert.equal(beyond.total, 23);
  });

  test("the bounds 1 and 100 are accepted", async () => {
    const u = await ctx.createUser(0);
    await seedGrants(u.userId, 3);
    assert.deepEqual(
      (await page(u, "?limit=1")).transactions.map((t) => t.balance_after),
      [3],
    );
    const max = await page(u, "?limit=100");
    assert.equal(max.limit, 100);
    assert.equal(max.transactions.length, 3);
  });

  test("a user sees only their own transactions", async () => {
    const alice = await ctx.createUser(5);
    const bob = await ctx.createUser(6);
    const p = await page(alice);
    assert.equal(p.total, 1);
    assert.deepEqual(
      p.transactions.map((t) => t.user_id),
      [alice.userId],
    );
    assert.equal((await page(bob)).transactions[0]!.user_id, bob.userId);
  });

  describe("bad pagination → 400 naming the field", () => {
    for (const [query, details] of [
      ["?limit=0", [{ field: "limit", reason: "must be >= 1" }]],
      ["?limit=101", [{ field: "limit", reason: "must be <= 100" }]],
      ["?offset=-1", [{ field: "offset", reason: "must be >= 0" }]],
      ["?limit=abc", [{ field: "limit", reason: "must be integer" }]],
      ["?limit=2.5", [{ field: "limit", reason: "must be integer" }]],
      ["?offset=x", [{ field: "offset", reason: "must be integer" }]],
      [
        "?limit=0&offset=-1",
        [
          { field: "limit", reason: "must be >= 1" },
          { field: "offset", reason: "must be >= 0" },
        ],
      ],
      ["?page=2", [{ field: "page", reason: "is not allowed" }]],
    ] as const) {
      test(query, async () => {
        const u = await ctx.createUser();
        const res = await ctx.app.inject({
          method: "GET",
          url: `/api/v1/credits/transactions${query}`,
          headers: ctx.bearer(u.apiKey),
        });
        assertError(res, 400, "VALIDATION_ERROR", [...details]);
      });
    }
  });
});

describe("grant bounds", () => {
  test("a grant above 1,000,000,000 (2^53 + 1 above all) is a VALIDATION_ERROR naming amount, nothing written; the bound itself is granted", async () => {
    const user = await ctx.createUser(0);
    for (const amount of [2 ** 53 + 1, 1_000_000_001, 0, 1.5]) {
      await assert.rejects(ctx.services.credits.grant(user.userId, amount, "top-up"), (e: unknown) => {
        const error = e as { code?: string; details?: Array<{ field: string }> };
        assert.equal(error.code, "VALIDATION_ERROR", String(amount));
        assert.equal(error.details?.[0]?.field, "amount");
        return true;
      });
    }
    assert.equal((await ctx.services.credits.balance(user.userId)).balance, 0);
    await ctx.services.credits.grant(user.userId, 1_000_000_000, "top-up");
    assert.equal((await ctx.services.credits.balance(user.userId)).balance, 1_000_000_000);
  });
});
