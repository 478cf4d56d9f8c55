import { Type } from "typebox";
import { DateTime, ref, Uuid } from "./common.ts";
import { MetricsSchema } from "./tasks.ts";

/** The caller's Standard Webhooks signing secret. */
export const WebhookSecretReply = Type.Object(
  {
    secret: Type.String({
      pattern: "^whsec_",
      description: "Standard Webhooks secret for verifying deliveries",
    }),
  },
  { $id: "WebhookSecret", description: "The secret that signs the caller's webhook deliveries" },
);

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
      upload_id: Type.Optional(Type.Unsafe<string>({ ...Uuid, description: "Only for file uploads" })),
      metrics: ref(MetricsSchema, "The task's final metrics, as GET /api/v1/tasks/{id} shows them"),
    }),
  },
  {
    $id: "TaskCompletedEvent",
    description: "Sent once when every job of a task is completed or failed",
  },
);
