/** The event types mailprobe sends; stable dotted strings (also the outbox's event_type). */
export const WEBHOOK_EVENT_TYPES = ["task.completed"] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** What the batch pipeline reports when a task finishes. */
export interface TaskCompletedEvent {
  taskId: string;
  /** How the task ended: every job done (`completed`, the default), or cancelled by its owner. */
  status?: "completed" | "cancelled";
  uploadId: string | null;
  metrics: Record<string, unknown>;
}

/** The wire envelope (DESIGN §5); `upload_id` only when the task came from an upload. */
export interface TaskCompletedPayload {
  type: "task.completed";
  timestamp: string;
  data: {
    task_id: string;
    status: "completed" | "cancelled";
    upload_id?: string;
    metrics: Record<string, unknown>;
  };
}

export function taskCompletedPayload(event: TaskCompletedEvent, at: Date): TaskCompletedPayload {
  return {
    type: "task.completed",
    timestamp: at.toISOString(),
    data: {
      task_id: event.taskId,
      status: event.status ?? "completed",
      ...(event.uploadId !== null ? { upload_id: event.uploadId } : {}),
      metrics: event.metrics,
    },
  };
}

/**
 * The request body for a stored payload. The outbox keeps payloads as jsonb, which reorders
 * object keys (shortest first), so the envelope is rebuilt here in the documented order
 * (type, timestamp, data) instead of being sent in jsonb's order. The same row always yields the
 * same bytes, so every retry carries an identical body.
 */
export function serializeWebhookPayload(stored: Record<string, unknown>): string {
  const { type, timestamp, data, ...rest } = stored;
  if (typeof data !== "object" || data === null) return JSON.stringify({ type, timestamp, data, ...rest });
  // `status` is absent from payloads stored before cancels existed; undefined keys are not written.
  const { task_id, status, upload_id, metrics, ...more } = data as Record<string, unknown>;
  return JSON.stringify({ type, timestamp, data: { task_id, status, upload_id, metrics, ...more }, ...rest });
}
