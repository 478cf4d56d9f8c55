// Authentication (spec "Authentication", DESIGN §5 Auth): API keys by Bearer or X-API-Key, JWTs
// from POST /api/v1/auth/session, and everything that must be refused.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { SignJWT, UnsecuredJWT } from "jose";
import { createTestContext, TEST_JWT_SECRET, type TestContext } from "../../support/test-app.ts";
import { assertError, describeAuthMatrix } from "./helpers.ts";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

const balance = (headers: Record<string, string>) =>
  ctx.app.inject({ method: "GET", url: "/api/v1/credits/balance", headers });

const openSession = async (apiKey: string): Promise<string> => {
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/auth/session",
    headers: ctx.bearer(apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ token: string }>().token;
};

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/**
 * An HS256 token as the server would issue it (bound to the key that opened it by `api_key_id`),
 * with the fields under test overridable; `exp: null` / `keyId: null` leave the claim out.
 */
async function signToken(opts: {
  sub: string;
  keyId?: string | null;
  exp?: number | null;
  secret?: string;
  alg?: "HS256" | "HS512";
}): Promise<string> {
  const iat = nowSeconds() - 10;
  const keyId = opts.keyId === undefined ? randomUUID() : opts.keyId;
  // A session row as the server keeps one (auth/sessions.ts), for whatever user and key the token
  // names when both exist: the refusals below are then about the claims, not a missing session.
  const sid = randomUUID();
  await ctx.db.query(
    `insert into sessions (id, user_id, api_key_id, signed_in_at, created_at)
     select $1::uuid, u.id, k.id, now(), now() from users u, api_keys k where u.id::text = $2 and k.id::text = $3`,
    [sid, opts.sub, keyId],
  );
  const claims = { sid, gen: 0, auth_time: iat };
  let jwt = new SignJWT(keyId === null ? claims : { ...claims, api_key_id: keyId })
    .setProtectedHeader({ alg: opts.alg ?? "HS256", typ: "JWT" })
    .setSubject(opts.sub)
    .setIssuedAt(iat);
  if (opts.exp !== null) jwt = jwt.setExpirationTime(opts.exp ?? iat + 600);
  return jwt.sign(new TextEncoder().encode(opts.secret ?? TEST_JWT_SECRET));
}

describe("API keys as credentials", () => {
  test("Authorization: Bearer <key> → 200 with the key owner's balance", async () => {
    const u = await ctx.createUser(42);
    const res = await balance(ctx.bearer(u.apiKey));
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { user_id: u.userId, balance: 42 });
  });

  test("X-API-Key: <key> → 200", async () => {
    const u = await ctx.createUser(9);
    const res = await balance({ "x-api-key": u.apiKey });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { user_id: u.userId, balance: 9 });
  });

  test("the Bearer scheme name is case-insensitive", async () => {
    const u = await ctx.createUser(1);
    const res = await balance({ authorization: `bearer ${u.apiKey}` });
    assert.equal(res.statusCode, 200);
  });

  test("Authorization wins over X-API-Key: a bad bearer is not rescued by a good X-API-Key", async () => {
    const u = await ctx.createUser(1);
    const res = await balance({ authorization: "Bearer nope", "x-api-key": u.apiKey });
    assertError(res, 401, "UNAUTHORIZED", null);
  });

  test("a deactivated key is refused afterwards; the user's other keys still work", async () => {
    const u = await ctx.createUser(3);
    const created = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(u.apiKey),
      payload: { name: "to revoke", purpose: "zapier" },
    });
    assert.equal(created.statusCode, 201);
    const { id, key } = created.json<{ id: string; key: string }>();
    assert.equal((await balance(ctx.bearer(key))).statusCode, 200);

    const del = await ctx.app.inject({
      method: "DELETE",
      url: `/api/v1/api-keys/${id}`,
      headers: ctx.bearer(u.apiKey),
    });
    assert.equal(del.statusCode, 204);
    assertError(await balance(ctx.bearer(key)), 401, "UNAUTHORIZED", null);
    assertError(await balance({ "x-api-key": key }), 401, "UNAUTHORIZED", null);
    assert.equal((await balance(ctx.bearer(u.apiKey))).statusCode, 200);
  });

  test("a key with one character changed is refused", async () => {
    const u = await ctx.createUser(1);
    const last = u.apiKey.at(-1) === "a" ? "b" : "a";
    assertError(await balance(ctx.bearer(u.apiKey.slice(0, -1) + last)), 401, "UNAUTHORIZED", null);
  });
});

describe("JWT sessions", () => {
  test("POST /api/v1/auth/session with an API key → a JWT that works as bearer", async () => {
    const u = await ctx.createUser(17);
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/session",
      headers: ctx.bearer(u.apiKey),
    });
    assert.equal(res.statusCode, 200);
    const body = res.json<{ token: string; token_type: string; expires_at: string; user_id: string }>();
    assert.equal(body.token_type, "Bearer");
    assert.equal(body.user_id, u.userId);
    assert.equal(body.token.split(".").length, 3);
    assert.ok(Date.parse(body.expires_at) > Date.now(), "expires in the future");

    const viaJwt = await balance(ctx.bearer(body.token));
    assert.equal(viaJwt.statusCode, 200);
    assert.deepEqual(viaJwt.json(), { user_id: u.userId, balance: 17 });
  });

  test("a session can be opened with X-API-Key too", async () => {
    const u = await ctx.createUser();
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/session",
      headers: { "x-api-key": u.apiKey },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json<{ user_id: string }>().user_id, u.userId);
  });

  // Was 401; a valid session that may not do this is 403 FORBIDDEN (DESIGN §5 "Key scopes").
  test("a JWT cannot open a session (a leaked token must not renew itself) → 403", async () => {
    const u = await ctx.createUser();
    const jwt = await openSession(u.apiKey);
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/session",
      headers: ctx.bearer(jwt),
    });
    assertError(res, 403, "FORBIDDEN", null);
  });

  test("a JWT sent as X-API-Key is not accepted as an API key", async () => {
    const u = await ctx.createUser();
    const jwt = await openSession(u.apiKey);
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/session",
      headers: { "x-api-key": jwt },
    });
    assertError(res, 401, "UNAUTHORIZED", null);
  });

  test("a token signed here with the server's secret is accepted (control for the refusals below)", async () => {
    const u = await ctx.createUser(5);
    const res = await balance(ctx.bearer(await signToken({ sub: u.userId, keyId: u.apiKeyId })));
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { user_id: u.userId, balance: 5 });
  });

  test("a JWT without exp → 401 (it would never expire)", async () => {
    const u = await ctx.createUser(5);
    const token = await signToken({ sub: u.userId, keyId: u.apiKeyId, exp: null });
    assertError(await balance(ctx.bearer(token)), 401, "UNAUTHORIZED", null);
  });

  test("a JWT without the api_key_id claim → 401 (a session not bound to a key cannot be revoked)", async () => {
    const u = await ctx.createUser(5);
    const token = await signToken({ sub: u.userId, keyId: null });
    assertError(await balance(ctx.bearer(token)), 401, "UNAUTHORIZED", null);
  });

  test("a JWT bound to another user's key → 401", async () => {
    const u = await ctx.createUser(5);
    const other = await ctx.createUser(5);
    const token = await signToken({ sub: u.userId, keyId: other.apiKeyId });
    assertError(await balance(ctx.bearer(token)), 401, "UNAUTHORIZED", null);
  });

  test("an expired JWT → 401", async () => {
    const u = await ctx.createUser(5);
    const token = await signToken({ sub: u.userId, keyId: u.apiKeyId, exp: nowSeconds() - 120 });
    assertError(await balance(ctx.bearer(token)), 401, "UNAUTHORIZED", null);
  });

  test("a JWT signed with another secret → 401", async () => {
    const u = await ctx.createUser(5);
    const token = await signToken({
      sub: u.userId,
      keyId: u.apiKeyId,
      secret: "another-secret-another-secret-another-12",
    });
    assertError(await balance(ctx.bearer(token)), 401, "UNAUTHORIZED", null);
  });

  test("an alg:none JWT → 401", async () => {
    const u = await ctx.createUser(5);
    const token = new UnsecuredJWT({}).setSubject(u.userId).setIssuedAt().setExpirationTime("10m").encode();
    assert.equal(token.split(".").length, 3);
    assertError(await balance(ctx.bearer(token)), 401, "UNAUTHORIZED", null);
  });

  test("an HS512 JWT with the right secret → 401 (only HS256 is accepted for the shared secret)", async () => {
    const u = await ctx.createUser(5);
    const token = await signToken({ sub: u.userId, keyId: u.apiKeyId, alg: "HS512" });
    assertError(await balance(ctx.bearer(token)), 401, "UNAUTHORIZED", null);
  });

  test("a JWT whose sub is not a UUID → 401", async () => {
    const token = await signToken({ sub: "admin" });
    assertError(await balance(ctx.bearer(token)), 401, "UNAUTHORIZED", null);
  });

  test("a tampered payload (sub swapped to another user) → 401", async () => {
    const victim = await ctx.createUser(99);
    const attacker = await ctx.createUser(1);
    const [header, , signature] = (await openSession(attacker.apiKey)).split(".");
    const forged = Buffer.from(JSON.stringify({ sub: victim.userId, exp: nowSeconds() + 600 })).toString(
      "base64url",
    );
    assertError(await balance(ctx.bearer(`${header}.${forged}.${signature}`)), 401, "UNAUTHORIZED", null);
  });

  // Was 404 NOT_FOUND: a session is now bound to an active key of its user, so a signed token
  // for a user (and key) that does not exist is refused at authentication.
  test("a signed JWT for a user that does not exist → 401 on balance and transactions", async () => {
    const token = await signToken({ sub: randomUUID() });
    assertError(await balance(ctx.bearer(token)), 401, "UNAUTHORIZED", null);
    const tx = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/credits/transactions",
      headers: ctx.bearer(token),
    });
    assertError(tx, 401, "UNAUTHORIZED", null);
  });
});

describe("refusals on every protected route", () => {
  describeAuthMatrix(
    () => ctx,
    [
      { method: "GET", url: "/api/v1/credits/balance" },
      { method: "GET", url: "/api/v1/credits/transactions" },
      { method: "GET", url: "/api/v1/api-keys" },
      { method: "GET", url: "/api/v1/api-keys?reveal=true" },
      { method: "POST", url: "/api/v1/api-keys", payload: { name: "k", purpose: "custom" } },
      { method: "DELETE", url: `/api/v1/api-keys/${randomUUID()}` },
      { method: "POST", url: "/api/v1/auth/session" },
    ],
  );
});
