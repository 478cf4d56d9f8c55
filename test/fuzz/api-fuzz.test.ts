// Property-based requests over every operation of /openapi.json (fast-check): values drawn from
// each parameter's and body's schema, mixed with hostile ones (NUL bytes, lone surrogates, huge
// and deep values, wrong types, junk keys, odd URLs), with and without credentials. Whatever is
// sent, the server answers below 500 and every error is the spec's envelope.
// `npm run test:fuzz` (FUZZ_RUNS requests, default 20,000; FUZZ_SEED to replay; .ci/run runs a
// short version). DNS answers come from an empty simulated world, so nothing leaves the machine.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import fc from "fast-check";
import { worldEnv } from "../support/batch.ts";
import { startMailWorld, type MailWorld } from "../support/mail-world/index.ts";
import { createTestContext, type TestContext, type TestUser } from "../support/test-app.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 20_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123);

type Schema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  format?: string;
  $ref?: string;
};
interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  schema?: Schema;
  $ref?: string;
}
interface Operation {
  method: string;
  path: string;
  parameters: Parameter[];
  jsonBody: Schema | null;
  multipart: boolean;
}

let world: MailWorld;
let ctx: TestContext;
let user: TestUser;
let operations: Operation[] = [];
let doc: unknown;

before(async () => {
  world = await startMailWorld({ domains: [] });
  ctx = await createTestContext({
    env: worldEnv(world, { VERIFY_TIMEOUT_MS: "1000", DNS_TIMEOUT_MS: "200" }),
  });
  user = await ctx.createUser(1_000_000);
  const served = (await ctx.app.inject({ method: "GET", url: "/openapi.json" })).json<{
    paths: Record<
      string,
      Record<
        string,
        { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: Schema }> } }
      >
    >;
  }>();
  doc = served;
  operations = Object.entries(served.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([method]) => ["get", "post", "put", "patch", "delete"].includes(method))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        parameters: (op.parameters ?? []).map((p) => resolve(p)),
        jsonBody: op.requestBody?.content?.["application/json"]?.schema ?? null,
        multipart: op.requestBody?.content?.["multipart/form-data"] !== undefined,
      })),
  );
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

/** Follows a local `$ref` ("#/components/schemas/Task", "#/components/parameters/RequestId"). */
function resolve<T extends { $ref?: string }>(node: T): T {
  if (!node.$ref?.startsWith("#/")) return node;
  const target = node.$ref
    .slice(2)
    .split("/")
    .map((key) => key.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], doc);
  return resolve((target ?? {}) as T);
}

const nasty: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "\u0000",
    "a\u0000b@example.test",
    "\uD800",
    "%",
    "%E0%A4%A",
    "../../etc/passwd",
    "x".repeat(5_000),
    "-1",
    "1e309",
    "NaN",
    "null",
    "true",
    "' OR 1=1 --",
    "<script>alert(1)</script>",
    "bob@example.test\r\nRCPT TO:<x@y.test>",
    "ｅｘａｍｐｌｅ@ｅｘａｍｐｌｅ.com",
    "user@[192.0.2.1]",
    "http://127.0.0.1:1/hook",
    "00000000-0000-0000-0000-000000000000",
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.emailAddress(),
);

/** A value the schema allows, often enough to get past validation. */
function fromSchema(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const variants = s.anyOf ?? s.oneOf;
  if (variants && variants.length > 0) return fc.oneof(...variants.map((v) => fromSchema(v, depth)));
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case "string":
      if (s.format === "uuid") return fc.uuid();
      if (s.format === "date-time") return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      return fc.oneof(fc.emailAddress(), fc.string({ maxLength: Math.min(s.maxLength ?? 60, 60) }));
    case "integer":
      return fc.integer({ min: s.minimum ?? -5, max: Math.min(s.maximum ?? 200, 200) });
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "array":
      return depth > 3 ? fc.constant([]) : fc.array(fromSchema(s.items ?? {}, depth + 1), { maxLength: 5 });
    case "object": {
      if (depth > 3) return fc.constant({});
      const props = Object.entries(s.properties ?? {});
      return fc.record(Object.fromEntries(props.map(([k, v]) => [k, fromSchema(v, depth + 1)])), {
        requiredKeys: (s.required ?? []).filter((k) => props.some(([p]) => p === k)),
      });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Schema-shaped most of the time, hostile the rest. */
const anyValue = (schema: Schema | undefined): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 3, arbitrary: schema ? fromSchema(schema) : fc.jsonValue({ maxDepth: 2 }) },
    { weight: 2, arbitrary: nasty },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  );

const text = (v: unknown): string => (typeof v === "string" ? v : (JSON.stringify(v) ?? ""));

interface FuzzRequest {
  op: Operation;
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
  auth: "key" | "none" | "garbage";
  rawPath: boolean;
}

const requestArb = (): fc.Arbitrary<FuzzRequest> =>
  fc.constantFrom(...operations).chain((op) =>
    fc.record({
      op: fc.constant(op),
      path: fc.record(
        Object.fromEntries(
          op.parameters
            .filter((p) => p.in === "path")
            .map((p) => [p.name, fc.oneof(fc.uuid(), anyValue(p.schema))]),
        ),
      ),
      query: fc.record(
        Object.fromEntries(
          op.parameters.filter((p) => p.in === "query").map((p) => [p.name, anyValue(p.schema)]),
        ),
        { requiredKeys: [] },
      ),
      body: op.jsonBody
        ? anyValue(op.jsonBody)
        : fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined }),
      auth: fc.constantFrom("key", "key", "none", "garbage"),
      rawPath: fc.boolean(),
    }),
  );

/** encodeURIComponent throws on a lone surrogate; such a value is sent as U+FFFD, as a browser would. */
const wellFormed = (t: string): string =>
  t.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
const encode = (t: string): string => encodeURIComponent(wellFormed(t));

function urlOf(r: FuzzRequest): string {
  let path = r.op.path;
  for (const [name, value] of Object.entries(r.path)) {
    const t = text(value);
    path = path.replace(`{${name}}`, r.rawPath ? t.replace(/[\s#?]/g, "_") : encode(t));
  }
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(r.query)) if (v !== undefined) query.set(k, wellFormed(text(v)));
  const qs = query.toString();
  return qs === "" ? path : `${path}?${qs}`;
}

function headersOf(r: FuzzRequest): Record<string, string> {
  if (r.auth === "key") return ctx.bearer(user.apiKey);
  if (r.auth === "garbage") return { authorization: "Bearer mpk_notarealkey" };
  return {};
}

void test(`fuzz: ${RUNS.toString()} requests over every operation (seed ${SEED.toString()}): no 5xx, every error in the envelope`, async () => {
  assert.ok(operations.length > 10, "the OpenAPI document lists the operations");
  console.log(
    `fuzz: seed ${SEED.toString()}, ${RUNS.toString()} runs, ${operations.length.toString()} operations`,
  );
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(requestArb(), async (r) => {
      const url = urlOf(r);
      let res;
      try {
        res = await ctx.app.inject({
          method: r.op.method,
          url,
          headers: {
            ...headersOf(r),
            ...(r.body === undefined ? {} : { "content-type": "application/json" }),
          },
          ...(r.body === undefined ? {} : { payload: JSON.stringify(r.body) }),
        });
      } catch (error) {
        // light-my-request refuses some URLs before they reach the server; that is not ours.
        if (error instanceof TypeError || (error instanceof Error && /URL|header/i.test(error.message)))
          return;
        throw error;
      }
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      assert.ok(
        res.statusCode < 500,
        `${r.op.method} ${url} → ${res.statusCode.toString()} ${res.body.slice(0, 300)}`,
      );
      if (res.statusCode >= 400) {
        const body = res.json<{ error?: unknown; message?: unknown }>();
        if (r.op.path.startsWith("/plants")) {
          // /plants keeps the sample's flat body (DESIGN §5): { error: <status>, message }.
          assert.equal(body.error, res.statusCode, `${r.op.method} ${url}: ${res.body.slice(0, 300)}`);
          assert.equal(typeof body.message, "string", `${r.op.method} ${url}: ${res.body.slice(0, 300)}`);
          return;
        }
        const envelope = body.error as { code?: unknown; message?: unknown } | undefined;
        assert.equal(typeof envelope?.code, "string", `${r.op.method} ${url}: ${res.body.slice(0, 300)}`);
        assert.equal(typeof envelope?.message, "string", `${r.op.method} ${url}: ${res.body.slice(0, 300)}`);
      }
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  console.log(
    `fuzz: statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
  );
});
