// The OpenAPI document (GET /openapi.json, committed as openapi.json by `npm run openapi`): what
// @fastify/swagger cannot learn from the route schemas. The routes give each operation its
// operationId, summary, tags and `$ref`s to the named schemas below; this file names the tags,
// the security schemes, the headers every operation shares and the completion webhook.
import type { FastifyDynamicSwaggerOptions, SwaggerTransform } from "@fastify/swagger";
import type { FastifySchema } from "fastify";
import { WEBHOOK_USER_AGENT } from "../../webhooks/signing.ts";
import { CreatedApiKeyReply, ApiKeyListItem, ListApiKeysReply } from "./api-keys.ts";
import {
  RememberedDevice,
  RememberedDeviceList,
  SessionPolicyReply,
  SessionReply,
  SignInLinkReply,
} from "./auth.ts";
import { ErrorBodySchema } from "./common.ts";
import { BalanceReply, CreditTransactionSchema, TransactionsReply } from "./credits.ts";
import { HealthReply, ReadyReply } from "./ops.ts";
import { PlantErrorReply, PlantReply } from "./plants.ts";
import {
  ApiKeyUsageBucketSchema,
  ApiKeyUsageReply,
  CreditUsageReply,
  MetricsPointSchema,
  UsagePointSchema,
  UsageTotalsSchema,
  VerificationMetricsReply,
} from "./reports.ts";
import {
  CreatedTaskReply,
  FileSchema,
  JobSchema,
  JobsReply,
  ListTasksReply,
  MetricsSchema,
  SeriesPointSchema,
  SeriesReply,
  TaskDetail,
  TaskSummary,
} from "./tasks.ts";
import { TaskQuoteReply, UploadQuoteReply } from "./quote.ts";
import { ENUM_COMPONENTS } from "./enums.ts";
import { UploadAccepted, UploadDetail } from "./uploads.ts";
import { CheckSchema, ResultChecksSchema, TimeoutReply, VerificationReply } from "./verification.ts";
import {
  PingEvent,
  TaskCompletedEvent,
  WebhookDeliveryListReply,
  WebhookDeliverySchema,
  WebhookSecretReply,
} from "./webhooks.ts";

/**
 * The named schemas: each is registered once with app.addSchema (build-app.ts), referenced by
 * routes through ref(), and emitted as `#/components/schemas/<its $id>`.
 */
export const COMPONENTS = [
  ...ENUM_COMPONENTS,
  ErrorBodySchema,
  VerificationReply,
  CheckSchema,
  ResultChecksSchema,
  TimeoutReply,
  CreatedTaskReply,
  MetricsSchema,
  FileSchema,
  TaskSummary,
  TaskDetail,
  ListTasksReply,
  SeriesPointSchema,
  SeriesReply,
  JobSchema,
  JobsReply,
  UploadAccepted,
  UploadDetail,
  TaskQuoteReply,
  UploadQuoteReply,
  BalanceReply,
  CreditTransactionSchema,
  TransactionsReply,
  UsageTotalsSchema,
  UsagePointSchema,
  CreditUsageReply,
  ApiKeyUsageBucketSchema,
  ApiKeyUsageReply,
  MetricsPointSchema,
  VerificationMetricsReply,
  CreatedApiKeyReply,
  ApiKeyListItem,
  ListApiKeysReply,
  SessionReply,
  SessionPolicyReply,
  SignInLinkReply,
  RememberedDevice,
  RememberedDeviceList,
  WebhookSecretReply,
  WebhookDeliverySchema,
  WebhookDeliveryListReply,
  TaskCompletedEvent,
  PingEvent,
  HealthReply,
  ReadyReply,
  PlantReply,
  PlantErrorReply,
];

/** Operation tags (the sections of /docs), in the document's order. */
export const TAG = {
  verification: "Verification",
  tasks: "Tasks",
  uploads: "Uploads",
  credits: "Credits",
  reports: "Reports",
  apiKeys: "API keys",
  auth: "Auth",
  webhooks: "Webhooks",
  health: "Health",
  sample: "Sample",
} as const;

type TagName = (typeof TAG)[keyof typeof TAG];

const TAG_DESCRIPTIONS: Record<TagName, string> = {
  Verification:
    "Realtime verification of one address: 1 credit, unless the result is `unknown` or the same address was paid for in the last 24 hours.",
  Tasks:
    "Batch verification of up to 10,000 addresses sent as JSON, processed asynchronously; progress, jobs, daily series and the results file.",
  Uploads: "Batch verification of a .txt, .csv or .xlsx list sent as multipart/form-data.",
  Credits: "The credit balance and the append-only ledger of grants and deductions.",
  Reports: "Credit usage per day and per API key, and verification counters.",
  "API keys":
    "Keys for integrations. Key management needs a `custom` key or a session; the plaintext is shown at creation (and with `reveal=true`).",
  Auth: "Dashboard sessions: exchange a `custom` API key for a short-lived JWT.",
  Webhooks:
    "The secret that signs completion webhooks (Standard Webhooks); the deliveries themselves are under `webhooks`.",
  Health: "Liveness and readiness probes; no credentials.",
  Sample: "The spec's sample endpoint: bearer authentication and its own flat error body.",
};

/** Marks an operation whose body may be left out (finishDocument turns it into `required: false`). */
const OPTIONAL_BODY = "x-mailprobe-optional-body";

/**
 * A route's `config.swaggerTransform` for request parts the document shows otherwise than
 * Fastify validates them: parts Fastify must not validate (the multipart form of an upload, a
 * header the handler reads itself), and rules the handler enforces with its own reasons
 * (common.ts documented()). `optionalBody`: the route accepts a request without a body (Fastify
 * needs one whenever a body schema is set, so swagger always says `required: true`).
 */
export const documentRequest =
  (
    parts: Pick<FastifySchema, "body" | "headers" | "querystring" | "params">,
    opts: { optionalBody?: boolean } = {},
  ): SwaggerTransform =>
  ({ schema, url }) => ({
    schema: { ...schema, ...parts, ...(opts.optionalBody ? { [OPTIONAL_BODY]: true } : {}) },
    url,
  });

/** X-Request-ID (plugins/request-id.ts): the caller's value when it is sane, else a new UUID. */
const REQUEST_ID_PARAMETER = {
  name: "X-Request-ID",
  in: "header",
  required: false,
  description:
    "Your id for this request, echoed back in the response's X-Request-ID when it is 1-200 printable ASCII characters without spaces (otherwise the server makes one).",
  schema: { type: "string" as const },
};
const REQUEST_ID_HEADER = {
  description:
    "The request's id: the caller's X-Request-ID when it was sane, else a UUID. Quote it when reporting a problem.",
  schema: { type: "string" as const, pattern: "^[\\x21-\\x7e]{1,200}$" },
};

const WEBHOOK_RETRIES =
  "Any other status, a redirect (not followed) or no answer within WEBHOOK_TIMEOUT_MS (default 10 s) is retried with exponential backoff for WEBHOOK_RETRY_HOURS (default 24 hours).";

const webhookHeader = (name: string, description: string, example: string) => ({
  name,
  in: "header",
  required: true,
  description,
  schema: { type: "string" as const },
  example,
});

/** The signature headers of every delivery (webhooks/signing.ts). */
const WEBHOOK_HEADERS = [
  webhookHeader(
    "webhook-id",
    "The delivery id: the same on every retry of this delivery, so receivers can deduplicate",
    "0b6e3c1e-8a43-4d0a-9a4e-2f0f3c1d5b7a",
  ),
  webhookHeader(
    "webhook-timestamp",
    "Unix time in seconds of this attempt (signed); reject values far from your clock",
    "1767225600",
  ),
  webhookHeader(
    "webhook-signature",
    '`v1,` then the base64 HMAC-SHA256, keyed by the base64-decoded part of the `whsec_` secret, of `"{webhook-id}.{webhook-timestamp}.{raw body}"`',
    "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  ),
  webhookHeader("user-agent", "Identifies mailprobe's deliveries", WEBHOOK_USER_AGENT),
];

const webhookBody = (component: string) => ({
  required: true,
  content: { "application/json": { schema: { $ref: `#/components/schemas/${component}` } } },
});

/** The callbacks, as webhooks/payload.ts, ping.ts, signing.ts and deliver.ts send them. */
const WEBHOOKS = {
  "task.completed": {
    post: {
      operationId: "taskCompletedWebhook",
      summary: "A batch task finished",
      description: [
        "POSTed to the task's `webhook_url` when its last job is completed or failed (JSON tasks and uploads alike); one delivery per task, retried until acknowledged.",
        "Signed per Standard Webhooks (https://www.standardwebhooks.com) with the secret of `GET /api/v1/webhooks/secret`:",
        "verify `webhook-signature` over `{webhook-id}.{webhook-timestamp}.{raw body}` before parsing the body,",
        "reject stale timestamps, and deduplicate on `webhook-id`.",
        "URLs resolving to loopback, private or link-local addresses are refused unless the server sets WEBHOOK_ALLOW_PRIVATE=true.",
      ].join(" "),
      tags: [TAG.webhooks],
      security: [],
      parameters: WEBHOOK_HEADERS,
      requestBody: webhookBody("TaskCompletedEvent"),
      responses: {
        "2XX": { description: `Delivered: any 2xx status ends the deliveries. ${WEBHOOK_RETRIES}` },
      },
    },
  },
  ping: {
    post: {
      operationId: "pingWebhook",
      summary: "A test delivery",
      description:
        "POSTed to the `url` of `POST /api/v1/webhooks/test`, signed like every delivery (see `task.completed`): check a receiver's signature verification before real tasks rely on it. One attempt, not retried; redeliver it to try again.",
      tags: [TAG.webhooks],
      security: [],
      parameters: WEBHOOK_HEADERS,
      requestBody: webhookBody("PingEvent"),
      responses: {
        "2XX": { description: "Delivered: the delivery log shows it as delivered" },
      },
    },
  },
};

type OpenapiOptions = NonNullable<FastifyDynamicSwaggerOptions["openapi"]>;

const OPENAPI: OpenapiOptions = {
  openapi: "3.1.0",
  info: {
    title: "mailprobe API",
    version: "1.0.0",
    summary: "Self-hostable email verification: realtime and batch, credits, usage reports.",
    description: [
      "Every `/api/v1` request carries an API key (`Authorization: Bearer <key>` or `X-API-Key: <key>`) or a session JWT (`Authorization: Bearer <jwt>`).",
      "Errors answer the `Error` envelope `{ error: { code, message, details? } }`; every response carries `X-Request-ID`.",
      "Rate-limited requests answer 429 with `Retry-After`.",
    ].join(" "),
    license: { name: "MIT", identifier: "MIT" },
  },
  // Relative: the document describes the server that serves it, whatever its address.
  servers: [{ url: "/", description: "The server serving this document" }],
  tags: Object.values(TAG).map((name) => ({ name, description: TAG_DESCRIPTIONS[name] })),
  components: {
    securitySchemes: {
      bearerAuth: {
        type: "http",
        scheme: "bearer",
        description: "An API key, or a session JWT from `POST /api/v1/auth/session`",
      },
      apiKeyHeader: { type: "apiKey", in: "header", name: "X-API-Key", description: "An API key" },
    },
    parameters: {
      RequestId: REQUEST_ID_PARAMETER,
    },
    headers: {
      RequestId: REQUEST_ID_HEADER,
      RetryAfter: {
        description: "Seconds to wait before retrying",
        schema: { type: "integer", minimum: 1 },
      },
    },
  },
  security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
  webhooks: WEBHOOKS,
};

const HTTP_METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options", "trace"]);

type Json = Record<string, unknown>;
interface Operation extends Json {
  parameters?: Json[];
  responses?: Record<string, Json>;
}

const sortedByKey = <T>(map: Record<string, T> | undefined): Record<string, T> =>
  Object.fromEntries(Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** Every operation takes X-Request-ID and every response sends it; 429s also send Retry-After. */
function withSharedHeaders(op: Operation): Operation {
  const responses = Object.fromEntries(
    Object.entries(op.responses ?? {}).map(([status, response]) => [
      status,
      {
        ...response,
        headers: {
          ...(response.headers as Json | undefined),
          ...(status === "429" ? { "Retry-After": { $ref: "#/components/headers/RetryAfter" } } : {}),
          "X-Request-ID": { $ref: "#/components/headers/RequestId" },
        },
      },
    ]),
  );
  const { [OPTIONAL_BODY]: isBodyOptional, ...rest } = op;
  return {
    ...rest,
    ...(isBodyOptional === true ? { requestBody: { ...(op.requestBody as Json), required: false } } : {}),
    parameters: [
      ...(op.parameters ?? []).map(optionalWhenDefaulted),
      { $ref: "#/components/parameters/RequestId" },
    ],
    responses,
  };
}

/**
 * A query parameter with a default is optional to the caller: Fastify's schema lists it as
 * required because ajv fills the default in before checking, but a client generated from the
 * document must not be forced to send `limit` and `offset`.
 */
function optionalWhenDefaulted(parameter: Json): Json {
  const schema = parameter.schema as Json | undefined;
  return parameter.in === "query" && parameter.required === true && schema && "default" in schema
    ? { ...parameter, required: false }
    : parameter;
}

/**
 * The last step (swagger's transformObject): shared headers on every operation, and paths and
 * schemas sorted by name so the document does not depend on plugin registration order.
 */
function finishDocument(doc: Json): Json {
  const paths = doc.paths as Record<string, Record<string, unknown>> | undefined;
  const components = doc.components as Json | undefined;
  const finishedPaths = Object.fromEntries(
    Object.entries(sortedByKey(paths)).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item).map(([key, value]) => [
          key,
          HTTP_METHODS.has(key) ? withSharedHeaders(value as Operation) : value,
        ]),
      ),
    ]),
  );
  return {
    ...doc,
    paths: finishedPaths,
    components: { ...components, schemas: sortedByKey(components?.schemas as Json | undefined) },
  };
}

/** The @fastify/swagger options (build-app.ts registers the plugin with them). */
export const SWAGGER_OPTIONS: FastifyDynamicSwaggerOptions = {
  openapi: OPENAPI,
  // Components are named after their $id ("Task"), not swagger's default "def-<n>".
  refResolver: {
    buildLocalReference: (json, _baseUri, _fragment, i) =>
      typeof json.$id === "string" ? json.$id : `def-${i.toString()}`,
  },
  transformObject: (documentObject) =>
    "openapiObject" in documentObject
      ? finishDocument(documentObject.openapiObject)
      : documentObject.swaggerObject,
};
