// POST /api/v1/auth/session/refresh renews a live dashboard session (same user,
// same key, the sign-in time carried in `auth_time`) until SESSION_MAX_HOURS after the sign-in;
// refused once the key is revoked, past the cap, and for anything that is not a session. Time is
// the test's ManualClock, which both stamps and judges tokens.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { decodeJwt, SignJWT } from "jose";
import { ConfigError } from "../../../src/config/env-vars.ts";
import { loadConfig } from "../../../src/config/index.ts";
import { createTestContext, ManualClock, TEST_JWT_SECRET, type TestContext } from "../../support/test-app.ts";
import { assertError, describeAuthMatrix } from "./helpers.ts";

const SIGN_IN = "2026-03-02T08:00:00.000Z";
const MINUTE = 60_000;

interface SessionBody {
  token: string;
  token_type: string;
  expires_at: string;
  user_id: string;
  lifetime_seconds: number;
  renewable_until: string;
}

let ctx: TestContext;
let clock: ManualClock;
before(async () => {
  clock = new ManualClock(SIGN_IN);
  ctx = await createTestContext({ clock });
});
after(async () => {
  await ctx.close();
});

const post = (url: string, headers: Record<string, string>) =>
  ctx.app.inject({ method: "POST", url, headers });
const refresh = (token: string) => post("/api/v1/auth/session/refresh", ctx.bearer(token));
const balance = (token: string) =>
  ctx.app.inject({ method: "GET", url: "/api/v1/credits/balance", headers: ctx.bearer(token) });

async function openSession(apiKey: string): Promise<SessionBody> {
  const res = await post("/api/v1/auth/session", ctx.bearer(apiKey));
  assert.equal(res.statusCode, 200, res.body);
  return res.json<SessionBody>();
}

async function renewed(token: string): Promise<SessionBody> {
  const res = await refresh(token);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<SessionBody>();
}

describe("renewing a live session", () => {
  test("a session token gets a new token: same user and key, sign-in time kept, a fresh expiry", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser(7);
    const first = await openSession(u.apiKey);
    assert.equal(first.lifetime_seconds, 900);
    assert.equal(first.renewable_until, "2026-03-02T20:00:00.000Z", "sign-in + the default 12 h");

    clock.advance(10 * MINUTE);
    const second = await renewed(first.token);
    assert.notEqual(second.token, first.token);
    assert.equal(second.token_type, "Bearer");
    assert.equal(second.user_id, u.userId);
    assert.equal(second.expires_at, "2026-03-02T08:25:00.000Z", "renewal time + SESSION_TTL_SECONDS");
    assert.equal(second.renewable_until, first.renewable_until, "the cap does not move");
    const claims = decodeJwt(second.token);
    assert.equal(claims.sub, u.userId);
    assert.equal(claims.api_key_id, u.apiKeyId, "bound to the key that opened the first token");
    assert.equal(claims.auth_time, Date.parse(SIGN_IN) / 1000, "the original sign-in time");

    // Past the first token's expiry: it is refused, its successor works and renews in turn.
    clock.advance(10 * MINUTE);
    assertError(await balance(first.token), 401, "UNAUTHORIZED", null);
    const res = await balance(second.token);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { user_id: u.userId, balance: 7 });
    const third = await renewed(second.token);
    assert.equal(third.expires_at, "2026-03-02T08:35:00.000Z");
    assert.equal(decodeJwt(third.token).auth_time, Date.parse(SIGN_IN) / 1000);
  });

  test("an expired session token cannot be renewed", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser();
    const session = await openSession(u.apiKey);
    clock.advance(15 * MINUTE);
    assertError(await refresh(session.token), 401, "UNAUTHORIZED", null);
  });

  test("a session token the server does not hold (no sid: issued before sessions were kept) is refused: sign in again", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser();
    const iat = Date.parse(SIGN_IN) / 1000;
    const legacy = await new SignJWT({ api_key_id: u.apiKeyId, auth_time: iat })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(u.userId)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 900)
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    assertError(await balance(legacy), 401, "UNAUTHORIZED", null);
    assertError(await refresh(legacy), 401, "UNAUTHORIZED", null);
  });
});

describe("server-side sessions", () => {
  test("a renewal retires the token it replaces: accepted for the 30 s grace (other tabs), refused after", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser();
    const first = await openSession(u.apiKey);
    clock.advance(MINUTE);
    const second = await renewed(first.token);
    assert.equal((await balance(second.token)).statusCode, 200);
    // Within the grace the old token still reads, and a renewal with it gets the current generation.
    clock.advance(10_000);
    assert.equal((await balance(first.token)).statusCode, 200);
    const sibling = await renewed(first.token);
    assert.equal(decodeJwt(sibling.token).gen, decodeJwt(second.token).gen);
    clock.advance(20_000);
    assertError(await balance(first.token), 401, "UNAUTHORIZED", null);
    assertError(await refresh(first.token), 401, "UNAUTHORIZED", null);
    assert.equal((await balance(second.token)).statusCode, 200, "the renewed token lives on");
  });

  test("signing out ends every token of the session at once; the key opens a new one", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser();
    const first = await openSession(u.apiKey);
    const second = await renewed(first.token);
    const out = await ctx.app.inject({
      method: "DELETE",
      url: "/api/v1/auth/session",
      headers: ctx.bearer(second.token),
    });
    assert.equal(out.statusCode, 204, out.body);
    for (const token of [first.token, second.token]) {
      assertError(await balance(token), 401, "UNAUTHORIZED", null);
      assertError(await refresh(token), 401, "UNAUTHORIZED", null);
    }
    // An API key has no session to end.
    const byKey = await ctx.app.inject({
      method: "DELETE",
      url: "/api/v1/auth/session",
      headers: ctx.bearer(u.apiKey),
    });
    assertError(byKey, 403, "FORBIDDEN");
    assert.equal((await balance((await openSession(u.apiKey)).token)).statusCode, 200);
  });

  test("revealing or creating keys needs a sign-in within SESSION_REAUTH_SECONDS (10 min); listing does not", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser();
    let session = await openSession(u.apiKey);
    const reveal = (token: string) =>
      ctx.app.inject({ method: "GET", url: "/api/v1/api-keys?reveal=true", headers: ctx.bearer(token) });
    const mint = (token: string) =>
      ctx.app.inject({
        method: "POST",
        url: "/api/v1/api-keys",
        headers: ctx.bearer(token),
        payload: { name: "stolen", purpose: "custom" },
      });
    clock.advance(10 * MINUTE);
    assert.equal((await reveal(session.token)).statusCode, 200, "exactly 10 min: still allowed");
    session = await renewed(session.token);
    clock.advance(1_000);
    for (const res of [await reveal(session.token), await mint(session.token)]) {
      const error = assertError(res, 403, "FORBIDDEN");
      assert.match(error.message, /signed in within the last 10 minutes: sign in again/);
    }
    const list = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(session.token),
    });
    assert.equal(list.statusCode, 200);
    // The key itself, and a fresh session, may.
    assert.equal((await reveal(u.apiKey)).statusCode, 200);
    assert.equal((await mint((await openSession(u.apiKey)).token)).statusCode, 201);
  });
});

describe("refusals", () => {
  test("once the session's key is revoked: 401, and so is every later renewal", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser();
    const created = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(u.apiKey),
      payload: { name: "laptop", purpose: "custom" },
    });
    assert.equal(created.statusCode, 201, created.body);
    const laptop = created.json<{ id: string; key: string }>();
    const session = await openSession(laptop.key);
    clock.advance(MINUTE);
    // Live and renewable before the revocation (control).
    const live = await renewed(session.token);
    const del = await ctx.app.inject({
      method: "DELETE",
      url: `/api/v1/api-keys/${laptop.id}`,
      headers: ctx.bearer(u.apiKey),
    });
    assert.equal(del.statusCode, 204, del.body);
    assertError(await refresh(live.token), 401, "UNAUTHORIZED", null);
    assertError(await refresh(session.token), 401, "UNAUTHORIZED", null);
    // The user's other key still opens sessions.
    await openSession(u.apiKey);
  });

  test("renewals end at SESSION_MAX_HOURS after the sign-in (default 12 h): the last token is cut at the cap", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser();
    const cap = Date.parse("2026-03-02T20:00:00.000Z");
    let session = await openSession(u.apiKey);
    let renewals = 0;
    // The dashboard renews when a third of the lifetime is left: every 10 minutes here.
    for (;;) {
      clock.advance(10 * MINUTE);
      const res = await refresh(session.token);
      if (res.statusCode !== 200) {
        assertError(res, 401, "UNAUTHORIZED", null);
        break;
      }
      session = res.json<SessionBody>();
      renewals += 1;
      assert.ok(Date.parse(session.expires_at) <= cap, `${session.expires_at} is past the cap`);
      assert.ok(renewals < 100, "renewals never end");
    }
    assert.equal(session.expires_at, "2026-03-02T20:00:00.000Z", "the last token ends at the cap");
    assert.equal(clock.now().toISOString(), "2026-03-02T20:00:00.000Z", "refused from the cap on");
    assert.equal(renewals, 71, "12 h of renewals every 10 minutes");
  });

  test("a token still valid past the cap (issued under a longer SESSION_MAX_HOURS) is refused, naming the limit", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser();
    const now = Date.parse(SIGN_IN) / 1000;
    // A session the server holds, signed in 13 h ago (as a server with a longer cap would have kept).
    const sid = randomUUID();
    await ctx.db.query(
      "insert into sessions (id, user_id, api_key_id, signed_in_at, created_at) values ($1, $2, $3, $4, $4)",
      [sid, u.userId, u.apiKeyId, new Date((now - 13 * 3600) * 1000)],
    );
    const token = await new SignJWT({ api_key_id: u.apiKeyId, auth_time: now - 13 * 3600, sid, gen: 0 })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(u.userId)
      .setIssuedAt(now - 60)
      .setExpirationTime(now + 840)
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    assert.equal((await balance(token)).statusCode, 200, "the token itself is live");
    const res = await refresh(token);
    assertError(res, 401, "UNAUTHORIZED", null);
    assert.match(res.json<{ error: { message: string } }>().error.message, /SESSION_MAX_HOURS/);
  });

  test("an API key is no session: 403 FORBIDDEN for custom and integration keys alike", async () => {
    clock.set(SIGN_IN);
    const u = await ctx.createUser();
    assertError(await refresh(u.apiKey), 403, "FORBIDDEN", null);
    assertError(
      await post("/api/v1/auth/session/refresh", { "x-api-key": u.apiKey }),
      403,
      "FORBIDDEN",
      null,
    );
    const zapier = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(u.apiKey),
      payload: { name: "zap", purpose: "zapier" },
    });
    assert.equal(zapier.statusCode, 201, zapier.body);
    assertError(await refresh(zapier.json<{ key: string }>().key), 403, "FORBIDDEN", null);
  });

  describeAuthMatrix(() => ctx, [{ method: "POST", url: "/api/v1/auth/session/refresh" }]);
});

describe("the lifetime the sign-in form states", () => {
  test("GET /api/v1/auth/session/policy needs no credentials and answers the configured values", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/api/v1/auth/session/policy" });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { lifetime_seconds: 900, max_hours: 12, device_remember_days: 30 });
  });

  test("configured values reach the policy, the session reply and the cap", async (t) => {
    const localClock = new ManualClock(SIGN_IN);
    const small = await createTestContext({
      clock: localClock,
      db: ctx.db,
      env: { SESSION_TTL_SECONDS: "1800", SESSION_MAX_HOURS: "1", DEVICE_REMEMBER_DAYS: "7" },
    });
    t.after(() => small.close());
    const policy = await small.app.inject({ method: "GET", url: "/api/v1/auth/session/policy" });
    assert.deepEqual(policy.json(), { lifetime_seconds: 1800, max_hours: 1, device_remember_days: 7 });
    const created = await small.services.users.create({ email: null, credits: 0 });
    const res = await small.app.inject({
      method: "POST",
      url: "/api/v1/auth/session",
      headers: small.bearer(created.apiKey.plaintext),
    });
    const first = res.json<SessionBody>();
    assert.equal(first.lifetime_seconds, 1800);
    assert.equal(first.renewable_until, "2026-03-02T09:00:00.000Z");
    const renew = async (token: string): Promise<SessionBody> => {
      const r = await small.app.inject({
        method: "POST",
        url: "/api/v1/auth/session/refresh",
        headers: small.bearer(token),
      });
      assert.equal(r.statusCode, 200, r.body);
      return r.json<SessionBody>();
    };
    localClock.advance(25 * MINUTE);
    const second = await renew(first.token);
    assert.equal(second.expires_at, "2026-03-02T08:55:00.000Z");
    localClock.advance(20 * MINUTE);
    const third = await renew(second.token);
    assert.equal(third.expires_at, "2026-03-02T09:00:00.000Z", "cut at the cap, not 09:15");
  });
});

describe("SESSION_MAX_HOURS in the configuration", () => {
  const base = { DATA_DIR: "/nonexistent-in-tests" };
  const load = (env: Record<string, string>) =>
    loadConfig({ ...base, ...env }, { hostname: () => "mx.test" });

  test("defaults to 12 and accepts whole hours from 1 to 720", () => {
    assert.equal(load({}).sessionMaxHours, 12);
    assert.equal(load({ SESSION_MAX_HOURS: "1" }).sessionMaxHours, 1);
    assert.equal(load({ SESSION_MAX_HOURS: "720" }).sessionMaxHours, 720);
  });

  test("refuses 0, 721, fractions and words, naming the variable", () => {
    for (const bad of ["0", "721", "1.5", "twelve", "-3"])
      assert.throws(
        () => load({ SESSION_MAX_HOURS: bad }),
        (e: unknown) => {
          assert.ok(e instanceof ConfigError, String(e));
          assert.match(e.message, /SESSION_MAX_HOURS/);
          return true;
        },
      );
  });

  test("a cap shorter than one session lifetime is refused; equal is accepted", () => {
    assert.equal(load({ SESSION_MAX_HOURS: "1", SESSION_TTL_SECONDS: "3600" }).sessionTtlSeconds, 3600);
    assert.throws(
      () => load({ SESSION_MAX_HOURS: "1", SESSION_TTL_SECONDS: "3601" }),
      /SESSION_MAX_HOURS \(1 h\) must be at least SESSION_TTL_SECONDS \(3601 s\)/,
    );
  });
});
