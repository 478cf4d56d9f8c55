// Realtime verification as a hammer. A user with a balance of 1 could keep 60
// verifications in the engine at once (their results unknown, so free). Fresh verifications are
// now capped per user (VERIFY_MAX_IN_FLIGHT_PER_USER, default 10, per process): beyond the cap
// 429 RATE_LIMITED with Retry-After, in the spec's envelope. Cached answers never reach the engine
// and are not counted; a request for an address the user already has in flight shares its slot.
//
// The engine's DNS is a test port that holds every MX lookup until released, so "in flight" is a
// state the test controls, not a race against a timer.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { DnsAnswer, MxRecord } from "../../../src/verify/ports.ts";
import { assertError } from "../../support/assert-error.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

let ctx: TestContext;
/** MX lookups waiting for release, by domain. */
const held = new Map<string, () => void>();
let holding = true;

const SERVFAIL: DnsAnswer<never> = { kind: "error", code: "SERVFAIL" };

before(async () => {
  ctx = await createTestContext({
    enginePorts: {
      dns: {
        mx(domain: string): Promise<DnsAnswer<MxRecord[]>> {
          // A domain that does not exist: a definitive (cached, billed) `invalid`.
          if (domain === "gone.test") return Promise.resolve({ kind: "nxdomain" });
          if (!holding) return Promise.resolve(SERVFAIL);
          return new Promise((resolve) => held.set(domain, () => resolve(SERVFAIL)));
        },
        addresses: () => Promise.resolve({ kind: "nxdomain" }),
        reverse: () => Promise.resolve({ kind: "nxdomain" }),
      },
    },
  });
});

after(async () => {
  holding = false;
  for (const release of held.values()) release();
  await ctx?.close();
});

const verify = (user: TestUser, email: string) =>
  ctx.app.inject({
    method: "POST",
    url: "/api/v1/verify",
    headers: ctx.bearer(user.apiKey),
    payload: { email },
  });

/** Waits (without a deadline of its own: the test's timeout is the bound) until `n` lookups are held. */
async function heldCount(n: number): Promise<void> {
  while (held.size < n) await new Promise((resolve) => setImmediate(resolve));
}

void test("a user with balance 1 and 60 concurrent fresh verifications: 10 run, 50 get 429 RATE_LIMITED", async () => {
  assert.equal(ctx.config.verify.maxInFlightPerUser, 10);
  const user = await ctx.createUser(2);
  // A definitive answer first (charged: the balance is then 1), so that it is in the cache.
  const gone = await verify(user, "x@gone.test");
  assert.equal(gone.statusCode, 200, gone.body);
  assert.equal(gone.json().status, "invalid");
  assert.equal((await ctx.services.credits.balance(user.userId)).balance, 1);

  const running = Array.from({ length: 10 }, (_, i) => verify(user, `u${String(i)}@d${String(i)}.test`));
  await heldCount(10);

  const refused = await Promise.all(
    Array.from({ length: 50 }, (_, i) => verify(user, `v${String(i)}@e${String(i)}.test`)),
  );
  for (const res of refused) {
    const error = assertError(res, 429, "RATE_LIMITED", null);
    assert.match(error.message, /at most 10 addresses per account at once \(VERIFY_MAX_IN_FLIGHT_PER_USER\)/);
    assert.equal(res.headers["retry-after"], "1");
  }
  assert.equal(held.size, 10, "no refused request reached the engine");

  // Not counted: a cached answer, the same address again (it shares the slot), another user.
  const cached = await verify(user, "X@gone.test");
  assert.equal(cached.statusCode, 200, cached.body);
  assert.equal(cached.json().status, "invalid");
  const again = verify(user, "u0@d0.test");
  const other = await ctx.createUser(1);
  const otherRequest = verify(other, "w@f.test");
  await heldCount(11);

  holding = false;
  for (const release of held.values()) release();
  held.clear();
  const answered = await Promise.all([...running, again, otherRequest]);
  for (const res of answered) {
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, "unknown");
  }
  // Unknown results are free: the balance is still 1, and the slots are free again.
  assert.equal((await ctx.services.credits.balance(user.userId)).balance, 1);
  const next = await verify(user, "later@d0.test");
  assert.equal(next.statusCode, 200, next.body);
  holding = true;
});

void test("a slot is freed when the verification fails or times out, not only when it succeeds", async () => {
  const user = await ctx.createUser(1);
  const first = Array.from({ length: 10 }, (_, i) => verify(user, `t${String(i)}@g${String(i)}.test`));
  await heldCount(10);
  assertError(await verify(user, "one-more@h.test"), 429, "RATE_LIMITED", null);
  holding = false;
  for (const release of held.values()) release();
  held.clear();
  await Promise.all(first);
  const again = await Promise.all(
    Array.from({ length: 10 }, (_, i) => verify(user, `s${String(i)}@g${String(i)}.test`)),
  );
  assert.deepEqual(new Set(again.map((r) => r.statusCode)), new Set([200]));
  holding = true;
});
