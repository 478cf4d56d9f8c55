// The one-statement realtime charge (src/db/queries/realtime-charge.ts) under contention on one
// user's balance row: many distinct addresses charged at once from two connection pools, as a
// user's integration does when it verifies a list one address per request. A CI run answered
// 3 of 10 such requests with 500: PostgreSQL had aborted the statement as a deadlock victim of
// its own copies (each statement locked the balance row through the update chain's newest
// version, then its UPDATE came back to the version its snapshot saw). Here: every charge
// succeeds, none is lost, the balance is the sum of the ledger and never goes below 0.
// PostgreSQL only: PGlite has one connection, so its statements never wait for each other.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import type { Database } from "../../../src/db/client.ts";
import { openPostgres } from "../../../src/db/postgres.ts";
import { chargeRealtime, type RealtimeChargeOutcome } from "../../../src/db/queries/realtime-charge.ts";
import type { VerificationRecord } from "../../../src/db/queries/verifications.ts";
import { baseResult } from "../../../src/verify/base-result.ts";
import { allSkippedAfterSyntax } from "../../../src/verify/checks.ts";
import { openTestDatabase, testDatabaseUrl } from "../../support/test-db.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

const skip = process.env.TEST_DATABASE_URL
  ? null
  : "PGlite has a single connection: its statements never wait on each other, so they cannot deadlock";

const ROUNDS = 6;
const AT_ONCE = 40;
const HOUR = 3_600_000;

let ctx: TestContext;
let second: Database;

before(async () => {
  if (skip) return;
  ctx = await createTestContext({ db: await openTestDatabase() });
  // A second pool on the same schema: two API nodes' connections.
  second = openPostgres(testDatabaseUrl(ctx.db)!, 8);
});

after(async () => {
  await second?.close();
  await ctx?.close();
  await ctx?.db.close();
});

function recordOf(userId: string, email: string, at: Date): VerificationRecord {
  return {
    ...baseResult(email, email.split("@")[1]!, at, allSkippedAfterSyntax("test")),
    status: "valid",
    id: randomUUID(),
    userId,
    evidence: null,
    origin: "realtime",
    source: "api_key",
    apiKeyId: null,
    taskId: null,
    creditTransactionId: null,
    fromCache: false,
    createdAt: at,
  };
}

function charge(db: Database, userId: string, email: string, at: Date): Promise<RealtimeChargeOutcome> {
  return chargeRealtime(db, {
    userId,
    email,
    at,
    freeRepeatWindowStart: new Date(at.getTime() - 24 * HOUR),
    transactionId: randomUUID(),
    metadata: { source: "api_key" },
    idempotencyKey: `test:${email}:${at.toISOString()}`,
    record: recordOf(userId, email, at),
    storeWhenFree: true,
  });
}

test(`${ROUNDS} rounds of ${AT_ONCE} distinct charges of one user at once, over two pools: all charged, exact`, async (t) => {
  if (skip) {
    t.skip(skip);
    return;
  }
  const credits = ROUNDS * AT_ONCE;
  const user = await ctx.createUser(credits);
  const failures: string[] = [];
  // Batch writes of the same user at the same time: their foreign-key checks share-lock the
  // user's row (FOR KEY SHARE), so the row's lockers are often several transactions at once.
  let writing = true;
  const keyShares = Array.from({ length: 4 }, async () => {
    while (writing)
      await ctx.db.transaction(async (tx) => {
        await tx.query("select 1 from users where id = $1 for key share", [user.userId]);
        await tx.query("select pg_sleep(0.002)");
      });
  });
  for (let round = 0; round < ROUNDS; round++) {
    const at = new Date();
    const outcomes = await Promise.allSettled(
      Array.from({ length: AT_ONCE }, (_, i) =>
        charge(
          i % 2 ? second : ctx.db,
          user.userId,
          `r${round.toString()}a${i.toString()}@contention.test`,
          at,
        ),
      ),
    );
    for (const o of outcomes) {
      if (o.status === "rejected") failures.push(String((o.reason as Error).message));
      else if (o.value.kind !== "charged") failures.push(o.value.kind);
    }
  }
  writing = false;
  await Promise.all(keyShares);
  assert.deepEqual(
    failures.slice(0, 5),
    [],
    `${failures.length.toString()} of ${credits.toString()} charges failed`,
  );
  const { rows } = await ctx.db.query<{ balance: number; total: number; deductions: number; stored: number }>(
    `select u.balance,
            (select sum(amount)::int from credit_transactions c where c.user_id = u.id) as total,
            (select count(*)::int from credit_transactions c where c.user_id = u.id and c.type = 'deduction') as deductions,
            (select count(*)::int from email_verifications v where v.user_id = u.id) as stored
       from users u where u.id = $1`,
    [user.userId],
  );
  assert.deepEqual(rows[0], { balance: 0, total: 0, deductions: credits, stored: credits });

  // One more, with nothing left: refused, not an error, and the balance stays at 0.
  assert.equal(
    (await charge(ctx.db, user.userId, "one-more@contention.test", new Date())).kind,
    "insufficient",
  );
});
