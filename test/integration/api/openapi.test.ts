// The OpenAPI document as a contract for generated clients (sdk/ is generated from openapi.json):
// the committed file is what the server serves, every operation is named, tagged and summarised,
// shared schemas are named components, every error response is the Error envelope, and the
// webhooks section describes what the webhook sender really sends.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import openapiTS from "openapi-typescript";
import { renderOpenapi } from "../../../scripts/write-openapi.ts";
import { emptyMetrics } from "../../../src/tasks/service.ts";
import {
  serializeWebhookPayload,
  taskCompletedPayload,
  toMetricsReply,
} from "../../../src/webhooks/payload.ts";
import { signWebhook } from "../../../src/webhooks/signing.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

interface Response {
  description?: string;
  headers?: Record<string, { $ref?: string }>;
  content?: Record<string, { schema?: { $ref?: string; type?: string; format?: string } }>;
}
interface Parameter {
  name?: string;
  in?: string;
  $ref?: string;
}
interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: {
    content?: Record<
      string,
      { schema?: { $ref?: string; required?: string[]; properties?: Record<string, unknown> } }
    >;
  };
  responses?: Record<string, Response>;
}
interface Document {
  openapi: string;
  tags?: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  webhooks?: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, unknown>> };
}

const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options", "trace"]);
const ERROR_REF = "#/components/schemas/ErrorResponse";

let ctx: TestContext;
let doc: Document;

before(async () => {
  ctx = await createTestContext();
  const res = await ctx.app.inject({ method: "GET", url: "/openapi.json" });
  assert.equal(res.statusCode, 200);
  doc = res.json();
});
after(async () => {
  await ctx?.close();
});

const operationsOf = (items: Record<string, Record<string, Operation>> | undefined) =>
  Object.entries(items ?? {}).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, path, op })),
  );

/** The JSON pointer of the first place two JSON values differ (key order included). */
function firstDifference(a: unknown, b: unknown, at = ""): string | null {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null)
    return JSON.stringify(a) === JSON.stringify(b) ? null : at || "/";
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  for (let i = 0; i < Math.max(keysA.length, keysB.length); i++) {
    if (keysA[i] !== keysB[i]) return `${at}/${keysA[i] ?? keysB[i] ?? ""} (keys differ)`;
    const key = keysA[i]!;
    const found = firstDifference(
      (a as Record<string, unknown>)[key],
      (b as Record<string, unknown>)[key],
      `${at}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`,
    );
    if (found) return found;
  }
  return null;
}

describe("openapi.json (committed)", () => {
  test("is exactly the served document: after changing a route or a schema, run `npm run openapi`", async () => {
    const committedText = await readFile(new URL("../../../openapi.json", import.meta.url), "utf8");
    const committed: unknown = JSON.parse(committedText);
    const where = firstDifference(committed, doc);
    assert.equal(
      where,
      null,
      `openapi.json differs from GET /openapi.json at ${where ?? ""}: run \`npm run openapi\` and commit openapi.json`,
    );
    assert.equal(
      committedText,
      await renderOpenapi(doc),
      "openapi.json is not formatted as `npm run openapi` writes it: run `npm run openapi`",
    );
  });
});

describe("GET /openapi.json", () => {
  test("is OpenAPI 3.1 and openapi-typescript (the SDK's generator) accepts it", async () => {
    assert.equal(doc.openapi, "3.1.0");
    const ast = await openapiTS(structuredClone(doc) as unknown as Parameters<typeof openapiTS>[0], {
      silent: true,
    });
    assert.ok(ast.length > 0);
  });

  test("every operation has a unique camelCase operationId, a summary and declared tags", () => {
    const declared = new Map((doc.tags ?? []).map((t) => [t.name, t.description]));
    const ids = new Map<string, string>();
    const all = [...operationsOf(doc.paths), ...operationsOf(doc.webhooks)];
    assert.ok(all.length >= 20, "the document lists the operations");
    for (const { where, op } of all) {
      assert.match(op.operationId ?? "", /^[a-z][a-zA-Z0-9]*$/, `${where}: camelCase operationId`);
      assert.ok(
        !ids.has(op.operationId!),
        `${where}: operationId ${op.operationId} also on ${ids.get(op.operationId!)}`,
      );
      ids.set(op.operationId!, where);
      assert.ok(op.summary && op.summary.length > 0, `${where}: summary`);
      assert.ok(op.tags && op.tags.length > 0, `${where}: tags`);
      for (const tag of op.tags)
        assert.ok(declared.get(tag), `${where}: tag ${tag} is declared with a description`);
    }
  });

  test("the shared schemas are named components", () => {
    for (const name of [
      "ErrorResponse",
      "VerificationResult",
      "VerificationTimeoutError",
      "TaskDetail",
      "TaskQuote",
      "UploadQuote",
      "TaskSummary",
      "TaskList",
      "TaskMetrics",
      "TaskFile",
      "CreatedTask",
      "Job",
      "JobList",
      "Upload",
      "UploadDetail",
      "UploadStatus",
      "CreditBalance",
      "CreditTransaction",
      "CreditTransactionList",
      "UsageTotals",
      "UsagePoint",
      "ApiKey",
      "CreatedApiKey",
      "TaskCompletedEvent",
    ]) {
      assert.ok(doc.components.schemas[name], `#/components/schemas/${name}`);
    }
    assert.ok(
      !Object.keys(doc.components.schemas).some((n) => /^def-\d+$/.test(n)),
      "no anonymous def-N component",
    );
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(refs.includes("#/components/schemas/VerificationResult"));
    assert.ok(refs.includes("#/components/schemas/TaskSummary"));
  });

  test("no component is named after a built-in type of a common target language", () => {
    // A generator turns each component into a type of its name: `Error` shadowed TS/JS's own, and
    // `Task` collides with C#'s System.Threading.Tasks.Task in every async method it generates.
    const BUILT_INS = new Set([
      ...["Error", "Date", "Object", "Record", "Response", "Request", "File", "Blob", "Event", "Map"],
      ...["Set", "Symbol", "Promise", "Array", "String", "Number", "Boolean", "Headers", "URL"],
      ...["Exception", "Type", "List", "Dict", "Task", "Action", "Func", "Thread", "Class", "Integer"],
      ...["Long", "Float", "Double", "Byte", "Character", "Void", "Iterator", "Context", "Time"],
      ...["Duration", "Interface", "Enum", "Decimal", "Optional", "Stream", "Timer", "Uri", "Guid"],
    ]);
    const clashes = Object.keys(doc.components.schemas).filter((n) => BUILT_INS.has(n));
    assert.deepEqual(clashes, []);
  });

  test("every operation has exactly one 2xx response: one success body per operation", () => {
    const many = operationsOf(doc.paths)
      .map(({ where, op }) => [where, Object.keys(op.responses ?? {}).filter((s) => /^2/.test(s))] as const)
      .filter(([, codes]) => codes.length !== 1);
    assert.deepEqual(many, []);
  });

  test("every 4xx/5xx response is the Error envelope (/plants keeps the sample's flat PlantError)", () => {
    for (const { where, path, op } of operationsOf(doc.paths)) {
      const statuses = Object.keys(op.responses ?? {});
      // An operation that needs no credentials (security: []) cannot answer 401, nor spend one's allowance.
      const isPublic = op.security?.length === 0;
      if (path.startsWith("/api/v1/"))
        for (const s of isPublic ? ["500"] : ["401", "429", "500"])
          assert.ok(statuses.includes(s), `${where} documents ${s}`);
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (!/^[45]/.test(status)) continue;
        const ref = response.content?.["application/json"]?.schema?.$ref;
        assert.deepEqual(
          Object.keys(response.content ?? {}),
          ["application/json"],
          `${where} ${status}: JSON`,
        );
        if (path === "/plants") {
          assert.equal(ref, "#/components/schemas/PlantError", `${where} ${status}`);
        } else if (ref === ERROR_REF) {
          assert.ok(
            response.description && !response.description.startsWith("Default"),
            `${where} ${status}`,
          );
        } else {
          // The 408 of /verify: the Error envelope plus the partial result.
          const name = ref?.split("/").pop() ?? "";
          const allOf = doc.components.schemas[name]?.allOf as Array<{ $ref?: string }> | undefined;
          assert.ok(
            allOf?.some((s) => s.$ref === ERROR_REF),
            `${where} ${status} refs Error (got ${ref})`,
          );
        }
      }
    }
  });

  test("X-Request-ID on every operation and response, Retry-After on every 429", () => {
    for (const { where, op } of operationsOf(doc.paths)) {
      assert.ok(
        op.parameters?.some((p) => p.$ref === "#/components/parameters/RequestId"),
        `${where}: X-Request-ID parameter`,
      );
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        assert.equal(
          response.headers?.["X-Request-ID"]?.$ref,
          "#/components/headers/RequestId",
          `${where} ${status}`,
        );
        if (status === "429")
          assert.equal(response.headers?.["Retry-After"]?.$ref, "#/components/headers/RetryAfter", where);
      }
    }
    const parameter = (doc.components as unknown as { parameters: Record<string, Parameter> }).parameters
      .RequestId;
    assert.deepEqual([parameter?.name, parameter?.in], ["X-Request-ID", "header"]);
  });

  test("security: API key header and bearer; the probes need none; Idempotency-Key on task creation", () => {
    const schemes = (doc.components as unknown as { securitySchemes: Record<string, Record<string, string>> })
      .securitySchemes;
    assert.deepEqual(schemes.apiKeyHeader, {
      type: "apiKey",
      in: "header",
      name: "X-API-Key",
      description: schemes.apiKeyHeader?.description,
    });
    assert.equal(schemes.bearerAuth?.scheme, "bearer");
    assert.deepEqual(doc.paths["/healthz"]?.get?.security, []);
    assert.deepEqual(doc.paths["/readyz"]?.get?.security, []);
    assert.ok(
      doc.paths["/api/v1/tasks"]?.post?.parameters?.some(
        (p) => p.name === "Idempotency-Key" && p.in === "header",
      ),
    );
  });

  test("the upload and its quote document one multipart form: a binary file named .csv, .txt or .xlsx", () => {
    const formOf = (path: string) =>
      doc.paths[path]?.post?.requestBody?.content?.["multipart/form-data"]?.schema;
    const form = formOf("/api/v1/tasks/batch/upload");
    assert.ok(form, "multipart/form-data requestBody");
    assert.deepEqual(formOf("/api/v1/tasks/batch/upload/quote"), form);
    assert.deepEqual(form.required, ["file"]);
    const file = form.properties?.file as { description?: string; "x-filename-pattern"?: string };
    assert.deepEqual(file, {
      type: "string",
      format: "binary",
      description: file.description,
      "x-filename-pattern": file["x-filename-pattern"],
    });
    assert.match(String(file.description), /file name ending in \.csv, \.txt or \.xlsx/);
    const pattern = new RegExp(String(file["x-filename-pattern"]));
    for (const name of ["a.csv", "b.TXT", "c.Xlsx"]) assert.match(name, pattern);
    for (const name of ["a.pdf", "csv", "a.csv.zip", "blob"]) assert.doesNotMatch(name, pattern);
    for (const field of ["webhook_url", "email_column", "column"]) assert.ok(form.properties?.[field], field);
  });

  test("the format of a download is the lower-case enum the server enforces", () => {
    const format = doc.paths["/api/v1/tasks/{id}/download"]?.get?.parameters?.find(
      (p) => "name" in p && p.name === "format",
    ) as { schema?: { enum?: string[] } } | undefined;
    assert.deepEqual(format?.schema?.enum, ["csv", "txt", "xlsx"]);
  });

  test("downloads are binary bodies per media type; their errors stay JSON", () => {
    const ok = doc.paths["/api/v1/tasks/{id}/download"]?.get?.responses?.["200"];
    assert.deepEqual(Object.keys(ok?.content ?? {}), [
      "application/octet-stream",
      "text/csv",
      "text/plain",
      "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ]);
    for (const media of Object.values(ok?.content ?? {}))
      assert.deepEqual(media.schema, { type: "string", format: "binary" });
    assert.ok(ok?.headers?.["Content-Disposition"]);
  });
});

describe("webhooks", () => {
  const secret = `whsec_${randomBytes(24).toString("base64")}`;
  const at = new Date("2026-01-01T00:00:00Z");
  const bodyOf = (uploadId: string | null) =>
    serializeWebhookPayload(
      taskCompletedPayload(
        { taskId: "7f1d3f0e-4a4b-4c1e-9d5a-0e2b8f3c6a10", uploadId, metrics: toMetricsReply(emptyMetrics()) },
        at,
      ) as unknown as Record<string, unknown>,
    );

  test("task.completed: the body the sender builds matches TaskCompletedEvent", () => {
    const op = doc.webhooks?.["task.completed"]?.post;
    assert.ok(op, "webhooks['task.completed'].post");
    assert.equal(
      op.requestBody?.content?.["application/json"]?.schema?.$ref,
      "#/components/schemas/TaskCompletedEvent",
    );
    const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
      addFormatsModule) as (ajv: Ajv2020) => Ajv2020;
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    ajv.addSchema(doc, "openapi.json");
    const validate = ajv.getSchema("openapi.json#/components/schemas/TaskCompletedEvent");
    assert.ok(validate);
    for (const uploadId of [null, "0b6e3c1e-8a43-4d0a-9a4e-2f0f3c1d5b7a"]) {
      const body: unknown = JSON.parse(bodyOf(uploadId));
      assert.ok(validate(body), JSON.stringify(validate.errors));
    }
    // Not vacuous: a body of another shape fails.
    assert.equal(validate({ type: "task.completed", data: {} }), false);
  });

  test("task.completed: the documented headers are the ones signWebhook sets", () => {
    const op = doc.webhooks?.["task.completed"]?.post;
    const sent = signWebhook(secret, "0b6e3c1e-8a43-4d0a-9a4e-2f0f3c1d5b7a", at, bodyOf(null));
    const documented = (op?.parameters ?? []).filter((p) => p.in === "header").map((p) => p.name);
    assert.deepEqual(
      documented.sort(),
      Object.keys(sent)
        .filter((h) => h !== "content-type")
        .sort(),
    );
    assert.deepEqual(Object.keys(op?.requestBody?.content ?? {}), [sent["content-type"]]);
    assert.match(sent["webhook-signature"], /^v1,[A-Za-z0-9+/]+=*$/);
  });
});
