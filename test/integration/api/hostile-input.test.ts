// No request can take the server down: hostile bodies, strings and URLs are refused at the edge,
// cheaply, in the spec's error envelope, naming what is wrong.
//  - Sizes before items: an array's length is checked before ajv looks at any item (with
//    allErrors it would report every one), and every error lists at most 20 details.
//  - Text PostgreSQL cannot store (NUL, unpaired surrogates) is a 400 naming the field, on every
//    route and request part, multipart included; never a 500 from the database.
//  - Router and HTTP-parser refusals use the envelope too.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import Fastify from "fastify";
import { Type } from "typebox";
import {
  assertBoundedSchema,
  assertClosedBody,
  installValidators,
} from "../../../src/http/plugins/validation.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError } from "./helpers.ts";

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

const NUL_REASON = "must not contain a NUL character (\\u0000)";
const SURROGATE_REASON = "must be valid Unicode text (it contains an unpaired surrogate)";

const post = (user: TestUser, url: string, payload: string | Buffer, headers: Record<string, string> = {}) =>
  ctx.app.inject({
    method: "POST",
    url,
    headers: { ...ctx.bearer(user.apiKey), "content-type": "application/json", ...headers },
    payload,
  });

const countTasks = async (user: TestUser): Promise<number> =>
  Number(
    (await ctx.db.query<{ n: number }>("select count(*) as n from tasks where user_id = $1", [user.userId]))
      .rows[0]!.n,
  );

const balanceOf = async (user: TestUser): Promise<number> =>
  Number(
    (await ctx.db.query<{ balance: number }>("select balance from users where id = $1", [user.userId]))
      .rows[0]!.balance,
  );

/** `"k0":1,"k1":1,…`: `n` properties, to go inside braces. */
const props = (n: number): string => Array.from({ length: n }, (_, i) => `"k${i}":1`).join(",");

/** `{"emails":[1,1,…,1]}` of exactly `bytes` bytes, built without a 2.6 M-element JS array. */
function arrayOfOnes(bytes: number): { body: Buffer; items: number } {
  const head = Buffer.from('{"emails":[');
  const tail = Buffer.from("1]}");
  const items = Math.floor((bytes - head.length - tail.length) / 2) + 1;
  const body = Buffer.alloc(head.length + (items - 1) * 2 + tail.length);
  head.copy(body, 0);
  body.fill("1,", head.length, body.length - tail.length);
  tail.copy(body, body.length - tail.length);
  return { body, items };
}

describe("sizes are checked before items; error details are capped", () => {
  // Measured on a body of 2.6 M items (the default 5 MiB BODY_LIMIT_BYTES): before, 400
  // with a 140 MB error listing every item, 27 s of blocked event loop and +3 GB RSS; with
  // maxItems checked first, ~150 ms and +41 MB; now refused by the shape scan before JSON.parse
  // (src/lib/json-shape.ts), ~10 ms. The bounds below are generous for CI.
  test("2.6 M non-string items at BODY_LIMIT_BYTES → 400 naming emails, small and fast", async () => {
    const user = await ctx.createUser(10);
    const { body, items } = arrayOfOnes(ctx.config.bodyLimitBytes);
    assert.equal(body.length, ctx.config.bodyLimitBytes);
    assert.ok(items > 2_600_000);
    const peakBefore = process.resourceUsage().maxRSS;
    const started = performance.now();
    const res = await post(user, "/api/v1/tasks", body);
    const elapsedMs = performance.now() - started;
    const peakGrowthMb = (process.resourceUsage().maxRSS - peakBefore) / 1024;
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "emails", reason: "has more than 100,000 items" }]);
    assert.ok(res.rawPayload.length < 1024, `answer is ${res.rawPayload.length} bytes`);
    assert.ok(elapsedMs < 5_000, `took ${Math.round(elapsedMs)} ms`);
    assert.ok(peakGrowthMb < 512, `peak RSS grew by ${Math.round(peakGrowthMb)} MB`);
    assert.equal(await countTasks(user), 0);
  });

  test("10,000 non-string items (the limit) → the first 20 details and details_truncated 9,980", async () => {
    const user = await ctx.createUser(10);
    const res = await post(user, "/api/v1/tasks", JSON.stringify({ emails: new Array(10_000).fill(1) }));
    const err = assertError(res, 400, "VALIDATION_ERROR");
    assert.deepEqual(
      err.details,
      Array.from({ length: 20 }, (_, i) => ({ field: `emails[${i}]`, reason: "must be string" })),
    );
    assert.equal((err as { details_truncated?: number }).details_truncated, 9_980);
  });

  test("30 entries that are not addresses → 20 details and details_truncated 10", async () => {
    const user = await ctx.createUser(100);
    const res = await post(
      user,
      "/api/v1/tasks",
      JSON.stringify({ emails: Array.from({ length: 30 }, (_, i) => `bad${i}`) }),
    );
    const err = assertError(res, 400, "VALIDATION_ERROR");
    assert.equal(err.details?.length, 20);
    assert.equal(err.details?.[19]?.field, "emails[19]");
    assert.equal((err as { details_truncated?: number }).details_truncated, 10);
    assert.match(err.message, /30 of 30 entries/);
  });

  test("an error with 20 details or fewer has no details_truncated", async () => {
    const user = await ctx.createUser(10);
    const res = await post(user, "/api/v1/tasks", JSON.stringify({ emails: ["a", "b"] }));
    const body = res.json<{ error: Record<string, unknown> }>();
    assert.equal(res.statusCode, 400);
    assert.ok(!("details_truncated" in body.error));
  });

  test("998 unknown properties (1,000 in all: the shape bound) → one detail, not 998", async () => {
    const user = await ctx.createUser(10);
    const res = await post(user, "/api/v1/api-keys", `{"name":"x","purpose":"custom",${props(998)}}`);
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "body", reason: "has 998 properties that are not allowed (allowed: name, purpose)" },
    ]);
  });

  test("250,000 unknown properties (2.8 MB) → 400 naming the limit before parsing; nothing verified", async () => {
    const user = await ctx.createUser(10);
    const body = `{"email":"bob@example.com",${props(250_000)}}`;
    assert.ok(body.length > 2_800_000);
    const started = performance.now();
    const res = await post(user, "/api/v1/verify", body);
    const elapsedMs = performance.now() - started;
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "body", reason: "has more than 1,000 properties" }]);
    assert.ok(elapsedMs < 5_000, `took ${Math.round(elapsedMs)} ms`);
    assert.equal(await balanceOf(user), 10);
  });

  test("properties per object: 1,000 pass the shape bound (the schema answers), 1,001 do not", async () => {
    const user = await ctx.createUser(10);
    const atLimit = await post(user, "/api/v1/verify", `{"email":"bob@example.com",${props(999)}}`);
    assertError(atLimit, 400, "VALIDATION_ERROR", [
      { field: "body", reason: "has 999 properties that are not allowed (allowed: email)" },
    ]);
    const over = await post(user, "/api/v1/verify", `{"email":"bob@example.com",${props(1_000)}}`);
    assertError(over, 400, "VALIDATION_ERROR", [{ field: "body", reason: "has more than 1,000 properties" }]);
    // Nested objects are bounded alike, and named.
    const nested = await post(user, "/api/v1/tasks", `{"emails":[{${props(1_001)}}]}`);
    assertError(nested, 400, "VALIDATION_ERROR", [
      { field: "emails[]", reason: "has more than 1,000 properties" },
    ]);
    assert.equal(await countTasks(user), 0);
  });

  test("properties in all: 10,000 pass the shape bound (the schema answers), 10,001 do not", async () => {
    const user = await ctx.createUser(10);
    // 2 top-level properties + 9 objects of 1,000 + one of 998 = 10,000.
    const items = [...Array.from({ length: 9 }, () => `{${props(1_000)}}`), `{${props(998)}}`].join(",");
    const atLimit = await post(user, "/api/v1/tasks", `{"emails":[${items}],"webhook_url":"x"}`);
    const err = assertError(atLimit, 400, "VALIDATION_ERROR");
    assert.deepEqual(err.details?.[0], { field: "emails[0]", reason: "must be string" });
    const over = await post(user, "/api/v1/tasks", `{"emails":[${items},{"k":1}],"webhook_url":"x"}`);
    assertError(over, 400, "VALIDATION_ERROR", [
      { field: "body", reason: "has more than 10,000 properties in all" },
    ]);
    assert.equal(await countTasks(user), 0);
  });

  test("every request body refuses unknown properties: verify, tasks", async () => {
    const user = await ctx.createUser(10);
    assertError(
      await post(user, "/api/v1/verify", JSON.stringify({ email: "bob@example.com", mode: "fast" })),
      400,
      "VALIDATION_ERROR",
      [{ field: "mode", reason: "is not allowed" }],
    );
    assertError(
      await post(
        user,
        "/api/v1/tasks",
        JSON.stringify({ emails: ["bob@example.com"], user_id: user.userId }),
      ),
      400,
      "VALIDATION_ERROR",
      [{ field: "user_id", reason: "is not allowed" }],
    );
    assert.equal(await countTasks(user), 0);
    assert.equal(await balanceOf(user), 10);
  });

  test("a few unknown properties are still named one by one", async () => {
    const user = await ctx.createUser(10);
    const res = await post(
      user,
      "/api/v1/api-keys",
      JSON.stringify({ name: "x", purpose: "custom", a: 1, b: 2 }),
    );
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "a", reason: "is not allowed" },
      { field: "b", reason: "is not allowed" },
    ]);
  });

  test("a body nested 1,000,000 levels deep → 400 before it is parsed, not a stack overflow", async () => {
    const user = await ctx.createUser(10);
    const depth = 1_000_000;
    const res = await post(user, "/api/v1/tasks", `{"emails":${"[".repeat(depth)}${"]".repeat(depth)}}`);
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "emails[]", reason: "nests deeper than 32 levels" }]);
  });

  test("just over the spec's list limit still gets the schema's own message (the shape bound is 10× it)", async () => {
    const user = await ctx.createUser(10);
    const res = await post(
      user,
      "/api/v1/tasks",
      JSON.stringify({ emails: new Array(10_001).fill("a@b.test") }),
    );
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "emails", reason: "must contain at most 10000 items (got 10001)" },
    ]);
  });

  test("every request body schema is closed: an open one fails when the route is added", async () => {
    assert.throws(
      () => assertClosedBody(Type.Object({ email: Type.String() }), "POST /x body"),
      /POST \/x body: a body object needs additionalProperties: false/,
    );
    assert.throws(
      () =>
        assertClosedBody(
          Type.Object(
            { a: Type.Array(Type.Object({ b: Type.String() }), { maxItems: 2 }) },
            { additionalProperties: false },
          ),
        ),
      /#\/properties\/a\/items: a body object needs additionalProperties: false/,
    );
    assert.doesNotThrow(() =>
      assertClosedBody(Type.Object({ email: Type.String() }, { additionalProperties: false })),
    );
    const app = Fastify();
    installValidators(app, []);
    app.post("/x", { schema: { body: Type.Object({ email: Type.String() }) } }, async () => ({}));
    await assert.rejects(async () => {
      await app.ready();
    }, /needs additionalProperties: false/);
    await app.close();
  });

  test("every request schema bounds its arrays: an unbounded one fails when the route is added", async () => {
    assert.throws(
      () => assertBoundedSchema(Type.Object({ list: Type.Array(Type.String()) }), "POST /x body"),
      /POST \/x body\/properties\/list: an array needs maxItems/,
    );
    assert.throws(
      () => assertBoundedSchema(Type.Record(Type.String(), Type.String())),
      /needs maxProperties/,
    );
    assert.doesNotThrow(() =>
      assertBoundedSchema(Type.Object({ list: Type.Array(Type.String(), { maxItems: 5 }) })),
    );
    // …and the app's validator compiler applies it to every route (the real app built above
    // proves that all of today's schemas pass).
    const app = Fastify();
    installValidators(app, []);
    app.post("/x", { schema: { body: Type.Object({ list: Type.Array(Type.String()) }) } }, async () => ({}));
    await assert.rejects(async () => {
      await app.ready();
    }, /an array needs maxItems/);
    await app.close();
  });
});

describe("text PostgreSQL cannot store is a 400 naming the field (JSON, query, params, headers)", () => {
  const cases: Array<[string, (u: TestUser) => ReturnType<typeof post>, string, string]> = [
    [
      "a NUL in the realtime email",
      (u) => post(u, "/api/v1/verify", JSON.stringify({ email: "a\u0000b@example.com" })),
      "email",
      NUL_REASON,
    ],
    [
      "a NUL in a task email",
      (u) => post(u, "/api/v1/tasks", JSON.stringify({ emails: ["ok@example.com", "a\u0000b@example.com"] })),
      "emails[1]",
      NUL_REASON,
    ],
    [
      "a NUL in webhook_url",
      (u) =>
        post(
          u,
          "/api/v1/tasks",
          JSON.stringify({ emails: ["ok@example.com"], webhook_url: "https://h.example/\u0000" }),
        ),
      "webhook_url",
      NUL_REASON,
    ],
    [
      "a NUL in the Idempotency-Key header",
      (u) =>
        post(u, "/api/v1/tasks", JSON.stringify({ emails: ["ok@example.com"] }), {
          "idempotency-key": "k\u0000",
        }),
      "idempotency-key",
      NUL_REASON,
    ],
    [
      "a NUL in an API key name",
      (u) => post(u, "/api/v1/api-keys", JSON.stringify({ name: "n\u0000", purpose: "custom" })),
      "name",
      NUL_REASON,
    ],
    [
      "an unpaired surrogate in an API key name (it would be stored as U+FFFD)",
      (u) => post(u, "/api/v1/api-keys", '{"name":"n\\ud800","purpose":"custom"}'),
      "name",
      SURROGATE_REASON,
    ],
    [
      "a NUL in a property name",
      (u) => post(u, "/api/v1/verify", '{"email":"a@example.com","x\\u0000":1}'),
      "body",
      `has a property name that ${NUL_REASON}`,
    ],
    [
      "a NUL in a query parameter",
      (u) =>
        ctx.app.inject({
          method: "GET",
          url: "/api/v1/tasks?created_after=2024%00",
          headers: ctx.bearer(u.apiKey),
        }),
      "created_after",
      NUL_REASON,
    ],
    [
      "a NUL in a path parameter",
      (u) => ctx.app.inject({ method: "GET", url: "/api/v1/tasks/%00", headers: ctx.bearer(u.apiKey) }),
      "id",
      NUL_REASON,
    ],
  ];
  for (const [name, send, field, reason] of cases) {
    test(`${name} → 400 naming ${field}; nothing written`, async () => {
      const user = await ctx.createUser(10);
      assertError(await send(user), 400, "VALIDATION_ERROR", [{ field, reason }]);
      assert.equal(await countTasks(user), 0);
    });
  }

  test("the sample endpoint answers its own flat 400", async () => {
    const user = await ctx.createUser(10);
    const res = await post(user, "/plants", JSON.stringify({ id: 1, name: "fern\u0000" }));
    assert.equal(res.statusCode, 400);
    const body = res.json<{ error: number; message: string }>();
    assert.equal(body.error, 400);
    assert.equal(typeof body.message, "string");
  });

  test("the control: ordinary non-ASCII text and emoji pairs are accepted", async () => {
    const user = await ctx.createUser(10);
    const res = await post(
      user,
      "/api/v1/api-keys",
      JSON.stringify({ name: "Zoë's 🔑 (ключ)", purpose: "custom" }),
    );
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json<{ name: string }>().name, "Zoë's 🔑 (ключ)");
  });
});

describe("uploads: NUL in the file name, fields or contents → 400 naming it", () => {
  const csv = (rows: number): string =>
    ["email,note", ...Array.from({ length: rows }, (_, i) => `u${i}@acme.test,some note`)].join("\n") + "\n";

  function upload(
    user: TestUser,
    data: Buffer,
    opts: { disposition?: string; fields?: Record<string, string> } = {},
  ) {
    const boundary = `----hostile-${randomBytes(8).toString("hex")}`;
    const parts: Buffer[] = [];
    for (const [name, value] of Object.entries(opts.fields ?? {})) {
      parts.push(
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
      );
    }
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: ${opts.disposition ?? 'form-data; name="file"; filename="list.csv"'}\r\n` +
          "Content-Type: text/csv\r\n\r\n",
      ),
      data,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    );
    return ctx.app.inject({
      method: "POST",
      url: "/api/v1/tasks/batch/upload",
      headers: { ...ctx.bearer(user.apiKey), "content-type": `multipart/form-data; boundary=${boundary}` },
      payload: Buffer.concat(parts),
    });
  }

  const nulAfterFirstKb = (text: string): Buffer => {
    assert.ok(text.length > 2000);
    return Buffer.from(text.slice(0, 2000) + "\u0000" + text.slice(2000));
  };

  const cases: Array<[string, (u: TestUser) => ReturnType<typeof upload>, string]> = [
    ["a csv with a NUL after the first KB", (u) => upload(u, nulAfterFirstKb(csv(100))), "file"],
    [
      "a txt with a NUL after the first KB",
      (u) =>
        upload(u, nulAfterFirstKb("a@acme.test\n".repeat(300)), {
          disposition: 'form-data; name="file"; filename="list.txt"',
        }),
      "file",
    ],
    [
      "a NUL in the filename",
      (u) =>
        upload(u, Buffer.from(csv(3)), { disposition: 'form-data; name="file"; filename="li\u0000st.csv"' }),
      "filename",
    ],
    [
      "a NUL in an RFC 5987 filename*",
      (u) =>
        upload(u, Buffer.from(csv(3)), {
          disposition: "form-data; name=\"file\"; filename*=UTF-8''li%00st.csv",
        }),
      "filename",
    ],
    [
      "a NUL in the webhook_url field",
      (u) => upload(u, Buffer.from(csv(3)), { fields: { webhook_url: "https://h.example/\u0000" } }),
      "webhook_url",
    ],
    [
      "a NUL in the email_column field",
      (u) => upload(u, Buffer.from(csv(3)), { fields: { email_column: "em\u0000ail" } }),
      "email_column",
    ],
  ];
  for (const [name, send, field] of cases) {
    test(`${name} → 400 naming ${field}; nothing written`, async () => {
      const user = await ctx.createUser(1000);
      const err = assertError(await send(user), 400, "VALIDATION_ERROR");
      assert.deepEqual(
        err.details?.map((d) => d.field),
        [field],
      );
      assert.match(err.details?.[0]?.reason ?? "", /NUL/);
      assert.equal(await countTasks(user), 0);
    });
  }

  test("the file message says what is wrong", async () => {
    const user = await ctx.createUser(1000);
    const err = assertError(await upload(user, nulAfterFirstKb(csv(100))), 400, "VALIDATION_ERROR");
    assert.match(err.message, /NUL character.*binary or corrupt/);
  });

  test("the control: a UTF-16 csv (NUL bytes in every other byte) is still accepted", async () => {
    const user = await ctx.createUser(1000);
    const data = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(csv(100), "utf16le")]);
    const res = await upload(user, data);
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json<{ email_count: number }>().email_count, 100);
  });
});

describe("router errors use the spec's envelope (inject)", () => {
  for (const withKey of [false, true]) {
    const who = withKey ? "with a key" : "without credentials";
    test(`a malformed percent-encoding (${who}) → 400 naming url, the path not echoed`, async () => {
      const user = await ctx.createUser(1);
      const res = await ctx.app.inject({
        method: "GET",
        url: "/api/v1/tasks/%E0%A4%A",
        headers: withKey ? ctx.bearer(user.apiKey) : {},
      });
      assertError(res, 400, "VALIDATION_ERROR", [
        { field: "url", reason: "must be valid percent-encoded UTF-8" },
      ]);
      assert.ok(!res.body.includes("%E0"), res.body);
      assert.ok(res.headers["x-request-id"], "the request id is still sent");
    });

    test(`a path parameter over maxParamLength (${who}) → 400 naming url, not Fastify's 414`, async () => {
      const user = await ctx.createUser(1);
      const res = await ctx.app.inject({
        method: "GET",
        url: `/api/v1/tasks/${"a".repeat(500)}`,
        headers: withKey ? ctx.bearer(user.apiKey) : {},
      });
      assertError(res, 400, "VALIDATION_ERROR", [
        { field: "url", reason: "has a path parameter that is too long" },
      ]);
      assert.ok(!res.body.includes("aaaa"), res.body);
    });
  }
});

describe("HTTP-parser refusals use the spec's envelope (a real socket)", () => {
  let port: number;
  before(async () => {
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    port = (ctx.app.server.address() as { port: number }).port;
  });

  /** Writes `request` on a new connection and returns everything the server sent back. */
  function exchange(request: Buffer): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      let received = "";
      socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
      socket.on("close", () => resolve(received));
      socket.on("error", reject);
      socket.setTimeout(10_000, () => socket.destroy(new Error("no answer within 10 s")));
      socket.end(request);
    });
  }

  function assertEnvelope(raw: string, field: string, reason: RegExp): void {
    const [head, body] = raw.split("\r\n\r\n", 2) as [string, string | undefined];
    assert.match(head, /^HTTP\/1\.1 400 /, raw);
    assert.match(head, /content-type: application\/json/i);
    const parsed = JSON.parse(body ?? "") as {
      error: { code: string; details: Array<{ field: string; reason: string }> };
    };
    assert.equal(parsed.error.code, "VALIDATION_ERROR");
    assert.equal(parsed.error.details[0]!.field, field);
    assert.match(parsed.error.details[0]!.reason, reason);
  }

  test("headers over 16 KiB (Node's default answer: 431, not the envelope) → 400 naming headers", async () => {
    const raw = await exchange(
      Buffer.from(`GET /api/v1/credits/balance HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`),
    );
    assertEnvelope(raw, "headers", /at most \d+ bytes/);
  });

  test("a NUL byte in a header value → 400 in the envelope", async () => {
    const raw = await exchange(
      Buffer.from(
        "GET /api/v1/credits/balance HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\u0000b\r\n\r\n",
        "latin1",
      ),
    );
    assertEnvelope(raw, "request", /not a valid HTTP/);
  });

  test("a request line that is not HTTP → 400 in the envelope", async () => {
    assertEnvelope(await exchange(Buffer.from("HELLO\r\n\r\n")), "request", /not a valid HTTP/);
  });

  test("the control: a normal request on the same server works", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(res.status, 200);
  });
});
