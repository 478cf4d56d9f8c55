// What generated clients need from /openapi.json, checked on the served document and,
// where the document states a rule, against the server: one named enum per closed set and no
// one-value-enum unions; no component a generator would collide with; formats, enums and sizes
// the server enforces; the ledger's metadata declared; download bodies read as bytes; and 405 with
// Allow for a declared path asked with another method.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { API_KEY_PURPOSES } from "../../../src/keys/service.ts";
import { ERROR_CODES } from "../../../src/lib/app-error.ts";
import { VERIFICATION_STATUSES } from "../../../src/verify/index.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError } from "./helpers.ts";

type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Json;
}
interface Operation {
  operationId?: string;
  parameters?: Array<Parameter | { $ref: string }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Json }> };
  responses?: Record<string, { content?: Record<string, { schema?: Json }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
}

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

let ctx: TestContext;
let doc: Document;
let user: TestUser;
let taskId: string;

before(async () => {
  ctx = await createTestContext();
  const res = await ctx.app.inject({ method: "GET", url: "/openapi.json" });
  assert.equal(res.statusCode, 200);
  doc = res.json();
  user = await ctx.createUser(10);
  const created = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(user.apiKey),
    payload: { emails: ["alice@acme.test", "bob@acme.test"] },
  });
  assert.equal(created.statusCode, 201, created.body);
  taskId = created.json<{ id: string }>().id;
});
after(async () => {
  await ctx?.close();
});

const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const component = (name: string): Json => {
  const found = doc.components.schemas[name];
  assert.ok(found, `#/components/schemas/${name}`);
  return found;
};
const propertyOf = (schema: Json, path: string): Json => {
  let at: unknown = schema;
  for (const key of path.split("."))
    at = ((at as Json).properties as Record<string, Json> | undefined)?.[key];
  assert.ok(at, `property ${path}`);
  return at as Json;
};
const operation = (method: string, path: string): Operation => {
  const op = doc.paths[path]?.[method];
  assert.ok(op, `${method.toUpperCase()} ${path}`);
  return op;
};
const parameter = (method: string, path: string, name: string): Parameter => {
  const found = (operation(method, path).parameters ?? []).find(
    (p): p is Parameter => "name" in p && p.name === name,
  );
  assert.ok(found, `${method.toUpperCase()} ${path}: parameter ${name}`);
  return found;
};
const jsonBody = (method: string, path: string): Json => {
  const schema = operation(method, path).requestBody?.content?.["application/json"]?.schema;
  assert.ok(schema, `${method.toUpperCase()} ${path}: JSON body`);
  return schema;
};

/** Every schema object of the document, with its JSON pointer. */
function* schemasIn(value: unknown, at = ""): Generator<[string, Json]> {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) yield* schemasIn(v, `${at}/${i.toString()}`);
  } else if (typeof value === "object" && value !== null) {
    yield [at, value as Json];
    for (const [k, v] of Object.entries(value)) yield* schemasIn(v, `${at}/${k}`);
  }
}

describe("enums: one named component per closed set", () => {
  const NAMED: Record<string, readonly string[]> = {
    VerificationStatus: VERIFICATION_STATUSES,
    UploadStatus: ["processing", "completed", "failed", "cancelled"],
    JobStatus: ["pending", "processing", "completed", "failed", "cancelled"],
    TaskSource: ["frontend", "api_key"],
    TransactionType: ["grant", "deduction"],
    TransactionSource: ["api_key", "frontend", "operator"],
    ApiKeyPurpose: API_KEY_PURPOSES,
    WebhookDeliveryStatus: ["pending", "delivering", "delivered", "failed"],
    ErrorCode: ERROR_CODES,
  };

  test("each is a string enum component listing the server's values", () => {
    for (const [name, values] of Object.entries(NAMED)) {
      const schema = component(name);
      assert.equal(schema.type, "string", name);
      assert.deepEqual(schema.enum, [...values], name);
    }
  });

  test("every schema with one of these sets references its component", () => {
    const uses: Array<[string, string, string]> = [
      ["VerificationResult", "status", "VerificationStatus"],
      ["Upload", "status", "UploadStatus"],
      ["UploadDetail", "status", "UploadStatus"],
      ["TaskFile", "status", "UploadStatus"],
      ["Job", "status", "JobStatus"],
      ["TaskDetail", "source", "TaskSource"],
      ["TaskSummary", "source", "TaskSource"],
      ["TaskList", "source", "TaskSource"],
      ["TaskSeries", "source", "TaskSource"],
      ["CreatedTask", "source", "TaskSource"],
      ["CreditTransaction", "type", "TransactionType"],
      ["CreditTransaction", "metadata.source", "TransactionSource"],
      ["CreditTransaction", "metadata.api_key_purpose", "ApiKeyPurpose"],
      ["ApiKey", "purpose", "ApiKeyPurpose"],
      ["CreatedApiKey", "purpose", "ApiKeyPurpose"],
      ["ApiKeyUsageBucket", "api_key_purpose", "ApiKeyPurpose"],
      ["WebhookDelivery", "status", "WebhookDeliveryStatus"],
      ["ErrorResponse", "error.code", "ErrorCode"],
    ];
    for (const [owner, path, name] of uses)
      assert.deepEqual(propertyOf(component(owner), path), schemaRef(name), `${owner}.${path}`);
    assert.deepEqual(
      propertyOf(jsonBody("post", "/api/v1/api-keys"), "purpose"),
      schemaRef("ApiKeyPurpose"),
      "POST /api/v1/api-keys body: purpose",
    );
  });

  test("no inline copy of a named set is left anywhere", () => {
    const named = new Map(Object.entries(NAMED).map(([n, v]) => [[...v].sort().join("|"), n]));
    for (const [at, schema] of schemasIn(doc)) {
      if (!Array.isArray(schema.enum) || /^\/components\/schemas\/[^/]+$/.test(at)) continue;
      const name = named.get((schema.enum as string[]).map(String).sort().join("|"));
      assert.equal(name, undefined, `${at} repeats the ${name ?? ""} enum inline`);
    }
  });

  test("no anyOf/oneOf of one-value enums or consts, and no const at all", () => {
    const isOneValue = (s: Json) => "const" in s || (Array.isArray(s.enum) && s.enum.length === 1);
    for (const [at, schema] of schemasIn(doc)) {
      assert.ok(!("const" in schema), `${at}: const`);
      for (const key of ["anyOf", "oneOf"] as const) {
        const branches = (schema[key] ?? []) as Json[];
        assert.ok(!branches.some(isOneValue), `${at}: ${key} of one-value enums`);
      }
    }
  });

  test("no inline enum or object is named like a component by a generator (Parent + Property)", () => {
    // openapi-python-client (and others) name an inline enum or object `{Parent}{Property}` in
    // PascalCase: `Upload.status` inline became `UploadStatus`, the name of another component,
    // and the generator dropped `Upload`.
    const pascal = (s: string) =>
      s
        .split(/[^A-Za-z0-9]+/)
        .filter(Boolean)
        .map((w) => w[0]!.toUpperCase() + w.slice(1))
        .join("");
    const names = new Set(Object.keys(doc.components.schemas));
    const visit = (owner: string, schema: Json) => {
      for (const [prop, sub] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
        if (!(Array.isArray(sub.enum) || sub.type === "object")) continue;
        const generated = pascal(`${owner}_${prop}`);
        assert.ok(!names.has(generated), `${owner}.${prop} would be generated as ${generated}`);
        visit(generated, sub);
      }
    };
    for (const [name, schema] of Object.entries(doc.components.schemas)) visit(name, schema);
  });
});

describe("parameters and bodies state what the server enforces", () => {
  const DATE_PARAMS: Array<[string, string[]]> = [
    ["/api/v1/credits/usage", ["from", "to"]],
    ["/api/v1/credits/usage/api-keys", ["from", "to"]],
    ["/api/v1/metrics/verifications", ["from", "to"]],
    ["/api/v1/tasks", ["created_after", "created_before"]],
    ["/api/v1/tasks/{id}/series", ["from", "to"]],
  ];

  test("every date parameter is a date-time, every id parameter a uuid", () => {
    for (const [path, names] of DATE_PARAMS)
      for (const name of names)
        assert.equal(parameter("get", path, name).schema?.format, "date-time", `${path} ${name}`);
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item))
        for (const p of op.parameters ?? []) {
          if (!("name" in p) || !/(^|_)id$/.test(p.name)) continue;
          assert.equal(p.schema?.format, "uuid", `${method.toUpperCase()} ${path} ${p.name}`);
        }
  });

  test("download: id and task_id are uuids, format an enum", () => {
    const path = "/api/v1/tasks/{id}/download";
    assert.equal(parameter("get", path, "id").schema?.format, "uuid");
    assert.equal(parameter("get", path, "task_id").schema?.format, "uuid");
    assert.deepEqual(parameter("get", path, "format").schema?.enum, ["csv", "txt", "xlsx"]);
  });

  test("bodies: email minLength 1, emails minItems 1, webhook URLs are URIs, the rotate body optional", () => {
    assert.equal(propertyOf(jsonBody("post", "/api/v1/verify"), "email").minLength, 1);
    const task = jsonBody("post", "/api/v1/tasks");
    assert.equal(propertyOf(task, "emails").minItems, 1);
    assert.equal(propertyOf(task, "webhook_url").format, "uri");
    assert.equal(propertyOf(jsonBody("post", "/api/v1/webhooks/test"), "url").format, "uri");
    const form = operation("post", "/api/v1/tasks/batch/upload").requestBody?.content?.["multipart/form-data"]
      ?.schema;
    assert.equal(propertyOf(form ?? {}, "webhook_url").format, "uri");
    assert.equal(operation("post", "/api/v1/webhooks/secret/rotate").requestBody?.required, false);
    assert.equal(operation("post", "/api/v1/tasks").requestBody?.required, true);
  });

  const get = (url: string) => ctx.app.inject({ method: "GET", url, headers: ctx.bearer(user.apiKey) });
  const send = (method: "POST", url: string, payload?: unknown) =>
    ctx.app.inject({
      method,
      url,
      headers: ctx.bearer(user.apiKey),
      ...(payload === undefined ? {} : { payload: payload as Json }),
    });
  const fieldsOf = (res: Awaited<ReturnType<typeof get>>) =>
    (res.json<{ error: { details?: Array<{ field: string }> } }>().error.details ?? []).map((d) => d.field);

  test("each documented date-time parameter is refused when it is not one (400 naming it)", async () => {
    const range = { from: "2026-01-01T00:00:00Z", to: "2026-01-31T00:00:00Z" } as Record<string, string>;
    for (const [path, names] of DATE_PARAMS)
      for (const name of names)
        for (const bad of ["2026-01-01", "2026-01-01T00:00:00", "yesterday"]) {
          const query = new URLSearchParams({ ...(names.includes("from") ? range : {}), [name]: bad });
          const res = await get(`${path.replace("{id}", taskId)}?${query.toString()}`);
          assertError(res, 400, "VALIDATION_ERROR");
          assert.ok(fieldsOf(res).includes(name), `${path} ${name}=${bad}: ${res.body}`);
        }
  });

  test("download: a non-UUID id or task_id and an unlisted format are refused", async () => {
    const base = `/api/v1/tasks/${taskId}/download`;
    for (const [url, field] of [
      ["/api/v1/tasks/not-a-uuid/download", "id"],
      [`${base}?task_id=nope`, "task_id"],
      [`${base}?format=pdf`, "format"],
      // The document's enum is lower case (spec: csv, txt, xlsx) and the server holds to it.
      [`${base}?format=CSV`, "format"],
      [`${base}?format=Xlsx`, "format"],
    ] as const) {
      const res = await get(url);
      assertError(res, 400, "VALIDATION_ERROR");
      assert.deepEqual(fieldsOf(res), [field], url);
    }
  });

  test("bodies: an empty email, no emails, a webhook URL that is not a URI are refused; rotate takes no body", async () => {
    for (const [url, payload, field] of [
      ["/api/v1/verify", { email: "" }, "email"],
      ["/api/v1/tasks", { emails: [] }, "emails"],
      ["/api/v1/tasks", { emails: ["alice@acme.test"], webhook_url: "not a url" }, "webhook_url"],
      ["/api/v1/webhooks/test", { url: "not a url" }, "url"],
    ] as const) {
      const res = await send("POST", url, payload);
      assertError(res, 400, "VALIDATION_ERROR");
      assert.deepEqual(fieldsOf(res), [field], `${url} ${JSON.stringify(payload)}`);
    }
    const rotated = await send("POST", "/api/v1/webhooks/secret/rotate");
    assert.equal(rotated.statusCode, 200, rotated.body);
  });
});

describe("CreditTransaction.metadata", () => {
  test("declares what the ledger writers put in it, and stays open", () => {
    const metadata = propertyOf(component("CreditTransaction"), "metadata");
    assert.equal(metadata.type, "object");
    assert.equal(metadata.additionalProperties, true);
    assert.deepEqual(Object.keys(metadata.properties as Json), [
      "source",
      "task_id",
      "api_key_id",
      "api_key_purpose",
      "verification_id",
    ]);
    for (const id of ["task_id", "api_key_id", "verification_id"])
      assert.equal(propertyOf(metadata, id).format, "uuid", id);
  });

  test("real rows match the schema and are sent as stored, key order included", async () => {
    const res = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/credits/transactions?task_id=${taskId}`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(res.statusCode, 200, res.body);
    const { transactions } = res.json<{ transactions: Array<{ metadata: Json }> }>();
    assert.equal(transactions.length, 1, "the task's reservation");
    const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
      addFormatsModule) as (ajv: Ajv2020) => Ajv2020;
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    ajv.addSchema(doc, "openapi.json");
    const validate = ajv.getSchema("openapi.json#/components/schemas/CreditTransaction");
    assert.ok(validate);
    assert.ok(validate(transactions[0]), JSON.stringify(validate.errors));
    assert.deepEqual(transactions[0]!.metadata, {
      source: "api_key",
      task_id: taskId,
      api_key_id: user.apiKeyId,
      api_key_purpose: "custom",
    });
    // Not vacuous: an unknown source fails.
    assert.equal(validate({ ...transactions[0], metadata: { source: "somebody" } }), false);
    const { rows } = await ctx.db.query<{ metadata: Json }>(
      "select metadata from credit_transactions where user_id = $1 and metadata->>'task_id' = $2",
      [user.userId, taskId],
    );
    assert.ok(res.body.includes(`"metadata":${JSON.stringify(rows[0]!.metadata)}`), res.body);
  });
});

test("the download lists a binary media type first, so generated clients return bytes", () => {
  const ok = operation("get", "/api/v1/tasks/{id}/download").responses?.["200"];
  assert.deepEqual(Object.keys(ok?.content ?? {}), [
    "application/octet-stream",
    "text/csv",
    "text/plain",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ]);
  for (const media of Object.values(ok?.content ?? {}))
    assert.deepEqual(media.schema, { type: "string", format: "binary" });
});

describe("405 for a declared path asked with another method", () => {
  const ask = (method: "GET" | "PUT" | "PATCH" | "POST" | "DELETE", url: string, auth = true) =>
    ctx.app.inject({ method, url, ...(auth ? { headers: ctx.bearer(user.apiKey) } : {}) });

  test("every documented path: a method it does not declare → 405 with Allow listing the ones it does", async () => {
    for (const [path, item] of Object.entries(doc.paths)) {
      const declared = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase());
      const allow = [...declared, ...(declared.includes("GET") ? ["HEAD"] : [])].sort().join(", ");
      const other = (["PATCH", "PUT", "DELETE"] as const).find((m) => !declared.includes(m))!;
      const url = path.replace(/\{[^}]+\}/g, randomUUID());
      const res = await ask(other, url);
      assertError(res, 405, "METHOD_NOT_ALLOWED", null);
      assert.equal(res.headers.allow, allow, `${other} ${path}`);
    }
  });

  test("paths with parameters, without credentials too, and a HEAD-only difference", async () => {
    const task = await ask("PATCH", `/api/v1/tasks/${taskId}`, false);
    assertError(task, 405, "METHOD_NOT_ALLOWED", null);
    assert.equal(task.headers.allow, "DELETE, GET, HEAD");
    const upload = await ask("GET", "/api/v1/tasks/batch/upload");
    assertError(upload, 405, "METHOD_NOT_ALLOWED", null);
    assert.equal(upload.headers.allow, "POST");
    const head = await ctx.app.inject({ method: "HEAD", url: "/api/v1/verify" });
    assert.equal(head.statusCode, 405);
    assert.equal(head.headers.allow, "POST");
  });

  test("unknown paths stay 404; the probes and the dashboard answer as before", async () => {
    for (const url of ["/api/v1/nope", `/api/v1/tasks/${taskId}/nope`, "/api/v1/tasks/a/b/c", "/nope"])
      assertError(await ask("GET", url), 404, "NOT_FOUND", null);
    // Under a wildcard a path exists only if its file does: another method stays a 404.
    assertError(await ask("POST", "/assets/app.js"), 404, "NOT_FOUND", null);
    assert.equal((await ask("GET", "/healthz", false)).statusCode, 200);
    const probe = await ask("POST", "/healthz", false);
    assertError(probe, 405, "METHOD_NOT_ALLOWED", null);
    assert.equal(probe.headers.allow, "GET, HEAD");
    const page = await ask("GET", "/", false);
    assert.ok([200, 503].includes(page.statusCode), `GET / → ${page.statusCode.toString()}`);
    assert.match(String(page.headers["content-type"]), /^text\/html/);
  });
});
