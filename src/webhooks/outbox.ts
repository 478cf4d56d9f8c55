import type { Queryable } from "../db/client.ts";
import { insertWebhookDelivery } from "../db/queries/webhook-deliveries.ts";
import { newId } from "../lib/ids.ts";
import { taskCompletedPayload, type TaskCompletedEvent } from "./payload.ts";

export type { TaskCompletedEvent };

/**
 * Inserts the delivery row inside the caller's transaction; idempotent per (task_id, event_type)
 * (unique already in schema). Writing the event in the same transaction that finishes the task is
 * what makes the outbox reliable: the webhook exists if and only if the task completed. The
 * dispatcher picks it up after commit; nothing here touches the network.
 */
export async function enqueueTaskCompleted(
  tx: Queryable,
  input: { userId: string; url: string; event: TaskCompletedEvent; at: Date },
): Promise<void> {
  await insertWebhookDelivery(tx, {
    id: newId(),
    userId: input.userId,
    taskId: input.event.taskId,
    eventType: "task.completed",
    url: input.url,
    payload: taskCompletedPayload(input.event, input.at),
    at: input.at,
  });
}
