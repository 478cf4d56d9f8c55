// The credits ledger core (src/credits/ledger.ts) on the real test database: signed amounts, exact
// running balances, no overdraft, idempotency keys, and all of it under concurrency.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  deductCredits,
  grantCredits,
  refundCredits,
  type LedgerEntry,
  type LedgerOutcome,
} from "../../../src/credits/ledger.ts";
import type { Database } from "../../../src/db/client.ts";
import { findUser, insertUser } from "../../../src/db/queries/users.ts";
import { newId } from "../../../src/lib/ids.ts";
import { openTestDatabase } from "../../support/test-db.ts";

let db: Database;
before(async () => {
  db = await openTestDatabase();
});
after(async () => {
  await db.close();
});

const AT = new Date("2026-02-01T10:00:00.000Z");

/** A fresh user (no truncation between tests), optionally funded through the ledger itself. */
async function newUser(balance = 0): Promise<string> {
  const id = newId();
  await insertUser(db, { id, email: null, webhookSecret: "whsec_test", at: AT });
  if (balance > 0) assert.equal((await grant({ userId: id, amount: balance })).kind, "applied");
  return id;
}

const entry = (e: Partial<LedgerEntry> & { userId: string; amount: number }): LedgerEntry => ({
  reason: "test",
  metadata: {},
  at: AT,
  ...e,
});

const grant = (e: Partial<LedgerEntry> & { userId: string; amount: number }): Promise<LedgerOutcome> =>
  db.transaction((tx) => grantCredits(tx, entry(e)));
const deduct = (e: Partial<LedgerEntry> & { userId: string; amount: number }): Promise<LedgerOutcome> =>
  db.transaction((tx) => deductCredits(tx, entry(e)));

interface Row {
  id: string;
  type: string;
  amount: number;
  balance_after: number;
  reason: string | null;
  metadata: Record<string, unknown>;
  idempotency_key: string | null;
}

async function rowsOf(userId: string): Promise<Row[]> {
  const { rows } = await db.query<Row>(
    `select id, type, amount::int as amount, balance_after::int as balance_after, reason, metadata, idempotency_key
       from credit_transactions where user_id = $1 order by balance_after, id`,
    [userId],
  );
  return rows;
}

async function balanceOf(userId: string): Promise<number> {
  return (await findUser(db, userId))!.balance;
}

/** The ledger invariant: the stored balance is the sum of the signed amounts. */
async function assertBalanceIsSum(userId: string): Promise<void> {
  const sum = (await rowsOf(userId)).reduce((s, r) => s + r.amount, 0);
  assert.equal(await balanceOf(userId), sum, "balance == sum(amount)");
}

function applied(outcome: LedgerOutcome) {
  assert.equal(outcome.kind, "applied", JSON.stringify(outcome));
  return outcome.transaction;
}

describe("grant and deduct", () => {
  test("a grant writes a positive `grant` row with the exact running balance, reason and metadata", async () => {
    const userId = await newUser();
    const metadata = { source: "frontend" as const, task_id: newId(), nested: { a: [1, 2] } };
    const t = applied(await grant({ userId, amount: 40, reason: "top-up", metadata }));
    assert.equal(t.userId, userId);
    assert.equal(t.type, "grant");
    assert.equal(t.amount, 40);
    assert.equal(t.balanceAfter, 40);
    assert.equal(t.reason, "top-up");
    assert.deepEqual(t.metadata, metadata);
    assert.equal(t.idempotencyKey, null);
    assert.equal(t.createdAt.toISOString(), AT.toISOString());
    assert.equal(await balanceOf(userId), 40);
    assert.deepEqual(await rowsOf(userId), [
      {
        id: t.id,
        type: "grant",
        amount: 40,
        balance_after: 40,
        reason: "top-up",
        metadata,
        idempotency_key: null,
      },
    ]);
  });

  test("a deduction writes a negative `deduction` row; balances chain exactly", async () => {
    const userId = await newUser(10);
    const d1 = applied(
      await deduct({ userId, amount: 3, reason: "verify", metadata: { source: "api_key", api_key_id: "k" } }),
    );
    assert.equal(d1.type, "deduction");
    assert.equal(d1.amount, -3);
    assert.equal(d1.balanceAfter, 7);
    assert.deepEqual(d1.metadata, { source: "api_key", api_key_id: "k" });
    const g = applied(await refundCredits(db, entry({ userId, amount: 2, reason: "task_unknown_refund" })));
    assert.equal(g.type, "grant");
    assert.equal(g.balanceAfter, 9);
    const d2 = applied(await deduct({ userId, amount: 9 }));
    assert.equal(d2.balanceAfter, 0, "a deduction may take the balance exactly to zero");
    assert.deepEqual(
      (await rowsOf(userId))
        .map((r) => [r.type, r.amount, r.balance_after])
        .sort((a, b) => Number(b[2]) - Number(a[2])),
      [
        ["grant", 10, 10],
        ["grant", 2, 9],
        ["deduction", -3, 7],
        ["deduction", -9, 0],
      ],
    );
    await assertBalanceIsSum(userId);
  });

  test("a deduction beyond the balance → insufficient, and nothing is written", async () => {
    const userId = await newUser(5);
    const before = await rowsOf(userId);
    assert.deepEqual(await deduct({ userId, amount: 6 }), { kind: "insufficient", balance: 5 });
    assert.deepEqual(await rowsOf(userId), before);
    assert.equal(await balanceOf(userId), 5);
  });

  test("an unknown user → user_not_found, and nothing is written", async () => {
    const userId = newId();
    assert.deepEqual(await grant({ userId, amount: 1 }), { kind: "user_not_found" });
    assert.deepEqual(await deduct({ userId, amount: 1 }), { kind: "user_not_found" });
    assert.deepEqual(await rowsOf(userId), []);
  });

  for (const amount of [0, -5, 1.5, Number.NaN]) {
    test(`amount ${amount} is a programming error (RangeError), nothing is written`, async () => {
      const userId = await newUser(5);
      await assert.rejects(grant({ userId, amount }), RangeError);
      await assert.rejects(deduct({ userId, amount }), RangeError);
      assert.equal((await rowsOf(userId)).length, 1);
      assert.equal(await balanceOf(userId), 5);
    });
  }

  test("a ledger write rolls back with the caller's transaction", async () => {
    const userId = await newUser(8);
    await assert.rejects(
      db.transaction(async (tx) => {
        applied(await deductCredits(tx, entry({ userId, amount: 8 })));
        throw new Error("the task insert failed");
      }),
      /the task insert failed/,
    );
    assert.equal(await balanceOf(userId), 8);
    assert.equal((await rowsOf(userId)).length, 1);
  });
});

describe("idempotency keys", () => {
  test("a replayed deduction returns the first row and writes nothing", async () => {
    const userId = await newUser(10);
    const first = applied(
      await deduct({ userId, amount: 4, idempotencyKey: "charge:job-1", metadata: { n: 1 } }),
    );
    assert.equal(first.idempotencyKey, "charge:job-1");
    // Even with different figures: the key, not the payload, identifies the movement.
    const again = await deduct({ userId, amount: 7, idempotencyKey: "charge:job-1", metadata: { n: 2 } });
    assert.equal(again.kind, "replayed");
    assert.deepEqual(again.transaction, first);
    assert.equal(await balanceOf(userId), 6);
    assert.equal((await rowsOf(userId)).length, 2);
  });

  test("a replayed grant writes nothing either", async () => {
    const userId = await newUser();
    const first = applied(await grant({ userId, amount: 3, idempotencyKey: "refund:task-1" }));
    const again = await grant({ userId, amount: 3, idempotencyKey: "refund:task-1" });
    assert.deepEqual(again, { kind: "replayed", transaction: first });
    assert.equal(await balanceOf(userId), 3);
    assert.equal((await rowsOf(userId)).length, 1);
  });

  test("a replay is answered even when the balance could no longer pay", async () => {
    const userId = await newUser(5);
    const first = applied(await deduct({ userId, amount: 5, idempotencyKey: "reserve:task-9" }));
    assert.deepEqual(await deduct({ userId, amount: 5, idempotencyKey: "reserve:task-9" }), {
      kind: "replayed",
      transaction: first,
    });
    assert.equal(await balanceOf(userId), 0);
  });

  test("the same key for two users is two movements", async () => {
    const a = await newUser(5);
    const b = await newUser(5);
    applied(await deduct({ userId: a, amount: 1, idempotencyKey: "shared-key" }));
    applied(await deduct({ userId: b, amount: 1, idempotencyKey: "shared-key" }));
    assert.equal(await balanceOf(a), 4);
    assert.equal(await balanceOf(b), 4);
  });
});

describe("concurrency", () => {
  test("50 concurrent deductions of 1 against 20 credits: exactly 20 succeed, never negative", async () => {
    const userId = await newUser(20);
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        deduct({ userId, amount: 1, reason: `spend ${i}`, at: new Date() }),
      ),
    );
    const kinds = outcomes.map((o) => o.kind);
    assert.equal(kinds.filter((k) => k === "applied").length, 20);
    assert.equal(kinds.filter((k) => k === "insufficient").length, 30);
    assert.deepEqual(new Set(kinds), new Set(["applied", "insufficient"]));
    for (const o of outcomes)
      if (o.kind === "insufficient") assert.equal(o.balance, 0, "refused only once the balance is gone");

    assert.equal(await balanceOf(userId), 0);
    const deductions = (await rowsOf(userId)).filter((r) => r.type === "deduction");
    assert.equal(deductions.length, 20);
    // Serialised, not lost: every intermediate balance 19..0 appears exactly once.
    assert.deepEqual(
      deductions.map((r) => r.balance_after).sort((a, b) => a - b),
      Array.from({ length: 20 }, (_, i) => i),
    );
    for (const r of deductions) assert.equal(r.amount, -1);
    await assertBalanceIsSum(userId);
  });

  test("20 concurrent deductions with the same idempotency key: exactly one row", async () => {
    const userId = await newUser(100);
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () =>
        deduct({ userId, amount: 5, idempotencyKey: "reserve:task-42", at: new Date() }),
      ),
    );
    assert.equal(outcomes.filter((o) => o.kind === "applied").length, 1);
    assert.equal(outcomes.filter((o) => o.kind === "replayed").length, 19);
    const ids = new Set(
      outcomes.map((o) => (o.kind === "applied" || o.kind === "replayed" ? o.transaction.id : null)),
    );
    assert.equal(ids.size, 1, "every caller sees the same transaction");
    const { rows } = await db.query<{ n: number }>(
      "select count(*)::int as n from credit_transactions where user_id = $1 and idempotency_key = $2",
      [userId, "reserve:task-42"],
    );
    assert.equal(rows[0]!.n, 1);
    assert.equal(await balanceOf(userId), 95);
    await assertBalanceIsSum(userId);
  });

  test("concurrent grants and deductions keep balance == sum(amount)", async () => {
    const userId = await newUser(10);
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 2 === 0
          ? grant({ userId, amount: 2, at: new Date() })
          : deduct({ userId, amount: 3, at: new Date() }),
      ),
    );
    assert.ok(outcomes.every((o) => o.kind === "applied" || o.kind === "insufficient"));
    const rows = await rowsOf(userId);
    assert.equal(rows.length, 1 + outcomes.filter((o) => o.kind === "applied").length);
    for (const r of rows) assert.ok(r.balance_after >= 0);
    await assertBalanceIsSum(userId);
  });
});
