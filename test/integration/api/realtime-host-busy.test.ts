// A realtime request whose mail host has no free cluster-wide session slot. Right after a restart
// the slots of the process that died stay held until their lease runs out, so a verification can
// wait its whole deadline for one. Concurrent requests for one domain share a batch (micro-
// batching) that waits for the slot on behalf of all of them, from the first caller's start: a
// caller who joined later used to receive the batch's HostBusyError — a 500 — while its own
// deadline was still running. Every caller now gets the deadline path: 408 VERIFICATION_TIMEOUT
// with the partial result (`timeout_smtp`, nothing charged), or its result if a slot frees in time.
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { tryAcquireHostSlot } from "../../../src/db/queries/host-slots.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

const HOST = "mx.held.test";
let world: MailWorld;
let ctx: TestContext;

before(async () => {
  world = await startMailWorld({
    latencyMs: 5,
    domains: [{ name: "held.test", hosts: [{ name: HOST }], mailboxes: ["ann", "bob", "cat", "dan"] }],
  });
  ctx = await createTestContext({
    env: worldEnv(world, { SMTP_MAX_CONNECTIONS_PER_HOST: "1", VERIFY_TIMEOUT_MS: "1500" }),
  });
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

/** Holds the host's only slot (slots are keyed by server IP) for `holder`, as a process that died mid-session leaves it. */
async function holdSlot(holder: string): Promise<void> {
  const now = new Date();
  const slot = await tryAcquireHostSlot(ctx.db, {
    host: world.addressOf(HOST),
    slots: 1,
    holder,
    now,
    expiresAt: new Date(now.getTime() + 120_000),
  });
  assert.equal(slot, 0, "the test holds the host's slot");
}

const freeSlot = (holder: string) =>
  ctx.db.query(
    "update smtp_host_slots set holder = null, expires_at = null where host = $1 and holder = $2",
    [world.addressOf(HOST), holder],
  );

const verify = (apiKey: string, email: string) =>
  ctx.app.inject({ method: "POST", url: "/api/v1/verify", headers: ctx.bearer(apiKey), payload: { email } });

async function balanceOf(apiKey: string): Promise<number> {
  const res = await ctx.app.inject({
    method: "GET",
    url: "/api/v1/credits/balance",
    headers: ctx.bearer(apiKey),
  });
  return res.json<{ balance: number }>().balance;
}

test("the host's slot held throughout: the first caller and a later joiner both get a 408 partial result", async () => {
  await holdSlot("realtime:crashed-before-restart");
  try {
    const user = await ctx.createUser(5);
    const first = verify(user.apiKey, "ann@held.test");
    // Joins the first request's batch while that batch waits for the slot, and outlives it.
    await delay(700);
    const joiner = verify(user.apiKey, "bob@held.test");
    for (const res of [await first, await joiner]) {
      assert.equal(res.statusCode, 408, res.body);
      const body = res.json();
      assert.equal(body.error.code, "VERIFICATION_TIMEOUT");
      assert.equal(body.result.status, "unknown");
      // After the slot gate gives up, the request runs again with what is left of its deadline
      // (a few hundred ms): on a loaded machine that can end in the DNS step as well as in the
      // wait for the host. Either way it is the 408 partial result, never a 500.
      assert.match(body.result.unknown_reason, /^timeout_(smtp|dns)$/);
    }
    assert.equal(await balanceOf(user.apiKey), 5, "nothing charged");
    assert.equal(world.counters(HOST).connections, 0, "the host was never contacted");
  } finally {
    await freeSlot("realtime:crashed-before-restart");
  }
});

test("the slot frees after the first batch gave up: the later joiner gets its result", async () => {
  await holdSlot("realtime:crashed-before-restart");
  try {
    const user = await ctx.createUser(5);
    const first = verify(user.apiKey, "cat@held.test");
    await delay(700);
    const joiner = verify(user.apiKey, "dan@held.test");
    const firstRes = await first;
    assert.equal(firstRes.statusCode, 408, firstRes.body);
    // The batch the two shared has given up by now; the joiner still has about 0.7 s.
    await freeSlot("realtime:crashed-before-restart");
    const res = await joiner;
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, "valid");
    assert.equal(await balanceOf(user.apiKey), 4, "one verification charged");
  } finally {
    await freeSlot("realtime:crashed-before-restart");
  }
});
