// The spec's sample endpoint POST /plants: bearer authentication and its own flat error body
// `{ error: <integer>, message }` instead of the standard envelope.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

let ctx: TestContext;
let apiKey: string;
before(async () => {
  ctx = await createTestContext();
  apiKey = (await ctx.createUser()).apiKey;
});
after(async () => {
  await ctx.close();
});

const postPlant = (payload: unknown, headers: Record<string, string> = ctx.bearer(apiKey)) =>
  ctx.app.inject({ method: "POST", url: "/plants", headers, payload: payload as object });

function assertFlatError(res: LightMyRequestResponse, status: number): string {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json<{ error: unknown; message: unknown }>();
  assert.deepEqual(Object.keys(body).sort(), ["error", "message"]);
  assert.equal(body.error, status);
  assert.ok(Number.isInteger(body.error), "error is an integer, not the standard envelope");
  assert.equal(typeof body.message, "string");
  return body.message as string;
}

describe("happy path", () => {
  test("a NewPlant with a bearer API key → 200 Plant {name, tag}", async () => {
    const res = await postPlant({ id: 7, name: "Monstera", tag: "tropical" });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { name: "Monstera", tag: "tropical" });
  });

  test("tag is optional and omitted when absent; id is not echoed", async () => {
    const res = await postPlant({ id: 8, name: "Fern" });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { name: "Fern" });
  });

  test("a bearer JWT works too", async () => {
    const session = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/auth/session",
      headers: ctx.bearer(apiKey),
    });
    const res = await postPlant(
      { id: 9, name: "Cactus" },
      ctx.bearer(session.json<{ token: string }>().token),
    );
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { name: "Cactus" });
  });
});

describe("errors (flat body)", () => {
  test("missing id → 400", async () => {
    assert.match(assertFlatError(await postPlant({ name: "Nameless" }), 400), /id/);
  });

  test("missing name → 400", async () => {
    assert.match(assertFlatError(await postPlant({ id: 1 }), 400), /name/);
  });

  test("a non-integer id → 400", async () => {
    assertFlatError(await postPlant({ id: 1.5, name: "x" }), 400);
    assertFlatError(await postPlant({ id: "1", name: "x" }), 400);
  });

  test("an id beyond int64's exact range in JSON numbers → 400", async () => {
    assertFlatError(await postPlant({ id: 2 ** 53, name: "x" }), 400);
  });

  test("malformed JSON → 400", async () => {
    const res = await ctx.app.inject({
      method: "POST",
      url: "/plants",
      headers: { ...ctx.bearer(apiKey), "content-type": "application/json" },
      payload: "{nope",
    });
    assertFlatError(res, 400);
  });
});

describe("security (flat body)", () => {
  test("no Authorization → 401", async () => {
    assertFlatError(await postPlant({ id: 1, name: "x" }, {}), 401);
  });

  test("X-API-Key alone is not bearer authentication → 401", async () => {
    assertFlatError(await postPlant({ id: 1, name: "x" }, { "x-api-key": apiKey }), 401);
  });

  test("an invalid bearer token → 401", async () => {
    assertFlatError(await postPlant({ id: 1, name: "x" }, ctx.bearer("mpk_" + "Z".repeat(40))), 401);
  });

  test("Basic credentials → 401", async () => {
    assertFlatError(
      await postPlant(
        { id: 1, name: "x" },
        { authorization: `Basic ${Buffer.from(`u:${apiKey}`).toString("base64")}` },
      ),
      401,
    );
  });

  test("authentication comes before validation: no bearer and a bad body → 401", async () => {
    assertFlatError(await postPlant({}, {}), 401);
  });
});
