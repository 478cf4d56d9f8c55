// One-time sign-in links. A `custom` key mints one (POST /api/v1/auth/sign-in-links);
// redeeming it (POST /api/v1/auth/sign-in-links/redeem, no credentials) opens a session of that key,
// once, within 15 minutes, only while the key is active; the session dies with the key. Integration
// keys and sessions cannot mint. Only the token's hash is stored. Time is the test's ManualClock.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { decodeJwt } from "jose";
import { consumeSignInLink } from "../../../src/db/queries/sign-in-links.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError, describeAuthMatrix } from "./helpers.ts";

const NOW = "2026-03-02T08:00:00.000Z";
const MINUTE = 60_000;

interface LinkBody {
  url: string;
  token: string;
  expires_at: string;
  user_id: string;
  api_key_id: string;
}

let ctx: TestContext;
let clock: ManualClock;
before(async () => {
  clock = new ManualClock(NOW);
  ctx = await createTestContext({ clock });
});
after(async () => {
  await ctx.close();
});

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const mintWith = (credential: string) =>
  ctx.app.inject({ method: "POST", url: "/api/v1/auth/sign-in-links", headers: ctx.bearer(credential) });
const redeem = (payload: unknown) =>
  ctx.app.inject({ method: "POST", url: "/api/v1/auth/sign-in-links/redeem", payload: payload as object });
const balance = (token: string) =>
  ctx.app.inject({ method: "GET", url: "/api/v1/credits/balance", headers: ctx.bearer(token) });

async function mint(credential: string): Promise<LinkBody> {
  const res = await mintWith(credential);
  assert.equal(res.statusCode, 201, res.body);
  return res.json<LinkBody>();
}

async function newKey(u: TestUser, purpose: string): Promise<{ id: string; key: string }> {
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/api-keys",
    headers: ctx.bearer(u.apiKey),
    payload: { name: `${purpose} key`, purpose },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: string; key: string }>();
}

describe("minting", () => {
  test("a custom key mints a link tied to itself: 15 minutes, the token in the URL fragment, only its hash stored", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const link = await mint(u.apiKey);
    assert.match(link.token, /^mpl_[0-9A-Za-z]{40}$/);
    assert.equal(link.url, `http://localhost:80/#/sign-in?link=${link.token}`);
    assert.equal(link.expires_at, "2026-03-02T08:15:00.000Z");
    assert.deepEqual([link.user_id, link.api_key_id], [u.userId, u.apiKeyId]);
    const { rows } = await ctx.db.query<{ token_hash: string }>(
      "select token_hash from sign_in_links where user_id = $1",
      [u.userId],
    );
    assert.deepEqual(
      rows.map((r) => r.token_hash),
      [sha256(link.token)],
      "the hash, never the token",
    );
  });

  test("integration keys and sessions cannot mint (403); a session must not mint its successor", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const zapier = await newKey(u, "zapier");
    assertError(await mintWith(zapier.key), 403, "FORBIDDEN", null);
    const session = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/session",
      headers: ctx.bearer(u.apiKey),
    });
    assert.equal(session.statusCode, 200, session.body);
    const res = await mintWith(session.json<{ token: string }>().token);
    assert.match(assertError(res, 403, "FORBIDDEN", null).message, /session cannot mint its successor/);
  });

  test("the operator's mint: the user's newest custom key by default; a named key must be the user's, active and custom", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const other = await ctx.createUser();
    // Apart in time: "newest" is by creation time.
    clock.advance(1_000);
    const laptop = await newKey(u, "custom");
    clock.advance(1_000);
    const zapier = await newKey(u, "zapier");
    const links = ctx.services.signInLinks;
    assert.equal(
      (await links.mint(u.userId, null)).apiKeyId,
      laptop.id,
      "newest custom key, not the zapier one",
    );
    assert.equal((await links.mint(u.userId, u.apiKeyId)).apiKeyId, u.apiKeyId);
    const refusal = async (keyId: string, code: string) =>
      assert.rejects(links.mint(u.userId, keyId), (e: { code?: string }) => e.code === code);
    await refusal(zapier.id, "FORBIDDEN");
    await refusal(other.apiKeyId, "NOT_FOUND");
    await ctx.services.apiKeys.deactivate(u.userId, laptop.id);
    await refusal(laptop.id, "CONFLICT");
    assert.equal((await links.mint(u.userId, null)).apiKeyId, u.apiKeyId, "the revoked key is passed over");
  });

  describeAuthMatrix(() => ctx, [{ method: "POST", url: "/api/v1/auth/sign-in-links" }]);
});

describe("redeeming", () => {
  test("a link opens a session of its key, once: the second use is refused", async () => {
    clock.set(NOW);
    const u = await ctx.createUser(4);
    const link = await mint(u.apiKey);
    const res = await redeem({ token: link.token });
    assert.equal(res.statusCode, 200, res.body);
    const session = res.json<{ token: string; user_id: string; renewable_until: string }>();
    assert.equal(session.user_id, u.userId);
    assert.equal(
      session.renewable_until,
      "2026-03-02T20:00:00.000Z",
      "a fresh sign-in: the cap counts from now",
    );
    const claims = decodeJwt(session.token);
    assert.equal(claims.api_key_id, u.apiKeyId);
    assert.equal(claims.auth_time, Date.parse(NOW) / 1000);
    assert.deepEqual((await balance(session.token)).json(), { user_id: u.userId, balance: 4 });

    const again = assertError(await redeem({ token: link.token }), 401, "UNAUTHORIZED", null);
    assert.match(again.message, /invalid, already used, expired, or its API key was revoked/);
  });

  test("a link expires 15 minutes after it was minted", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const early = await mint(u.apiKey);
    const late = await mint(u.apiKey);
    clock.advance(15 * MINUTE - 1_000);
    assert.equal((await redeem({ token: early.token })).statusCode, 200, "14:59 after: still good");
    clock.advance(1_000);
    assertError(await redeem({ token: late.token }), 401, "UNAUTHORIZED", null);
  });

  test("two concurrent uses of one link: exactly one session is opened", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const link = await mint(u.apiKey);
    const answers = await Promise.all(Array.from({ length: 6 }, () => redeem({ token: link.token })));
    const codes = answers.map((a) => a.statusCode).sort();
    assert.deepEqual(codes, [200, 401, 401, 401, 401, 401]);
    const { rows } = await ctx.db.query<{ n: number }>(
      "select count(*)::int as n from sessions where user_id = $1",
      [u.userId],
    );
    assert.equal(rows[0]!.n, 1, "one session row");
  });

  test("the consuming statement itself: of concurrent consumers exactly one gets the link", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const link = await mint(u.apiKey);
    const got = await Promise.all(
      Array.from({ length: 4 }, () => consumeSignInLink(ctx.db, sha256(link.token), clock.now())),
    );
    assert.equal(got.filter((g) => g !== null).length, 1);
  });

  test("revoking the key refuses its links and ends the session a link opened", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const laptop = await newKey(u, "custom");
    const unused = await mint(laptop.key);
    const used = await redeem({ token: (await mint(laptop.key)).token });
    assert.equal(used.statusCode, 200, used.body);
    const session = used.json<{ token: string }>().token;
    assert.equal((await balance(session)).statusCode, 200, "live before the revocation (control)");
    const del = await ctx.app.inject({
      method: "DELETE",
      url: `/api/v1/api-keys/${laptop.id}`,
      headers: ctx.bearer(u.apiKey),
    });
    assert.equal(del.statusCode, 204, del.body);
    assertError(await redeem({ token: unused.token }), 401, "UNAUTHORIZED", null);
    assertError(await balance(session), 401, "UNAUTHORIZED", null);
  });

  test("garbage: a wrong body is 400 VALIDATION_ERROR, a wrong token 401 UNAUTHORIZED, both in the error envelope", async () => {
    clock.set(NOW);
    for (const body of [
      {},
      { token: "" },
      { token: 42 },
      { token: "x".repeat(201) },
      { token: "a", extra: 1 },
    ])
      assertError(await redeem(body), 400, "VALIDATION_ERROR");
    const notJson = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/sign-in-links/redeem",
      headers: { "content-type": "application/json" },
      payload: "{not json",
    });
    assertError(notJson, 400, "VALIDATION_ERROR");
    for (const token of [
      "garbage",
      `mpl_${"A".repeat(40)}`,
      `mpl_${"!".repeat(40)}`,
      `mpk_${"A".repeat(40)}`,
    ])
      assertError(await redeem({ token }), 401, "UNAUTHORIZED", null);
  });
});
