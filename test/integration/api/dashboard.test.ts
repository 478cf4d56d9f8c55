// The web dashboard served by `serve` (src/http/plugins/dashboard.ts): index.html at / with the
// security headers, hashed assets with a long cache, API 404s untouched, and a clear 503 when
// web/dist has not been built.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Fastify from "fastify";
import { DASHBOARD_DIST_DIR, dashboardPlugin } from "../../../src/http/plugins/dashboard.ts";
import { installErrorHandlers } from "../../../src/http/plugins/error-handler.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { assertError } from "./helpers.ts";

const built = existsSync(join(DASHBOARD_DIST_DIR, "index.html"));
const skipUnbuilt = built
  ? false
  : "web/dist is not built (npm run build:web; npm ci does it through prepare)";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

describe("dashboard built (web/dist)", { skip: skipUnbuilt }, () => {
  test("/ serves index.html, not cached, with the CSP and the other security headers", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/" });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^text\/html/);
    assert.equal(res.headers["cache-control"], "no-cache");
    const csp = String(res.headers["content-security-policy"]);
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(
      csp,
      /unsafe-inline|unsafe-eval|https?:/,
      "nothing from other origins, no inline code",
    );
    assert.equal(res.headers["x-content-type-options"], "nosniff");
    assert.equal(res.headers["referrer-policy"], "no-referrer");
    assert.match(res.body, /<div id="app"><\/div>/);
    // Every asset is local: no absolute URL to another origin in the page.
    assert.doesNotMatch(res.body, /(src|href)="(https?:)?\/\//);
  });

  test("hashed assets: right content type, a year's immutable cache, gzip when asked", async () => {
    const page = await ctx.app.inject({ method: "GET", url: "/" });
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(page.body)?.[1];
    const style = /href="(\/assets\/[^"]+\.css)"/.exec(page.body)?.[1];
    assert.ok(script && style, "index.html names its script and stylesheet under /assets/");

    const js = await ctx.app.inject({ method: "GET", url: script });
    assert.equal(js.statusCode, 200);
    assert.match(String(js.headers["content-type"]), /javascript/);
    assert.match(String(js.headers["cache-control"]), /max-age=31536000/);
    assert.match(String(js.headers["cache-control"]), /immutable/);
    assert.equal(js.headers["x-content-type-options"], "nosniff");

    const css = await ctx.app.inject({ method: "GET", url: style, headers: { "accept-encoding": "gzip" } });
    assert.equal(css.statusCode, 200);
    assert.match(String(css.headers["content-type"]), /^text\/css/);
    assert.equal(css.headers["content-encoding"], "gzip");
  });

  test("an unknown asset or the assets folder itself is the JSON 404 envelope, not a page", async () => {
    for (const url of ["/assets/nope-123.js", "/assets/"]) {
      assertError(await ctx.app.inject({ method: "GET", url }), 404, "NOT_FOUND", null);
    }
  });
});

describe("the dashboard leaves the API alone", () => {
  test("GET /api/v1/nope is still the JSON 404 envelope", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/api/v1/nope" });
    assertError(res, 404, "NOT_FOUND", null);
    assert.equal(res.headers["content-security-policy"], undefined, "dashboard headers stay on its routes");
  });

  test("an API route answers as before (401 without credentials)", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/api/v1/credits/balance" });
    assertError(res, 401, "UNAUTHORIZED", null);
  });

  test("other root paths are not routes (no SPA fallback: the app routes with #/…)", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/tasks" });
    assertError(res, 404, "NOT_FOUND", null);
  });
});

describe("dashboard not built", () => {
  let empty: string;
  before(() => {
    empty = mkdtempSync(join(tmpdir(), "mailprobe-web-empty-"));
  });
  after(() => rmSync(empty, { recursive: true, force: true }));

  const appOn = async (distDir: string) => {
    const app = Fastify({ logger: false });
    installErrorHandlers(app);
    await app.register(dashboardPlugin, { distDir });
    await app.ready();
    return app;
  };

  test("/ answers 503 saying what to run; the process does not crash", async () => {
    assert.deepEqual(readdirSync(empty), []);
    const app = await appOn(empty);
    try {
      const res = await app.inject({ method: "GET", url: "/" });
      assert.equal(res.statusCode, 503);
      assert.match(String(res.headers["content-type"]), /^text\/html/);
      assert.match(res.body, /npm run build:web/);
      assert.equal(res.headers["x-content-type-options"], "nosniff");
      const asset = await app.inject({ method: "GET", url: "/assets/index-abc.js" });
      assertError(asset, 404, "NOT_FOUND", null);
      const api = await app.inject({ method: "GET", url: "/api/v1/nope" });
      assertError(api, 404, "NOT_FOUND", null);
    } finally {
      await app.close();
    }
  });

  test("a folder that does not exist at all behaves the same", async () => {
    const app = await appOn(join(empty, "missing"));
    try {
      const res = await app.inject({ method: "GET", url: "/" });
      assert.equal(res.statusCode, 503);
    } finally {
      await app.close();
    }
  });
});
