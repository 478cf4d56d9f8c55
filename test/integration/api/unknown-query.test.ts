// A query parameter an operation does not define is a 400 naming it, never silently ignored:
// a misspelt filter (`?stauts=valid`, `?formt=xlsx`) otherwise returns the
// unfiltered answer as if it had been applied.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError } from "./helpers.ts";

let ctx: TestContext;
let user: TestUser;
let taskId = "";

before(async () => {
  ctx = await createTestContext();
  user = await ctx.createUser(10);
  taskId = await ctx.createTask(user, ["ann@sandbox.mailprobe.invalid"]);
});

after(async () => {
  await ctx?.close();
});

test("every read and action of tasks, jobs, downloads, api keys and deliveries refuses an unknown parameter", async () => {
  const cases: Array<[string, string]> = [
    ["GET", "/api/v1/tasks?stauts=completed"],
    ["GET", `/api/v1/tasks/${taskId}?verbose=1`],
    ["GET", `/api/v1/tasks/${taskId}/jobs?stauts=valid`],
    ["GET", `/api/v1/tasks/${taskId}/series?granularity=hour`],
    ["GET", `/api/v1/tasks/${taskId}/download?formt=xlsx`],
    ["POST", `/api/v1/tasks/${taskId}/cancel?force=true`],
    ["GET", "/api/v1/api-keys?reveal=true&show=all"],
    ["GET", "/api/v1/webhooks/deliveries?status=failed"],
  ];
  for (const [method, url] of cases) {
    const res = await ctx.app.inject({
      method: method as "GET" | "POST",
      url,
      headers: ctx.bearer(user.apiKey),
    });
    const error = assertError(res, 400, "VALIDATION_ERROR");
    assert.ok(error.details?.length, `${method} ${url}: the parameter is named`);
  }
  // The defined parameters still work.
  for (const url of [
    "/api/v1/tasks?limit=5",
    `/api/v1/tasks/${taskId}`,
    `/api/v1/tasks/${taskId}/jobs?limit=5`,
    `/api/v1/tasks/${taskId}/download?format=txt`,
    "/api/v1/api-keys?reveal=true",
  ]) {
    const res = await ctx.app.inject({ method: "GET", url, headers: ctx.bearer(user.apiKey) });
    assert.equal(res.statusCode, 200, `${url}: ${res.body.slice(0, 200)}`);
  }
});
