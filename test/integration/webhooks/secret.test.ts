// GET /api/v1/webhooks/secret (DESIGN §5 "Webhook"): the caller's Standard Webhooks secret.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { assertError, describeAuthMatrix } from "../api/helpers.ts";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

const getSecret = (headers: Record<string, string>) =>
  ctx.app.inject({ method: "GET", url: "/api/v1/webhooks/secret", headers });

describe("happy path", () => {
  test("returns exactly { secret, previous_secret_expires_at } — the user's whsec_ secret, usable by standardwebhooks", async () => {
    const u = await ctx.createUser();
    const res = await getSecret(ctx.bearer(u.apiKey));
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers["content-type"]), /^application\/json/);
    const body = res.json<{ secret: string; previous_secret_expires_at: string | null }>();
    assert.deepEqual(Object.keys(body), ["secret", "previous_secret_expires_at"]);
    assert.equal(body.previous_secret_expires_at, null, "never rotated");
    assert.match(body.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    const { rows } = await ctx.db.query<{ webhook_secret: string }>(
      "select webhook_secret from users where id = $1",
      [u.userId],
    );
    // Stored sealed (webhooks/secret-cipher.ts): the answer is what the stored value opens to.
    assert.match(rows[0]!.webhook_secret, /^enc1:/);
    assert.equal(body.secret, ctx.services.webhookSecrets.open(u.userId, rows[0]!.webhook_secret));
    assert.doesNotThrow(() => new Webhook(body.secret));
  });

  test("is stable across calls, the same through X-API-Key and a dashboard JWT, and differs per user", async () => {
    const a = await ctx.createUser();
    const b = await ctx.createUser();
    const first = (await getSecret(ctx.bearer(a.apiKey))).json<{ secret: string }>().secret;
    const viaHeader = (await getSecret({ "x-api-key": a.apiKey })).json<{ secret: string }>().secret;
    const jwt = await ctx.services.sessions.open(a.userId, a.apiKeyId);
    assert.ok(jwt);
    const viaJwt = await getSecret(ctx.bearer(jwt.token));
    assert.equal(viaJwt.statusCode, 200, viaJwt.body);
    assert.equal(viaHeader, first);
    assert.equal(viaJwt.json<{ secret: string }>().secret, first);
    const other = (await getSecret(ctx.bearer(b.apiKey))).json<{ secret: string }>().secret;
    assert.notEqual(other, first);
  });
});

describe("errors", () => {
  // A session is bound to the key that opened it, so one for a user (and key) that does not exist
  // is refused at authentication (it used to reach the route and answer 404).
  test("a signed JWT for a user and key that do not exist → 401 UNAUTHORIZED", async () => {
    const jwt = await ctx.services.jwt.issue(
      randomUUID(),
      randomUUID(),
      { id: randomUUID(), generation: 0 },
      new Date(),
    );
    assert.ok(jwt);
    assertError(await getSecret(ctx.bearer(jwt.token)), 401, "UNAUTHORIZED", null);
  });
});

describe("security", () => {
  describeAuthMatrix(() => ctx, [{ method: "GET", url: "/api/v1/webhooks/secret" }]);
});
