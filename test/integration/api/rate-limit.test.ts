// Rate limiting per credential and per user (DESIGN §5 Limits), on each counter store:
// process memory, Redis (cluster with REDIS_URL) and PostgreSQL (cluster without Redis).
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test, type TestContext as NodeTestContext } from "node:test";
import { Redis } from "ioredis";
import type { RateLimitStore } from "../../../src/ratelimit/limiter.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { assertError } from "./helpers.ts";

// 2 requests/s sustained plus 1 of burst: the 4th request in the same second is refused.
const LIMITS = { RATE_LIMIT_PER_SECOND: "2", RATE_LIMIT_BURST: "3" };
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

let base: TestContext;
before(async () => {
  base = await createTestContext();
});
after(async () => {
  await base.close();
});

const balance = (c: TestContext, headers: Record<string, string>) =>
  c.app.inject({ method: "GET", url: "/api/v1/credits/balance", headers });

/**
 * The shared scenario: one key spends its allowance (3 × 200, then 429 with Retry-After); a key of
 * another user is unaffected, while another key of the same user shares the user's allowance.
 */
async function assertPerCredentialLimit(limited: TestContext): Promise<string> {
  const alice = await limited.createUser(1);
  const bob = await limited.createUser(2);
  // Created without an HTTP request so it has spent nothing.
  const aliceSecond = await limited.services.apiKeys.create(alice.userId, "second", "n8n");

  const responses = [];
  for (let i = 0; i < 4; i++) responses.push(await balance(limited, limited.bearer(alice.apiKey)));
  assert.deepEqual(
    responses.map((r) => r.statusCode),
    [200, 200, 200, 429],
  );
  const refused = responses[3]!;
  assertError(refused, 429, "RATE_LIMITED", null);
  const retryAfter = String(refused.headers["retry-after"]);
  assert.match(retryAfter, /^\d+$/, `Retry-After is integer seconds, got "${retryAfter}"`);
  assert.ok(Number(retryAfter) >= 1);

  const other = await balance(limited, limited.bearer(bob.apiKey));
  assert.equal(other.statusCode, 200, "another user's key is not limited");
  assert.deepEqual(other.json(), { user_id: bob.userId, balance: 2 });
  // Was 200 ("the limit is per credential, not per user"): N keys no longer buy N× the limit.
  const sibling = await balance(limited, limited.bearer(aliceSecond.plaintext));
  assertError(sibling, 429, "RATE_LIMITED", null);
  // The burst bucket's counter key (10 s lifetime, so it is still there for the caller to check).
  return `rl_b:key:${alice.apiKeyId}`;
}

describe("memory store (embedded)", () => {
  let limited: TestContext;
  before(async () => {
    limited = await createTestContext({ db: base.db, env: LIMITS });
  });
  after(async () => {
    await limited.close();
  });

  test("the 4th quick request of one key → 429 RATE_LIMITED with Retry-After; other users pass, sibling keys do not", async () => {
    await assertPerCredentialLimit(limited);
  });

  test("X-API-Key and Bearer with the same key share one allowance", async () => {
    const u = await limited.createUser();
    const statuses = [];
    for (const headers of [
      limited.bearer(u.apiKey),
      { "x-api-key": u.apiKey },
      limited.bearer(u.apiKey),
      { "x-api-key": u.apiKey },
    ]) {
      statuses.push((await balance(limited, headers)).statusCode);
    }
    assert.deepEqual(statuses, [200, 200, 200, 429]);
  });

  test("failed authentications are limited per client address (key guessing is throttled)", async () => {
    // A context of its own: the per-address counter must start empty.
    const guessing = await createTestContext({ db: base.db, env: LIMITS });
    try {
      const statuses = [];
      for (let i = 0; i < 4; i++)
        statuses.push((await balance(guessing, { authorization: `Bearer guess-${i}` })).statusCode);
      assert.deepEqual(statuses, [401, 401, 401, 429]);
    } finally {
      await guessing.close();
    }
  });

  test("a throttled client address gets 429 even with a correct key", async () => {
    const guessing = await createTestContext({ db: base.db, env: LIMITS });
    try {
      const u = await guessing.createUser(1);
      assert.equal((await balance(guessing, guessing.bearer(u.apiKey))).statusCode, 200, "control");
      for (let i = 0; i < 4; i++) await balance(guessing, { authorization: `Bearer guess-${i}` });
      const good = await balance(guessing, guessing.bearer(u.apiKey));
      assertError(good, 429, "RATE_LIMITED", null);
      assert.match(String(good.headers["retry-after"]), /^\d+$/);
    } finally {
      await guessing.close();
    }
  });

  test("two keys of one user share one allowance (per user), in whatever order they are used", async () => {
    const u = await limited.createUser(1);
    const second = await limited.services.apiKeys.create(u.userId, "second", "zapier");
    const statuses = [];
    for (const key of [u.apiKey, second.plaintext, u.apiKey, second.plaintext])
      statuses.push((await balance(limited, limited.bearer(key))).statusCode);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
  });

  test("a session shares its user's allowance with the user's keys", async () => {
    const u = await limited.createUser(1);
    const session = await limited.services.sessions.open(u.userId, u.apiKeyId);
    assert.ok(session);
    const statuses = [];
    for (const token of [u.apiKey, session.token, u.apiKey, session.token])
      statuses.push((await balance(limited, limited.bearer(token))).statusCode);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
  });
});

async function redisReachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port || 6379) }, () => {
      socket.end();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}

describe("shared stores (cluster mode)", () => {
  test("Redis store: per-credential limit across the cluster", async (t: NodeTestContext) => {
    if (!(await redisReachable(REDIS_URL))) {
      t.skip(`no Redis at ${REDIS_URL}`);
      return;
    }
    // Counter keys are per-credential UUIDs, so runs and parallel files never share a counter.
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const limited = await createTestContext({
      db: base.db,
      env: LIMITS,
      rateLimitStore: { kind: "redis", client } satisfies RateLimitStore,
    });
    try {
      const counterKey = await assertPerCredentialLimit(limited);
      // The counters really live in Redis (not in the in-process insurance limiter).
      assert.equal(await client.exists(counterKey), 1, `${counterKey} is stored in Redis`);
    } finally {
      await limited.close();
      await client.quit();
    }
  });

  test("PostgreSQL store: per-credential limit across the cluster", async (t: NodeTestContext) => {
    if (!process.env.TEST_DATABASE_URL) {
      t.skip("PostgreSQL store needs the PostgreSQL run (npm run test:pg)");
      return;
    }
    const pool = (base.db as unknown as { pool: unknown }).pool;
    const limited = await createTestContext({
      db: base.db,
      env: LIMITS,
      rateLimitStore: { kind: "postgres", pool } satisfies RateLimitStore,
    });
    try {
      const counterKey = await assertPerCredentialLimit(limited);
      // The counters really live in PostgreSQL (not in the in-process insurance limiter).
      const { rows } = await base.db.query<{ points: number }>(
        "select points from rate_limits where key = $1",
        [counterKey],
      );
      // The burst bucket counts the allowed 3rd request and the refused 4th.
      assert.equal(rows[0]?.points, 2, `${counterKey} is counted in rate_limits`);
    } finally {
      await limited.close();
    }
  });
});
