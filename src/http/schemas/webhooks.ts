import { Type } from "typebox";
import { validationError } from "../../lib/app-error.ts";
import type { WebhookDelivery, WebhookSecretView } from "../../webhooks/service.ts";
import { MAX_ROTATION_GRACE_SECONDS, DEFAULT_ROTATION_GRACE_SECONDS } from "../../webhooks/secret.ts";
import { webhookUrlProblem } from "../../webhooks/url-policy.ts";
import { DateTime, documented, MAX_OFFSET, ref, StringEnum, Uuid, WebhookUrlDocumented } from "./common.ts";
import { WebhookDeliveryStatusSchema } from "./enums.ts";
import { MetricsSchema } from "./tasks.ts";

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

/** The caller's Standard Webhooks signing secret. */
export const WebhookSecretReply = Type.Object(
  {
    secret: Type.String({
      pattern: "^whsec_",
      description: "Standard Webhooks secret for verifying deliveries",
    }),
    previous_secret_expires_at: Nullable(
      DateTime,
      "After a rotation: until when the previous secret still signs deliveries too (a second `v1,` signature); null when it no longer does",
    ),
  },
  { $id: "WebhookSecret", description: "The secret that signs the caller's webhook deliveries" },
);

export const toWebhookSecretReply = (v: WebhookSecretView) => ({
  secret: v.secret,
  previous_secret_expires_at: v.previousExpiresAt?.toISOString() ?? null,
});

export const RotateWebhookSecretBody = Type.Object(
  {
    grace_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_ROTATION_GRACE_SECONDS,
        default: DEFAULT_ROTATION_GRACE_SECONDS,
        description: `How long the previous secret keeps signing beside the new one (default ${DEFAULT_ROTATION_GRACE_SECONDS} s = 24 h, at most ${MAX_ROTATION_GRACE_SECONDS} s = 7 days; 0 stops it at once)`,
      }),
    ),
  },
  { additionalProperties: false },
);

/** Longest `last_error` the log shows; the attempt log keeps up to 500 characters. */
const MAX_LOGGED_ERROR_LENGTH = 200;

export const WebhookDeliverySchema = Type.Object(
  {
    id: Uuid,
    task_id: Type.Union([Uuid, Type.Null()], {
      description: "The task whose completion this reports; null for a test ping",
    }),
    event_type: Type.String({ description: "`task.completed`, or `ping` for a test delivery" }),
    url: Type.String({ description: "Where it is sent, as stored" }),
    status: ref(WebhookDeliveryStatusSchema),
    attempts: Type.Integer({ description: "Attempts made so far, redeliveries included" }),
    last_status_code: Type.Union([Type.Integer(), Type.Null()], {
      description: "HTTP status of the last attempt; null before the first or when no answer came",
    }),
    last_error: Nullable(
      Type.String(),
      `Why the last attempt did not deliver (timeout, connection error, address not allowed, redirect not followed), at most ${MAX_LOGGED_ERROR_LENGTH} characters; null otherwise`,
    ),
    next_attempt_at: Nullable(DateTime, "When the next attempt is due (pending only); null otherwise"),
    delivered_at: Nullable(DateTime, "When a receiver answered 2xx (delivered only); null otherwise"),
    created_at: DateTime,
  },
  {
    $id: "WebhookDelivery",
    description: "One webhook message and its delivery state; its `id` is the `webhook-id` header",
  },
);

export const toWebhookDeliveryItem = (d: WebhookDelivery) => ({
  id: d.id,
  task_id: d.taskId,
  event_type: d.eventType,
  url: d.url,
  status: d.status,
  attempts: d.attempts,
  last_status_code: d.lastStatusCode,
  last_error:
    d.lastError !== null && d.lastError.length > MAX_LOGGED_ERROR_LENGTH
      ? `${d.lastError.slice(0, MAX_LOGGED_ERROR_LENGTH - 1)}…`
      : d.lastError,
  next_attempt_at: d.status === "pending" ? d.nextAttemptAt.toISOString() : null,
  delivered_at: d.deliveredAt?.toISOString() ?? null,
  created_at: d.createdAt.toISOString(),
});

export const ListWebhookDeliveriesQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 10 }),
    offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 }),
  },
  { additionalProperties: false },
);

export const WebhookDeliveryListReply = Type.Object(
  {
    deliveries: Type.Array(ref(WebhookDeliverySchema)),
    count: Type.Integer({ description: "The caller's deliveries (all pages)" }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { $id: "WebhookDeliveryList", description: "A page of the caller's webhook deliveries, newest first" },
);

export const SendTestWebhookBody = Type.Object(
  {
    url: Type.String({
      maxLength: 2048,
      description: "Where to send the ping: the same rules as a task's `webhook_url`",
    }),
  },
  { additionalProperties: false },
);

/** The ping body as the document states it: checkPingUrl refuses what is not an absolute URL. */
export const SendTestWebhookBodyDocumented = documented(SendTestWebhookBody, {
  url: WebhookUrlDocumented("Where to send the ping: the same rules as a task's `webhook_url`"),
});

/** The ping's `url`: the rules of a task's webhook_url (400 VALIDATION_ERROR naming `url`). */
export function checkPingUrl(url: string, allowPrivate: boolean): string {
  const problem = webhookUrlProblem(url.trim(), allowPrivate);
  if (problem) throw validationError("Invalid url", [{ field: "url", reason: problem }]);
  return url.trim();
}

/**
 * The body of a task-completion delivery (webhooks/payload.ts builds it). No route sends it:
 * it is registered for the OpenAPI document's `webhooks` section (openapi.ts).
 */
export const TaskCompletedEvent = Type.Object(
  {
    type: Type.Literal("task.completed"),
    timestamp: Type.Unsafe<string>({ ...DateTime, description: "When the task finished" }),
    data: Type.Object({
      task_id: Uuid,
      status: StringEnum(
        ["completed", "cancelled"],
        "How the task ended: every job done, or cancelled by its owner (POST /api/v1/tasks/{id}/cancel)",
      ),
      upload_id: Type.Optional(Type.Unsafe<string>({ ...Uuid, description: "Only for file uploads" })),
      metrics: ref(MetricsSchema, "The task's final metrics, as GET /api/v1/tasks/{id} shows them"),
    }),
  },
  {
    $id: "TaskCompletedEvent",
    description: "Sent once when a task finishes: every job completed or failed, or the task cancelled",
  },
);

/** The body of a test delivery (POST /api/v1/webhooks/test; webhooks/ping.ts builds it). */
export const PingEvent = Type.Object(
  {
    type: Type.Literal("ping"),
    timestamp: Type.Unsafe<string>({ ...DateTime, description: "When the ping was asked for" }),
    data: Type.Object({}, { description: "Empty" }),
  },
  {
    $id: "PingEvent",
    description: "A test delivery, signed like every other; answer 2xx to mark it delivered",
  },
);
