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

// /plants used to call the authenticator alone, so 100 wrong keys in parallel
// answered 100 × 401 and never 429. It now goes through the API's admission (auth plugin).
describe("rate limiting, the same as the API", () => {
  const LIMITS = { RATE_LIMIT_PER_SECOND: "2", RATE_LIMIT_BURST: "3" };
  const plant = (c: TestContext, headers: Record<string, string>) =>
    c.app.inject({ method: "POST", url: "/plants", headers, payload: { id: 1, name: "Ivy" } });

  test("100 wrong keys in parallel → only the allowance gets 401, the rest 429 with Retry-After, flat body", async () => {
    const limited = await createTestContext({ db: ctx.db, env: LIMITS });
    try {
      const started = Date.now();
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          plant(limited, { authorization: `Bearer mpk_${String(i).padStart(40, "x")}` }),
        ),
      );
      // The sustained allowance is a 1 s window of 2: on a loaded machine the 100 requests can
      // span a few windows, each of which lets 2 more through. Usually 3 × 401 (the burst).
      const windows = Math.ceil((Date.now() - started) / 1000);
      const count = (s: number) => results.filter((r) => r.statusCode === s).length;
      assert.ok(count(401) >= 3 && count(401) <= 3 + 2 * windows, `${count(401)} × 401 in ${windows} s`);
      assert.equal(count(429) + count(401), 100);
      const refused = results.find((r) => r.statusCode === 429)!;
      assertFlatError(refused, 429);
      assert.match(String(refused.headers["retry-after"]), /^\d+$/);
      // The address is throttled now: a correct key gets 429 too, here and on the API.
      const u = await limited.createUser();
      assertFlatError(await plant(limited, limited.bearer(u.apiKey)), 429);
      const api = await limited.app.inject({
        method: "GET",
        url: "/api/v1/credits/balance",
        headers: limited.bearer(u.apiKey),
      });
      assert.equal(api.statusCode, 429);
    } finally {
      await limited.close();
    }
  });

  test("a good key is limited per credential and per user, sharing the allowance with the API", async () => {
    const limited = await createTestContext({ db: ctx.db, env: LIMITS });
    try {
      const u = await limited.createUser();
      const statuses = [];
      statuses.push(
        (
          await limited.app.inject({
            method: "GET",
            url: "/api/v1/credits/balance",
            headers: limited.bearer(u.apiKey),
          })
        ).statusCode,
      );
      for (let i = 0; i < 3; i++) statuses.push((await plant(limited, limited.bearer(u.apiKey))).statusCode);
      assert.deepEqual(statuses, [200, 200, 200, 429]);
    } finally {
      await limited.close();
    }
  });
});
