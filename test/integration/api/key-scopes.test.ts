// Least privilege for credentials (DESIGN §5 "Key scopes"): integration keys
// cannot manage keys or open sessions, reveal never shows deactivated keys, sessions die with the
// key that opened it, the active keys of a user are capped, and the last one cannot be deleted.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MAX_ACTIVE_KEYS_PER_USER } from "../../../src/keys/service.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError } from "./helpers.ts";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

type Headers = Record<string, string>;

const req = (method: "GET" | "POST" | "DELETE", url: string, headers: Headers, payload?: object) =>
  ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

const listKeys = (h: Headers, reveal = false) =>
  req("GET", `/api/v1/api-keys${reveal ? "?reveal=true" : ""}`, h);
const createKey = (h: Headers, purpose = "custom", name = "k") =>
  req("POST", "/api/v1/api-keys", h, { name, purpose });
const deleteKey = (h: Headers, id: string) => req("DELETE", `/api/v1/api-keys/${id}`, h);
const openSession = (h: Headers) => req("POST", "/api/v1/auth/session", h);
const balance = (h: Headers) => req("GET", "/api/v1/credits/balance", h);

async function keyOf(u: TestUser, purpose: string): Promise<{ id: string; key: string }> {
  const created = await ctx.services.apiKeys.create(u.userId, purpose, purpose as "custom");
  return { id: created.record.id, key: created.plaintext };
}

async function sessionOf(h: Headers): Promise<string> {
  const res = await openSession(h);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ token: string }>().token;
}

describe("integration keys (zapier, n8n, google sheets)", () => {
  for (const purpose of ["zapier", "n8n", "google sheets"]) {
    test(`a "${purpose}" key → 403 FORBIDDEN on list, reveal, create, delete and session; other keys untouched`, async () => {
      const u = await ctx.createUser(3);
      const k = await keyOf(u, purpose);
      const h = ctx.bearer(k.key);
      assertError(await listKeys(h), 403, "FORBIDDEN", null);
      const reveal = await listKeys(h, true);
      assertError(reveal, 403, "FORBIDDEN", null);
      assert.doesNotMatch(reveal.body, /mpk_/, "no key material in the refusal");
      assertError(await createKey(h), 403, "FORBIDDEN", null);
      // Even an invalid body is refused for the scope first (no validation oracle).
      assertError(await req("POST", "/api/v1/api-keys", h, { bogus: 1 }), 403, "FORBIDDEN", null);
      assertError(await deleteKey(h, u.apiKeyId), 403, "FORBIDDEN", null);
      assertError(await deleteKey(h, k.id), 403, "FORBIDDEN", null);
      assertError(await openSession(h), 403, "FORBIDDEN", null);
      // Nothing changed: both keys still work and no key was created.
      assert.equal((await balance(ctx.bearer(u.apiKey))).statusCode, 200);
      const listed = await listKeys(ctx.bearer(u.apiKey));
      assert.equal(listed.json<{ api_keys: unknown[] }>().api_keys.length, 2);
    });
  }

  test("an integration key still verifies, lists tasks, reads reports and its balance", async () => {
    const u = await ctx.createUser(3);
    const h = ctx.bearer((await keyOf(u, "zapier")).key);
    assert.equal((await balance(h)).statusCode, 200);
    assert.equal((await req("GET", "/api/v1/tasks", h)).statusCode, 200);
    assert.equal((await req("GET", "/api/v1/credits/transactions", h)).statusCode, 200);
    assert.equal((await req("GET", "/api/v1/metrics/verifications", h)).statusCode, 200);
    const verify = await req("POST", "/api/v1/verify", h, { email: "not-an-address" });
    assert.equal(verify.statusCode, 400, "reaches the route (syntax refusal, not 403)");
  });
});

describe("custom keys and sessions manage keys", () => {
  test("a custom key lists, reveals, creates and deletes keys", async () => {
    const u = await ctx.createUser();
    const h = ctx.bearer(u.apiKey);
    const created = await createKey(h, "zapier");
    assert.equal(created.statusCode, 201, created.body);
    assert.equal((await listKeys(h, true)).statusCode, 200);
    assert.equal((await deleteKey(h, created.json<{ id: string }>().id)).statusCode, 204);
  });

  test("a session (opened by a custom key) lists, reveals, creates and deletes keys", async () => {
    const u = await ctx.createUser();
    const h = ctx.bearer(await sessionOf(ctx.bearer(u.apiKey)));
    const created = await createKey(h, "n8n");
    assert.equal(created.statusCode, 201, created.body);
    assert.equal((await listKeys(h, true)).statusCode, 200);
    assert.equal((await deleteKey(h, created.json<{ id: string }>().id)).statusCode, 204);
  });
});

describe("reveal", () => {
  test("never returns a deactivated key's plaintext (active keys still revealed)", async () => {
    const u = await ctx.createUser();
    const gone = await keyOf(u, "custom");
    assert.equal((await deleteKey(ctx.bearer(u.apiKey), gone.id)).statusCode, 204);
    const keys = (await listKeys(ctx.bearer(u.apiKey), true)).json<{
      api_keys: Array<{ id: string; is_active: boolean; key?: string | null }>;
    }>().api_keys;
    const listedGone = keys.find((k) => k.id === gone.id);
    assert.ok(listedGone, "a deactivated key is still listed");
    assert.equal(listedGone.is_active, false);
    assert.ok(!("key" in listedGone), "…without its key");
    assert.equal(keys.find((k) => k.id === u.apiKeyId)?.key, u.apiKey);
  });
});

describe("sessions die with the key that opened them", () => {
  test("deleting the opening key ends its sessions at once; sessions of other keys live on", async () => {
    const u = await ctx.createUser(4);
    const opener = await keyOf(u, "custom");
    const doomed = await sessionOf(ctx.bearer(opener.key));
    const survivor = await sessionOf(ctx.bearer(u.apiKey));
    assert.equal((await balance(ctx.bearer(doomed))).statusCode, 200, "works while the key is active");
    assert.equal((await deleteKey(ctx.bearer(survivor), opener.id)).statusCode, 204);
    assertError(await balance(ctx.bearer(doomed)), 401, "UNAUTHORIZED", null);
    assertError(await listKeys(ctx.bearer(doomed), true), 401, "UNAUTHORIZED", null);
    assert.equal((await balance(ctx.bearer(survivor))).statusCode, 200);
  });

  test("another process (its own cache) stops accepting the session within a second", async () => {
    const other = await createTestContext({ db: ctx.db });
    try {
      const u = await ctx.createUser(4);
      const opener = await keyOf(u, "custom");
      const session = await sessionOf(ctx.bearer(opener.key));
      const onOther = () =>
        other.app.inject({ method: "GET", url: "/api/v1/credits/balance", headers: other.bearer(session) });
      assert.equal((await onOther()).statusCode, 200, "the other process has cached the key as active");
      assert.equal((await deleteKey(ctx.bearer(u.apiKey), opener.id)).statusCode, 204);
      await new Promise((r) => setTimeout(r, 1_100));
      assertError(await onOther(), 401, "UNAUTHORIZED", null);
    } finally {
      await other.close();
    }
  });
});

describe("active keys per user are capped", () => {
  test(`the ${MAX_ACTIVE_KEYS_PER_USER + 1}st active key → 409 CONFLICT; after a delete one can be created again`, async () => {
    const u = await ctx.createUser();
    const h = ctx.bearer(u.apiKey);
    for (let i = 1; i < MAX_ACTIVE_KEYS_PER_USER; i++)
      await ctx.services.apiKeys.create(u.userId, `k${i}`, "zapier");
    const refused = await createKey(h, "custom", "one too many");
    assertError(refused, 409, "CONFLICT", null);
    assert.match(refused.json<{ error: { message: string } }>().error.message, /at most 50 active API keys/);
    const keys = (await listKeys(h)).json<{ api_keys: Array<{ id: string; is_active: boolean }> }>().api_keys;
    assert.equal(keys.length, MAX_ACTIVE_KEYS_PER_USER, "nothing was stored");
    const victim = keys.find((k) => k.id !== u.apiKeyId)!;
    assert.equal((await deleteKey(h, victim.id)).statusCode, 204);
    assert.equal((await createKey(h)).statusCode, 201, "deactivated keys do not count");
  });

  test("concurrent creates at the cap: exactly one succeeds", async () => {
    const u = await ctx.createUser();
    for (let i = 2; i < MAX_ACTIVE_KEYS_PER_USER; i++)
      await ctx.services.apiKeys.create(u.userId, `k${i}`, "n8n");
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => createKey(ctx.bearer(u.apiKey), "custom", `race ${i}`)),
    );
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [201, 409, 409, 409, 409]);
  });
});

describe("the last active key cannot be deleted", () => {
  test("DELETE of the only active key → 409 CONFLICT saying why; the key keeps working", async () => {
    const u = await ctx.createUser(1);
    const res = await deleteKey(ctx.bearer(u.apiKey), u.apiKeyId);
    assertError(res, 409, "CONFLICT", null);
    assert.match(
      res.json<{ error: { message: string } }>().error.message,
      /last active API key.*Create another key first/s,
    );
    assert.equal((await balance(ctx.bearer(u.apiKey))).statusCode, 200);
  });

  test("with two keys the first deletes fine and the remaining one is refused (also through a session)", async () => {
    const u = await ctx.createUser(1);
    const second = await keyOf(u, "custom");
    const session = ctx.bearer(await sessionOf(ctx.bearer(second.key)));
    assert.equal((await deleteKey(ctx.bearer(second.key), u.apiKeyId)).statusCode, 204);
    assertError(await deleteKey(session, second.id), 409, "CONFLICT", null);
    // Deleting an already deactivated key stays idempotent (204), not a conflict.
    assert.equal((await deleteKey(session, u.apiKeyId)).statusCode, 204);
  });
});
