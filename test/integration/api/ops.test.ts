// Operational endpoints (liveness, readiness, metrics, OpenAPI, docs) and the request id that
// every response carries.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { testEngine } from "../../support/test-db.ts";
import { assertError, UUID_RE } from "./helpers.ts";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

describe("health", () => {
  test("/healthz → 200 ok without credentials", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/healthz" });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: "ok" });
  });

  test("/readyz → 200 naming the database engine, no warnings with a fully-qualified HELO name", async () => {
    const good = await createTestContext({ db: ctx.db, env: { SMTP_HELO_NAME: "probe.mailprobe.test" } });
    try {
      const res = await good.app.inject({ method: "GET", url: "/readyz" });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), { status: "ready", database: testEngine(), warnings: [] });
    } finally {
      await good.close();
    }
  });

  test("/readyz with a bare HELO name: still ready (200), the warning says what to set", async () => {
    const bare = await createTestContext({ db: ctx.db, env: { SMTP_HELO_NAME: "web-1" } });
    try {
      const res = await bare.app.inject({ method: "GET", url: "/readyz" });
      assert.equal(res.statusCode, 200);
      const body = res.json();
      assert.equal(body.status, "ready");
      assert.equal(body.warnings.length, 1);
      assert.deepEqual(Object.keys(body.warnings[0]).sort(), ["code", "message", "variable"]);
      assert.equal(body.warnings[0].code, "helo_name_not_fqdn");
      assert.equal(body.warnings[0].variable, "SMTP_HELO_NAME");
      assert.match(body.warnings[0].message, /Helo command rejected.*SMTP_HELO_NAME=mail\.example\.com/);
    } finally {
      await bare.close();
    }
  });
});

describe("/metrics", () => {
  test("Prometheus text counting requests by route pattern and status", async () => {
    const u = await ctx.createUser();
    // A distinctive route and status that no other test of this file produces.
    const del = await ctx.app.inject({
      method: "DELETE",
      url: "/api/v1/api-keys/not-a-uuid",
      headers: ctx.bearer(u.apiKey),
    });
    assert.equal(del.statusCode, 400);
    const res = await ctx.app.inject({ method: "GET", url: "/metrics" });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
    assert.match(res.body, /^# TYPE mailprobe_http_requests_total counter$/m);
    // The route pattern, never the raw URL, is the label (bounded cardinality).
    assert.match(
      res.body,
      /^mailprobe_http_requests_total\{method="DELETE",route="\/api\/v1\/api-keys\/:id",status="400"\} 1$/m,
    );
    assert.doesNotMatch(res.body, /not-a-uuid/);
    assert.match(res.body, /^# TYPE mailprobe_http_request_duration_seconds histogram$/m);
  });

  test("with METRICS_TOKEN set: 401 in the envelope without it or with a wrong one, 200 with Bearer <token>", async () => {
    const token = "metrics-token-0123456789abcdef";
    const guarded = await createTestContext({ db: ctx.db, env: { METRICS_TOKEN: token } });
    try {
      const get = (headers: Record<string, string>) =>
        guarded.app.inject({ method: "GET", url: "/metrics", headers });
      assertError(await get({}), 401, "UNAUTHORIZED", null);
      assertError(await get({ authorization: "Bearer wrong" }), 401, "UNAUTHORIZED", null);
      assertError(await get({ authorization: `Bearer ${token}x` }), 401, "UNAUTHORIZED", null);
      assertError(await get({ "x-api-key": token }), 401, "UNAUTHORIZED", null);
      // An API key is not the metrics token.
      const u = await guarded.createUser();
      assertError(await get(guarded.bearer(u.apiKey)), 401, "UNAUTHORIZED", null);
      const ok = await get({ authorization: `Bearer ${token}` });
      assert.equal(ok.statusCode, 200);
      assert.match(ok.body, /^# TYPE mailprobe_http_requests_total counter$/m);
    } finally {
      await guarded.close();
    }
  });

  test("wrong metrics tokens spend the address's failed-auth allowance (429 after it)", async () => {
    const guarded = await createTestContext({
      db: ctx.db,
      env: {
        METRICS_TOKEN: "metrics-token-0123456789abcdef",
        RATE_LIMIT_PER_SECOND: "2",
        RATE_LIMIT_BURST: "3",
      },
    });
    try {
      const statuses = [];
      for (let i = 0; i < 4; i++)
        statuses.push(
          (
            await guarded.app.inject({
              method: "GET",
              url: "/metrics",
              headers: { authorization: `Bearer g${i}` },
            })
          ).statusCode,
        );
      assert.deepEqual(statuses, [401, 401, 401, 429]);
    } finally {
      await guarded.close();
    }
  });
});

describe("/openapi.json", () => {
  let withAdmin: TestContext;
  let doc: {
    openapi: string;
    info: { title: string; version: string };
    paths: Record<
      string,
      Record<
        string,
        { responses?: Record<string, unknown>; parameters?: Array<{ name: string; in: string }> }
      >
    >;
    components?: Record<string, Record<string, unknown>>;
  };
  before(async () => {
    // The admin API is only mounted with an admin token (embedded `serve`); it must still be hidden.
    withAdmin = await createTestContext({ db: ctx.db, adminToken: "test-admin-token" });
    const res = await withAdmin.app.inject({ method: "GET", url: "/openapi.json" });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^application\/json/);
    doc = res.json();
  });
  after(async () => {
    await withAdmin.close();
  });

  test("is an OpenAPI 3 document with the public paths", () => {
    assert.match(doc.openapi, /^3\.\d+\.\d+$/);
    assert.equal(typeof doc.info.title, "string");
    assert.equal(typeof doc.info.version, "string");
    for (const path of [
      "/api/v1/api-keys",
      "/api/v1/credits/balance",
      "/api/v1/credits/transactions",
      "/plants",
    ]) {
      assert.ok(doc.paths[path], `${path} is documented`);
    }
    assert.ok(doc.paths["/api/v1/api-keys"]?.post && doc.paths["/api/v1/api-keys"]?.get);
    assert.ok(doc.paths["/plants"]?.post);
  });

  test("hides the admin API and the ops plumbing", () => {
    const paths = Object.keys(doc.paths);
    assert.deepEqual(
      paths.filter((p) => p.startsWith("/admin")),
      [],
    );
    assert.ok(!paths.includes("/openapi.json") && !paths.includes("/metrics"));
  });

  test("every operation has responses, every path parameter is declared, every $ref resolves", () => {
    const methods = new Set(["get", "put", "post", "delete", "patch", "head", "options", "trace"]);
    for (const [path, item] of Object.entries(doc.paths)) {
      assert.ok(path.startsWith("/"), path);
      for (const [method, op] of Object.entries(item)) {
        if (!methods.has(method)) continue;
        assert.ok(op.responses && Object.keys(op.responses).length > 0, `${method} ${path} has responses`);
        for (const name of [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])) {
          assert.ok(
            op.parameters?.some((p) => p.in === "path" && p.name === name),
            `${method} ${path} declares {${name}}`,
          );
        }
      }
    }
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
    for (const ref of refs) {
      assert.match(ref, /^#\//, `local ref ${ref}`);
      const target = ref
        .slice(2)
        .split("/")
        .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
      assert.ok(target !== undefined, `${ref} resolves`);
    }
  });
});

describe("/docs", () => {
  test("serves the Swagger UI (HTML) or redirects to it", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/docs" });
    if (res.statusCode >= 300 && res.statusCode < 400) {
      assert.ok(res.headers.location, "a redirect has a Location");
    } else {
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers["content-type"]), /^text\/html/);
      assert.match(res.body, /swagger/i);
    }
  });
});

describe("X-Request-ID", () => {
  test("a caller's id is echoed", async () => {
    const res = await ctx.app.inject({
      method: "GET",
      url: "/healthz",
      headers: { "x-request-id": "trace-abc_123.4" },
    });
    assert.equal(res.headers["x-request-id"], "trace-abc_123.4");
  });

  test("is echoed on errors too (401)", async () => {
    const res = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/credits/balance",
      headers: { "x-request-id": "req-401" },
    });
    assert.equal(res.statusCode, 401);
    assert.equal(res.headers["x-request-id"], "req-401");
  });

  test("a UUID is generated when absent, a new one per request", async () => {
    const a = await ctx.app.inject({ method: "GET", url: "/healthz" });
    const b = await ctx.app.inject({ method: "GET", url: "/healthz" });
    assert.match(String(a.headers["x-request-id"]), UUID_RE);
    assert.match(String(b.headers["x-request-id"]), UUID_RE);
    assert.notEqual(a.headers["x-request-id"], b.headers["x-request-id"]);
  });

  test("200 characters are accepted (the bound)", async () => {
    const id = "r".repeat(200);
    const res = await ctx.app.inject({ method: "GET", url: "/healthz", headers: { "x-request-id": id } });
    assert.equal(res.headers["x-request-id"], id);
  });

  for (const [label, hostile] of [
    ["spaces", "a b c"],
    ["a newline (log injection)", 'ok\n{"level":60,"msg":"forged"}'],
    ["a tab", "a\tb"],
    ["201 characters", "r".repeat(201)],
    ["non-ASCII", "réq-1"],
  ] as const) {
    test(`a hostile value with ${label} is replaced by a generated UUID`, async () => {
      const res = await ctx.app.inject({
        method: "GET",
        url: "/healthz",
        headers: { "x-request-id": hostile },
      });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers["x-request-id"]), UUID_RE);
    });
  }
});
