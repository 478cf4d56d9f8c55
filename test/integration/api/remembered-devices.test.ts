// The remembered device. A sign-in with `remember_device: true` sets an HttpOnly,
// SameSite=Strict cookie limited to POST/DELETE /api/v1/auth/device; that route opens a session of
// the same key from it and replaces it (rotation); a replaced value used again revokes the device
// (reuse detection); the device ends with its key, its expiry, a revoke from the keys' list or a
// "forget". Its sessions are never a fresh sign-in for revealing or creating keys. Time is the
// test's ManualClock.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { decodeJwt } from "jose";
import type { components } from "@mailprobe/client";
import type { LightMyRequestResponse } from "fastify";
import { MAX_DEVICES_PER_KEY } from "../../../src/auth/remembered-devices.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError, describeAuthMatrix } from "./helpers.ts";

const NOW = "2026-03-02T08:00:00.000Z";
const DAY = 86_400_000;
const DEVICE = "/api/v1/auth/device";

let ctx: TestContext;
let clock: ManualClock;
before(async () => {
  clock = new ManualClock(NOW);
  // The proxy on loopback (inject()'s address) says whether the client used https.
  ctx = await createTestContext({ clock, env: { TRUST_PROXY: "loopback" } });
});
after(async () => {
  await ctx.close();
});

type Headers = Record<string, string>;
interface SessionBody {
  token: string;
  device_remembered_until?: string;
}
type DeviceBody = components["schemas"]["RememberedDevice"];

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/** The device cookie a response set: its value and attributes; null when it set none. */
function setCookieOf(res: LightMyRequestResponse): { value: string; attributes: string[] } | null {
  const header = res.headers["set-cookie"];
  const line = Array.isArray(header) ? header[0] : header;
  if (line === undefined) return null;
  const [pair = "", ...attributes] = line.split(";").map((s) => s.trim());
  assert.ok(pair.startsWith("mailprobe_device="), line);
  return { value: pair.slice("mailprobe_device=".length), attributes };
}

const openSession = (key: string, headers: Headers, payload?: object) =>
  ctx.app.inject({
    method: "POST",
    url: "/api/v1/auth/session",
    headers: { ...ctx.bearer(key), ...headers },
    ...(payload ? { payload } : {}),
  });

async function signIn(key: string, headers: Headers = {}): Promise<{ session: SessionBody; cookie: string }> {
  const res = await openSession(key, { "user-agent": UA, ...headers }, { remember_device: true });
  assert.equal(res.statusCode, 200, res.body);
  const cookie = setCookieOf(res);
  assert.ok(cookie, "a cookie was set");
  return { session: res.json<SessionBody>(), cookie: cookie.value };
}

const useDevice = (cookie: string | null, headers: Headers = {}) =>
  ctx.app.inject({
    method: "POST",
    url: DEVICE,
    headers: { ...(cookie !== null ? { cookie: `mailprobe_device=${cookie}` } : {}), ...headers },
    payload: {},
  });

async function deviceSession(cookie: string): Promise<{ token: string; cookie: string }> {
  const res = await useDevice(cookie);
  assert.equal(res.statusCode, 200, res.body);
  const next = setCookieOf(res);
  assert.ok(next && next.value !== "", "a new cookie");
  return { token: res.json<SessionBody>().token, cookie: next.value };
}

const balance = (token: string) =>
  ctx.app.inject({ method: "GET", url: "/api/v1/credits/balance", headers: ctx.bearer(token) });
const listDevices = (credential: string, keyId: string) =>
  ctx.app.inject({
    method: "GET",
    url: `/api/v1/api-keys/${keyId}/devices`,
    headers: ctx.bearer(credential),
  });
const revokeDevice = (credential: string, keyId: string, deviceId: string) =>
  ctx.app.inject({
    method: "DELETE",
    url: `/api/v1/api-keys/${keyId}/devices/${deviceId}`,
    headers: ctx.bearer(credential),
  });

async function devicesOf(u: TestUser): Promise<DeviceBody[]> {
  const res = await listDevices(u.apiKey, u.apiKeyId);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ devices: DeviceBody[] }>().devices;
}

async function newKey(u: TestUser, purpose: string): Promise<{ id: string; key: string }> {
  const created = await ctx.services.apiKeys.create(u.userId, `${purpose} key`, purpose as "custom");
  return { id: created.record.id, key: created.plaintext };
}

const UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

describe("remembering at sign-in", () => {
  test("the cookie: HttpOnly, SameSite=Strict, the device path only, Max-Age the lifetime; only hashes stored", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const res = await openSession(u.apiKey, { "user-agent": UA }, { remember_device: true });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json<SessionBody>().device_remembered_until, "2026-04-01T08:00:00.000Z");
    const cookie = setCookieOf(res);
    assert.ok(cookie);
    assert.match(cookie.value, /^[0-9A-Za-z]{24}\.[0-9A-Za-z]{40}$/);
    assert.deepEqual(cookie.attributes, [
      `Max-Age=${String(30 * 86_400)}`,
      "Path=/api/v1/auth/device",
      "HttpOnly",
      "SameSite=Strict",
    ]);
    const [series, secret] = cookie.value.split(".");
    const { rows } = await ctx.db.query<{ series: string; token_hash: string; user_agent: string }>(
      "select series, token_hash, user_agent from remembered_devices where user_id = $1",
      [u.userId],
    );
    assert.deepEqual(rows, [{ series, token_hash: sha256(secret!), user_agent: "Chrome on Linux" }]);
  });

  test("Secure when the request came over https (X-Forwarded-Proto from a trusted proxy)", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const res = await openSession(u.apiKey, { "x-forwarded-proto": "https" }, { remember_device: true });
    assert.equal(res.statusCode, 200, res.body);
    assert.ok(setCookieOf(res)?.attributes.includes("Secure"));
  });

  test("without remember_device (or with no body at all) no cookie is set and nothing stored", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    for (const payload of [undefined, { remember_device: false }]) {
      const res = await openSession(u.apiKey, {}, payload);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers["set-cookie"], undefined);
      assert.equal(res.json<SessionBody>().device_remembered_until, undefined);
    }
    assert.deepEqual(await devicesOf(u), []);
    const bad = await openSession(u.apiKey, {}, { remember_device: "yes" });
    assertError(bad, 400, "VALIDATION_ERROR");
  });

  test("a sign-in link remembers too", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const link = await ctx.services.signInLinks.mint(u.userId, u.apiKeyId);
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/sign-in-links/redeem",
      payload: { token: link.token, remember_device: true },
    });
    assert.equal(res.statusCode, 200, res.body);
    const cookie = setCookieOf(res);
    assert.ok(cookie);
    await deviceSession(cookie.value);
  });
});

describe("opening a session from the cookie", () => {
  test("a session of the same key, the cookie replaced on every use, last use recorded", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const first = await signIn(u.apiKey);
    clock.advance(DAY);
    const opened = await deviceSession(first.cookie);
    assert.notEqual(opened.cookie, first.cookie);
    assert.equal(opened.cookie.split(".")[0], first.cookie.split(".")[0], "same series");
    assert.equal((await balance(opened.token)).statusCode, 200);
    const claims = decodeJwt(opened.token);
    assert.equal(claims.api_key_id, u.apiKeyId);
    const [device] = await devicesOf(u);
    assert.equal(claims.did, device?.id);
    assert.equal(device?.last_used_at, "2026-03-03T08:00:00.000Z");
    assert.equal(device?.expires_at, "2026-04-01T08:00:00.000Z", "use does not extend the device");
    clock.advance(DAY);
    const res = await useDevice(opened.cookie);
    assert.equal(res.statusCode, 200, res.body);
    const maxAge = setCookieOf(res)?.attributes.find((a) => a.startsWith("Max-Age="));
    assert.equal(maxAge, `Max-Age=${String(28 * 86_400)}`, "the cookie lives as long as the device");
  });

  test("no cookie or a malformed one → 401; a request must carry a JSON body", async () => {
    clock.set(NOW);
    assertError(await useDevice(null), 401, "UNAUTHORIZED", null);
    const res = await useDevice("not-a-device");
    assertError(res, 401, "UNAUTHORIZED", null);
    assert.equal(setCookieOf(res)?.attributes[0], "Max-Age=0", "the refused cookie is cleared");
    const u = await ctx.createUser();
    const { cookie } = await signIn(u.apiKey);
    const form = await ctx.app.inject({
      method: "POST",
      url: DEVICE,
      headers: { cookie: `mailprobe_device=${cookie}`, "content-type": "application/x-www-form-urlencoded" },
      payload: "a=1",
    });
    assert.deepEqual(
      assertError(form, 400, "VALIDATION_ERROR").details?.map((d) => d.field),
      ["content-type"],
    );
    await deviceSession(cookie);
  });

  test("a replaced value used again (after the grace) is a stolen copy: the device is revoked, its sessions end", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const { cookie: stolen } = await signIn(u.apiKey);
    const owner = await deviceSession(stolen);
    clock.advance(60_000);
    const reuse = await useDevice(stolen);
    assert.match(assertError(reuse, 401, "UNAUTHORIZED", null).message, /copy/);
    assert.equal(setCookieOf(reuse)?.value, "", "cleared");
    assert.equal((await balance(owner.token)).statusCode, 401, "the device's session ended");
    assertError(await useDevice(owner.cookie), 401, "UNAUTHORIZED", null);
    assert.deepEqual(await devicesOf(u), []);
    const { rows } = await ctx.db.query<{ revoked_reason: string }>(
      "select revoked_reason from remembered_devices where user_id = $1",
      [u.userId],
    );
    assert.deepEqual(rows, [{ revoked_reason: "reused" }]);
    assert.equal((await balance(u.apiKey)).statusCode, 200, "the key itself is untouched");
  });

  test("two tabs racing within the grace: 409 for the second, the device kept", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const { cookie } = await signIn(u.apiKey);
    const winner = await deviceSession(cookie);
    clock.advance(5_000);
    assertError(await useDevice(cookie), 409, "CONFLICT", null);
    await deviceSession(winner.cookie);
  });

  test("a revoked key, an expired device or a deactivated user → 401", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const laptop = await newKey(u, "custom");
    const { cookie } = await signIn(laptop.key);
    const opened = await deviceSession(cookie);
    await ctx.services.apiKeys.deactivate(u.userId, laptop.id);
    assertError(await useDevice(opened.cookie), 401, "UNAUTHORIZED", null);
    assert.deepEqual((await listDevices(u.apiKey, laptop.id)).json(), { devices: [] });

    const v = await ctx.createUser();
    const expiring = await signIn(v.apiKey);
    clock.advance(30 * DAY - 1_000);
    const last = await deviceSession(expiring.cookie);
    clock.advance(1_000);
    assertError(await useDevice(last.cookie), 401, "UNAUTHORIZED", null);

    clock.set(NOW);
    const w = await ctx.createUser();
    const deactivated = await signIn(w.apiKey);
    await ctx.db.query("update users set deactivated_at = $2 where id = $1", [w.userId, new Date(NOW)]);
    assertError(await useDevice(deactivated.cookie), 401, "UNAUTHORIZED", null);
  });

  test("a device's session is never a fresh sign-in: revealing or creating keys needs the key", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const { cookie } = await signIn(u.apiKey);
    const { token } = await deviceSession(cookie);
    const reveal = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/api-keys?reveal=true",
      headers: ctx.bearer(token),
    });
    assert.match(assertError(reveal, 403, "FORBIDDEN", null).message, /remembered device/);
    const create = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(token),
      payload: { name: "from a device", purpose: "custom" },
    });
    assertError(create, 403, "FORBIDDEN", null);
    const renewed = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/session/refresh",
      headers: ctx.bearer(token),
    });
    assert.equal(renewed.statusCode, 200, renewed.body);
    const again = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/api-keys?reveal=true",
      headers: ctx.bearer(renewed.json<SessionBody>().token),
    });
    assertError(again, 403, "FORBIDDEN", null);
    const listed = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(token),
    });
    assert.equal(listed.statusCode, 200, "listing keys stays open");
  });
});

describe("listing, revoking, forgetting", () => {
  test("listed with the key (this session's device marked); a revoke ends its cookie and its sessions", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const a = await signIn(u.apiKey);
    clock.advance(1_000);
    const b = await signIn(u.apiKey, {
      "user-agent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) Safari/605.1.15",
    });
    clock.advance(1_000);
    const opened = await deviceSession(b.cookie);
    const res = await listDevices(opened.token, u.apiKeyId);
    assert.equal(res.statusCode, 200, res.body);
    const devices = res.json<{ devices: DeviceBody[] }>().devices;
    assert.deepEqual(
      devices.map((d) => [d.label, d.is_current]),
      [
        ["Safari on macOS", true],
        ["Chrome on Linux", false],
      ],
    );
    const revoked = await revokeDevice(opened.token, u.apiKeyId, devices[0]!.id);
    assert.equal(revoked.statusCode, 204, revoked.body);
    assert.equal((await balance(opened.token)).statusCode, 401, "the revoked device's session ended");
    assertError(await useDevice(opened.cookie), 401, "UNAUTHORIZED", null);
    assert.equal((await balance(a.session.token)).statusCode, 200, "the other device's session lives");
    assert.deepEqual(
      (await devicesOf(u)).map((d) => d.label),
      ["Chrome on Linux"],
    );
    assert.equal((await revokeDevice(u.apiKey, u.apiKeyId, devices[0]!.id)).statusCode, 204, "idempotent");
  });

  test("404 for another user's key or another key's device", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const other = await ctx.createUser();
    const { cookie } = await signIn(other.apiKey);
    await deviceSession(cookie);
    const [device] = await devicesOf(other);
    assertError(await listDevices(u.apiKey, other.apiKeyId), 404, "NOT_FOUND", null);
    assertError(await revokeDevice(u.apiKey, u.apiKeyId, device!.id), 404, "NOT_FOUND", null);
    assertError(await revokeDevice(u.apiKey, other.apiKeyId, device!.id), 404, "NOT_FOUND", null);
    assert.equal((await devicesOf(other)).length, 1, "untouched");
  });

  test("integration keys get 403 on listing and revoking, before anything is looked up", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const { cookie } = await signIn(u.apiKey);
    await deviceSession(cookie);
    const [device] = await devicesOf(u);
    const zapier = await newKey(u, "zapier");
    assertError(await listDevices(zapier.key, u.apiKeyId), 403, "FORBIDDEN", null);
    assertError(await revokeDevice(zapier.key, u.apiKeyId, device!.id), 403, "FORBIDDEN", null);
    assertError(await listDevices(zapier.key, "not-a-uuid"), 403, "FORBIDDEN", null);
    assert.equal((await devicesOf(u)).length, 1);
  });

  test("forget (sign out): the device is revoked and the cookie cleared; without a cookie, 204 all the same", async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const { cookie } = await signIn(u.apiKey);
    const res = await ctx.app.inject({
      method: "DELETE",
      url: DEVICE,
      headers: { cookie: `mailprobe_device=${cookie}` },
    });
    assert.equal(res.statusCode, 204, res.body);
    assert.deepEqual(setCookieOf(res), {
      value: "",
      attributes: ["Max-Age=0", "Path=/api/v1/auth/device", "HttpOnly", "SameSite=Strict"],
    });
    assertError(await useDevice(cookie), 401, "UNAUTHORIZED", null);
    assert.deepEqual(await devicesOf(u), []);
    assert.equal((await ctx.app.inject({ method: "DELETE", url: DEVICE })).statusCode, 204);
  });

  test(`at most ${String(MAX_DEVICES_PER_KEY)} devices per key: remembering one more evicts the least recently used`, async () => {
    clock.set(NOW);
    const u = await ctx.createUser();
    const cookies: string[] = [];
    for (let i = 0; i <= MAX_DEVICES_PER_KEY; i++) {
      clock.advance(1_000);
      cookies.push((await signIn(u.apiKey)).cookie);
      // The first device stays in use, so the second is the least recently used.
      if (i === 1) {
        clock.advance(1_000);
        cookies[0] = (await deviceSession(cookies[0]!)).cookie;
      }
    }
    assert.equal((await devicesOf(u)).length, MAX_DEVICES_PER_KEY);
    assertError(await useDevice(cookies[1]!), 401, "UNAUTHORIZED", null);
    await deviceSession(cookies[0]!);
    await deviceSession(cookies[MAX_DEVICES_PER_KEY]!);
  });

  describeAuthMatrix(
    () => ctx,
    [
      { method: "GET", url: "/api/v1/api-keys/00000000-0000-4000-8000-000000000000/devices" },
      {
        method: "DELETE",
        url: "/api/v1/api-keys/00000000-0000-4000-8000-000000000000/devices/00000000-0000-4000-8000-000000000001",
      },
    ],
  );
});
