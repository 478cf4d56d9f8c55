// The error contract (spec "Errors"): every failure answers the standard body with the right
// status, code and per-field details, and server faults leak nothing.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { assertError, UUID_RE } from "./helpers.ts";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

const PURPOSE_REASON = "must be one of zapier, n8n, google sheets, custom";

const postKey = (apiKey: string, payload: string, contentType = "application/json") =>
  ctx.app.inject({
    method: "POST",
    url: "/api/v1/api-keys",
    headers: { ...ctx.bearer(apiKey), "content-type": contentType },
    payload,
  });

describe("schema validation", () => {
  test("two bad fields give two details, one per field", async () => {
    const u = await ctx.createUser();
    const res = await postKey(u.apiKey, JSON.stringify({ purpose: "slack" }));
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "name", reason: "is required" },
      { field: "purpose", reason: PURPOSE_REASON },
    ]);
  });

  test("an unknown body property is named in the details", async () => {
    const u = await ctx.createUser();
    const res = await postKey(u.apiKey, JSON.stringify({ name: "x", purpose: "custom", user_id: u.userId }));
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "user_id", reason: "is not allowed" }]);
  });

  test("a JSON body of the wrong type is not coerced", async () => {
    const u = await ctx.createUser();
    const res = await postKey(u.apiKey, JSON.stringify({ name: 123, purpose: "custom" }));
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "name", reason: "must be string" }]);
  });

  test("a missing body on a route that needs one", async () => {
    const u = await ctx.createUser();
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(u.apiKey),
    });
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "body", reason: "must be object" }]);
  });

  test("malformed JSON", async () => {
    const u = await ctx.createUser();
    const res = await postKey(u.apiKey, '{"name": "x", "purpose": ');
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "body", reason: "must be valid JSON" }]);
  });

  test("prototype-poisoning JSON is refused, not merged", async () => {
    const u = await ctx.createUser();
    const res = await postKey(u.apiKey, '{"name": "x", "purpose": "custom", "__proto__": {"admin": true}}');
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "body", reason: "must be valid JSON" }]);
    assert.equal(({} as Record<string, unknown>).admin, undefined);
  });
});

describe("content type", () => {
  // A browser fetch() with a string body and no header sends text/plain: the answer must say
  // what is wrong (the content type), not that the body "must be object".
  for (const contentType of [
    "text/plain",
    "text/plain;charset=UTF-8",
    "application/xml",
    "application/x-www-form-urlencoded",
  ]) {
    test(`${contentType} body → 400 naming content-type`, async () => {
      const u = await ctx.createUser();
      const res = await postKey(u.apiKey, JSON.stringify({ name: "x", purpose: "custom" }), contentType);
      assertError(res, 400, "VALIDATION_ERROR", [
        { field: "content-type", reason: "must be application/json (multipart/form-data for file uploads)" },
      ]);
    });
  }

  test("the same body as application/json is accepted (the control)", async () => {
    const u = await ctx.createUser();
    const res = await postKey(u.apiKey, JSON.stringify({ name: "x", purpose: "custom" }));
    assert.equal(res.statusCode, 201, res.body);
  });
});

describe("body size limit", () => {
  let small: TestContext;
  before(async () => {
    small = await createTestContext({ db: ctx.db, env: { BODY_LIMIT_BYTES: "2048" } });
  });
  after(async () => {
    await small.close();
  });

  test("a body above BODY_LIMIT_BYTES → 400", async () => {
    const u = await small.createUser();
    const res = await small.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: { ...small.bearer(u.apiKey), "content-type": "application/json" },
      payload: JSON.stringify({ name: "n".repeat(3000), purpose: "custom" }),
    });
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "body", reason: "exceeds the size limit" }]);
  });

  test("a body under the limit passes the size check (the control)", async () => {
    const u = await small.createUser();
    const res = await small.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: { ...small.bearer(u.apiKey), "content-type": "application/json" },
      payload: JSON.stringify({ name: "n".repeat(100), purpose: "custom" }),
    });
    assert.equal(res.statusCode, 201, res.body);
  });
});

describe("unknown routes", () => {
  test("without credentials → 404 NOT_FOUND", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/no/such/route" });
    assertError(res, 404, "NOT_FOUND", null);
  });

  test("under /api/v1 without credentials → 404 NOT_FOUND", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/api/v1/no-such-thing?x=1" });
    const err = assertError(res, 404, "NOT_FOUND", null);
    assert.ok(!err.message.includes("x=1"), "the query string is not echoed");
  });

  test("under /api/v1 with a valid key → 404 NOT_FOUND", async () => {
    const u = await ctx.createUser();
    const res = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/no-such-thing",
      headers: ctx.bearer(u.apiKey),
    });
    assertError(res, 404, "NOT_FOUND", null);
  });

  test("a known path with an unsupported method → 405 METHOD_NOT_ALLOWED with Allow", async () => {
    const u = await ctx.createUser();
    const res = await ctx.app.inject({
      method: "PUT",
      url: "/api/v1/credits/balance",
      headers: ctx.bearer(u.apiKey),
    });
    assertError(res, 405, "METHOD_NOT_ALLOWED", null);
    assert.equal(res.headers.allow, "GET, HEAD");
  });
});

describe("server faults", () => {
  // A real unexpected exception, not a stub: a private context whose api_keys table has been
  // renamed away. Every authenticated request then fails on a statement error (42P01), which the
  // error handler must turn into a generic 500 without echoing the driver's message or stack. (A
  // closed database is not that on PostgreSQL: the adapter reports "pool ended" as the database
  // being out of reach, answered 503 like an outage: test/integration/faults/db-outage.test.ts.)
  let broken: TestContext;
  let brokenKey: string;
  // The database itself gone: what /readyz and /healthz report.
  let dead: TestContext;
  before(async () => {
    broken = await createTestContext();
    brokenKey = (await broken.createUser(3)).apiKey;
    await broken.db.query("alter table api_keys rename to api_keys_gone");
    dead = await createTestContext();
    await dead.db.close();
  });
  after(async () => {
    await broken.close();
    await dead.close();
  });

  test("an endpoint hitting a dead database → 500 INTERNAL_ERROR with a generic body", async () => {
    const res = await broken.app.inject({
      method: "GET",
      url: "/api/v1/credits/balance",
      headers: { ...broken.bearer(brokenKey), "x-request-id": "fault-1" },
    });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(res.json(), {
      error: { code: "INTERNAL_ERROR", message: "An internal error occurred" },
    });
    assert.equal(res.headers["x-request-id"], "fault-1");
    assert.doesNotMatch(res.body, /api_keys|relation|pglite|stack|at \w|\.ts:/i);
  });

  test("/readyz with a dead database → 503 SERVICE_UNAVAILABLE with Retry-After", async () => {
    const res = await dead.app.inject({ method: "GET", url: "/readyz" });
    assertError(res, 503, "SERVICE_UNAVAILABLE", null);
    assert.equal(res.headers["retry-after"], "5");
  });

  test("/healthz (liveness) stays 200 with a dead database", async () => {
    const res = await dead.app.inject({ method: "GET", url: "/healthz" });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: "ok" });
  });

  test("the 500 still carries a generated request id", async () => {
    const res = await broken.app.inject({
      method: "GET",
      url: "/api/v1/credits/balance",
      headers: broken.bearer(brokenKey),
    });
    assert.equal(res.statusCode, 500);
    assert.match(String(res.headers["x-request-id"]), UUID_RE);
  });
});

describe("an embedded engine that stopped for good", () => {
  // PGlite's backend exits on COPY … FROM STDIN through exec() (upstream electric-sql/pglite#1058),
  // the same death a PANIC on a full disk causes, but on demand. Before, /healthz answered 200
  // for ever while every data request got 503, so no supervisor restarted the process.
  let stopped: TestContext | null = null;
  let key = "";
  before(async () => {
    if (process.env.TEST_DATABASE_URL) return;
    stopped = await createTestContext();
    key = (await stopped.createUser(3)).apiKey;
  });
  after(async () => {
    await stopped?.close();
  });

  test("/healthz answers 503 (restart this process), /readyz and data requests 503", async (t) => {
    if (!stopped) {
      t.skip("PostgreSQL reconnects by itself: only the embedded engine can stop for good");
      return;
    }
    assert.equal((await stopped.app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
    await assert.rejects(stopped.db.exec("copy users from stdin"), { name: "EmbeddedDatabaseStoppedError" });

    const health = await stopped.app.inject({ method: "GET", url: "/healthz" });
    const error = assertError(health, 503, "SERVICE_UNAVAILABLE", null);
    assert.match(error.message, /^Restart this process: the embedded database stopped/);
    assert.equal(health.headers["retry-after"], undefined, "waiting does not help: a restart does");
    assertError(
      await stopped.app.inject({ method: "GET", url: "/readyz" }),
      503,
      "SERVICE_UNAVAILABLE",
      null,
    );
    const balance = await stopped.app.inject({
      method: "GET",
      url: "/api/v1/credits/balance",
      headers: stopped.bearer(key),
    });
    assertError(balance, 503, "SERVICE_UNAVAILABLE", null);
  });
});
