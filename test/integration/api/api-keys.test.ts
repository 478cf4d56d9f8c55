// API keys (spec POST /api/v1/api-keys, DESIGN §5 API keys): create, list, reveal, deactivate.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError, UUID_RE } from "./helpers.ts";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

interface CreatedKey {
  id: string;
  user_id: string;
  key: string;
  name: string;
  purpose: string;
  created_at: string;
}

interface ListedKey {
  id: string;
  name: string;
  purpose: string;
  is_active: boolean;
  created_at: string;
  last_used_at: string | null;
  prefix: string;
  key?: string | null;
}

const createKey = (c: TestContext, apiKey: string, payload: unknown) =>
  c.app.inject({
    method: "POST",
    url: "/api/v1/api-keys",
    headers: c.bearer(apiKey),
    payload: payload as object,
  });

async function createKeyOk(u: TestUser, name: string, purpose = "custom"): Promise<CreatedKey> {
  const res = await createKey(ctx, u.apiKey, { name, purpose });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<CreatedKey>();
}

async function listKeys(apiKey: string, query = ""): Promise<ListedKey[]> {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/api-keys${query}`,
    headers: ctx.bearer(apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ api_keys: ListedKey[] }>().api_keys;
}

const balanceStatus = async (apiKey: string): Promise<number> =>
  (await ctx.app.inject({ method: "GET", url: "/api/v1/credits/balance", headers: ctx.bearer(apiKey) }))
    .statusCode;

describe("happy path", () => {
  test("create → 201 with the plaintext key, shown once, and exactly the spec's fields", async () => {
    const u = await ctx.createUser();
    const res = await createKey(ctx, u.apiKey, { name: "My Zap", purpose: "zapier" });
    assert.equal(res.statusCode, 201);
    const body = res.json<CreatedKey>();
    assert.deepEqual(Object.keys(body).sort(), ["created_at", "id", "key", "name", "purpose", "user_id"]);
    assert.match(body.id, UUID_RE);
    assert.equal(body.user_id, u.userId);
    assert.match(body.key, /^mpk_[0-9A-Za-z]{40}$/);
    assert.equal(body.name, "My Zap");
    assert.equal(body.purpose, "zapier");
    assert.equal(new Date(body.created_at).toISOString(), body.created_at);
  });

  for (const purpose of ["zapier", "n8n", "google sheets", "custom"]) {
    test(`purpose "${purpose}" is accepted and the new key authenticates`, async () => {
      const u = await ctx.createUser();
      const key = await createKeyOk(u, `for ${purpose}`, purpose);
      assert.equal(key.purpose, purpose);
      assert.equal(await balanceStatus(key.key), 200);
    });
  }

  test("the name is stored trimmed", async () => {
    const u = await ctx.createUser();
    assert.equal((await createKeyOk(u, "  padded  ")).name, "padded");
  });

  test("list without reveal: id, name, purpose, is_active, created_at, last_used_at, prefix — no key", async () => {
    const u = await ctx.createUser();
    const made = await createKeyOk(u, "listed", "n8n");
    const res = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(u.apiKey),
    });
    assert.equal(res.statusCode, 200);
    assert.ok(
      !res.body.includes(made.key) && !res.body.includes(u.apiKey),
      "no plaintext key anywhere in the body",
    );
    const keys = res.json<{ api_keys: ListedKey[] }>().api_keys;
    assert.deepEqual(keys.map((k) => k.id).sort(), [u.apiKeyId, made.id].sort());
    const listed = keys.find((k) => k.id === made.id)!;
    assert.deepEqual(listed, {
      id: made.id,
      name: "listed",
      purpose: "n8n",
      is_active: true,
      created_at: made.created_at,
      last_used_at: null,
      prefix: made.key.slice(0, 12),
    });
    for (const k of keys) assert.equal("key" in k, false);
  });

  test("?reveal=true returns each key's plaintext (round trip), and a revealed key authenticates", async () => {
    const u = await ctx.createUser();
    const made = [await createKeyOk(u, "one", "zapier"), await createKeyOk(u, "two", "google sheets")];
    const revealed = await listKeys(u.apiKey, "?reveal=true");
    const byId = new Map(revealed.map((k) => [k.id, k]));
    assert.equal(revealed.length, 3);
    assert.equal(byId.get(u.apiKeyId)?.key, u.apiKey);
    for (const m of made) {
      assert.equal(byId.get(m.id)?.key, m.key);
      assert.equal(byId.get(m.id)?.prefix, m.key.slice(0, 12));
    }
    assert.equal(await balanceStatus(byId.get(made[1]!.id)!.key!), 200);
  });

  test("?reveal=false lists without keys", async () => {
    const u = await ctx.createUser();
    for (const k of await listKeys(u.apiKey, "?reveal=false")) assert.equal("key" in k, false);
  });

  test("last_used_at is null until the key is used, then a timestamp", async () => {
    const u = await ctx.createUser();
    const made = await createKeyOk(u, "usage");
    assert.equal((await listKeys(u.apiKey)).find((k) => k.id === made.id)?.last_used_at, null);
    assert.equal(await balanceStatus(made.key), 200);
    // The touch is deliberately off the request path (best effort), so wait for it to land.
    let lastUsed: string | null | undefined = null;
    for (let i = 0; i < 100 && !lastUsed; i++) {
      lastUsed = (await listKeys(u.apiKey)).find((k) => k.id === made.id)?.last_used_at;
      if (!lastUsed) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(lastUsed, "last_used_at is set after use");
    assert.equal(new Date(lastUsed).toISOString(), lastUsed);
    assert.ok(Date.parse(lastUsed) >= Date.parse(made.created_at));
  });

  test("DELETE deactivates: 204, listed with is_active false, refused afterwards; repeat DELETE is 204", async () => {
    const u = await ctx.createUser();
    const made = await createKeyOk(u, "doomed");
    const del = () =>
      ctx.app.inject({ method: "DELETE", url: `/api/v1/api-keys/${made.id}`, headers: ctx.bearer(u.apiKey) });
    const first = await del();
    assert.equal(first.statusCode, 204);
    assert.equal(first.body, "");
    const listed = (await listKeys(u.apiKey)).find((k) => k.id === made.id);
    assert.equal(listed?.is_active, false);
    assert.equal(await balanceStatus(made.key), 401);
    assert.equal((await del()).statusCode, 204);
  });

  test("a user lists only their own keys", async () => {
    const alice = await ctx.createUser();
    const bob = await ctx.createUser();
    await createKeyOk(bob, "bob's");
    assert.deepEqual(
      (await listKeys(alice.apiKey, "?reveal=true")).map((k) => k.id),
      [alice.apiKeyId],
    );
  });
});

describe("errors", () => {
  // The reason names the allowed values, not ajv's "must be equal to constant".
  for (const purpose of ["slack", "Zapier", "", "google-sheets"]) {
    test(`purpose ${JSON.stringify(purpose)} → 400 with a detail on purpose listing the allowed values`, async () => {
      const u = await ctx.createUser();
      const res = await createKey(ctx, u.apiKey, { name: "x", purpose });
      assertError(res, 400, "VALIDATION_ERROR", [
        { field: "purpose", reason: "must be one of zapier, n8n, google sheets, custom" },
      ]);
    });
  }

  test("a purpose of the wrong type → 400 with a detail on purpose", async () => {
    const u = await ctx.createUser();
    const res = await createKey(ctx, u.apiKey, { name: "x", purpose: 3 });
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "purpose", reason: "must be one of zapier, n8n, google sheets, custom" },
    ]);
  });

  test("an empty name → 400 with a detail on name", async () => {
    const u = await ctx.createUser();
    const res = await createKey(ctx, u.apiKey, { name: "", purpose: "custom" });
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "name", reason: "must NOT have fewer than 1 characters" },
    ]);
  });

  test("a blank name (only spaces) → 400 with a detail on name", async () => {
    const u = await ctx.createUser();
    const res = await createKey(ctx, u.apiKey, { name: "   ", purpose: "custom" });
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "name", reason: "must not be blank" }]);
    assert.equal((await listKeys(u.apiKey)).length, 1, "nothing was created");
  });

  test("a name over 100 characters → 400", async () => {
    const u = await ctx.createUser();
    const res = await createKey(ctx, u.apiKey, { name: "n".repeat(101), purpose: "custom" });
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "name", reason: "must NOT have more than 100 characters" },
    ]);
  });

  test("missing name and purpose → two details", async () => {
    const u = await ctx.createUser();
    const res = await createKey(ctx, u.apiKey, {});
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "name", reason: "is required" },
      { field: "purpose", reason: "is required" },
    ]);
  });

  test("?reveal=maybe → 400 naming reveal", async () => {
    const u = await ctx.createUser();
    const res = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/api-keys?reveal=maybe",
      headers: ctx.bearer(u.apiKey),
    });
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "reveal", reason: "must be boolean" }]);
  });

  test("DELETE with a malformed id → 400 naming id", async () => {
    const u = await ctx.createUser();
    const res = await ctx.app.inject({
      method: "DELETE",
      url: "/api/v1/api-keys/not-a-uuid",
      headers: ctx.bearer(u.apiKey),
    });
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "id", reason: "must be a valid uuid" }]);
  });

  test("DELETE of a key that does not exist → 404 NOT_FOUND", async () => {
    const u = await ctx.createUser();
    const res = await ctx.app.inject({
      method: "DELETE",
      url: `/api/v1/api-keys/${randomUUID()}`,
      headers: ctx.bearer(u.apiKey),
    });
    assertError(res, 404, "NOT_FOUND", null);
  });
});

describe("security", () => {
  test("DELETE of another user's key → 404 (no existence leak) and the key keeps working", async () => {
    const alice = await ctx.createUser();
    const bob = await ctx.createUser();
    const res = await ctx.app.inject({
      method: "DELETE",
      url: `/api/v1/api-keys/${bob.apiKeyId}`,
      headers: ctx.bearer(alice.apiKey),
    });
    assertError(res, 404, "NOT_FOUND", null);
    assert.equal(await balanceStatus(bob.apiKey), 200);
    assert.equal((await listKeys(bob.apiKey)).find((k) => k.id === bob.apiKeyId)?.is_active, true);
  });

  test("keys are stored hashed and encrypted, never in clear", async () => {
    const u = await ctx.createUser();
    const made = await createKeyOk(u, "stored");
    const { rows } = await ctx.db.query<Record<string, unknown>>("select * from api_keys where id = $1", [
      made.id,
    ]);
    assert.equal(rows.length, 1);
    const stored = JSON.stringify(rows[0]);
    assert.ok(!stored.includes(made.key), "the plaintext appears in no column");
    assert.match(String(rows[0]!.key_hash), /^[0-9a-f]{64}$/);
  });

  test("a new key is bound to the caller, whatever the body says", async () => {
    const alice = await ctx.createUser();
    const bob = await ctx.createUser();
    const res = await createKey(ctx, alice.apiKey, { name: "x", purpose: "custom", user_id: bob.userId });
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "user_id", reason: "is not allowed" }]);
    assert.equal((await listKeys(bob.apiKey)).length, 1);
  });
});

describe("without ENCRYPTION_KEY (cluster misconfiguration)", () => {
  let noKey: TestContext;
  let user: TestUser;
  before(async () => {
    noKey = await createTestContext({ db: ctx.db, encryptionKey: null });
    // A user (and its first key) can only be created where the key is configured.
    user = await ctx.createUser(4);
  });
  after(async () => {
    await noKey.close();
  });

  test("POST /api/v1/api-keys → 500 INTERNAL_ERROR and nothing is stored", async () => {
    const res = await createKey(noKey, user.apiKey, { name: "x", purpose: "custom" });
    assertError(res, 500, "INTERNAL_ERROR", null);
    const { rows } = await ctx.db.query<{ n: number }>(
      "select count(*)::int as n from api_keys where user_id = $1",
      [user.userId],
    );
    assert.equal(rows[0]!.n, 1);
  });

  test("GET ?reveal=true → 500 INTERNAL_ERROR", async () => {
    const res = await noKey.app.inject({
      method: "GET",
      url: "/api/v1/api-keys?reveal=true",
      headers: noKey.bearer(user.apiKey),
    });
    assertError(res, 500, "INTERNAL_ERROR", null);
  });

  test("existing keys still authenticate and list (only create and reveal need the key)", async () => {
    const res = await noKey.app.inject({
      method: "GET",
      url: "/api/v1/api-keys",
      headers: noKey.bearer(user.apiKey),
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(
      res.json<{ api_keys: ListedKey[] }>().api_keys.map((k) => k.id),
      [user.apiKeyId],
    );
  });
});
