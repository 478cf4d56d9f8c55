import type { TaskMetrics } from "../db/queries/task-metrics.ts";

/** What the batch pipeline reports when a task finishes. */
export interface TaskCompletedEvent {
  taskId: string;
  /** How the task ended: every job done (`completed`, the default), or cancelled by its owner. */
  status?: "completed" | "cancelled";
  uploadId: string | null;
  /** The wire object (`toMetricsReply`), frozen into the outbox row as it was at the finish. */
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

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * The spec's metrics object on the wire. The completion webhook freezes it into the outbox row in
 * the transaction that finishes the task, and the API's task replies show the same object (the
 * spec defines them alike), so http/ builds its replies with this one function too. `progress` is
 * the share of jobs that reached a final state (completed, failed or cancelled): 1 when nothing is
 * left to do.
 */
export function toMetricsReply(m: TaskMetrics) {
  const done = m.jobStatus.completed + m.jobStatus.failed + m.jobStatus.cancelled;
  const progress = m.totalEmailAddresses === 0 ? 0 : done / m.totalEmailAddresses;
  return {
    total_email_addresses: m.totalEmailAddresses,
    job_status: m.jobStatus,
    progress,
    progress_percent: Math.round(progress * 10_000) / 100,
    verification_status: m.verificationStatus,
    last_verification_requested_at: iso(m.lastVerificationRequestedAt),
    last_verification_completed_at: iso(m.lastVerificationCompletedAt),
    // Not in the spec's object (additive): addresses waiting for a retry and when the next is due.
    retries: {
      pending: m.retries.pending,
      next_attempt_at: iso(m.retries.nextAttemptAt),
      last_attempt_at: iso(m.retries.lastAttemptAt),
      settles_at: iso(m.retries.settlesAt),
    },
    // Not in the spec's object (additive): providers whose pace holds addresses back.
    paced: m.paced.map((p) => ({
      provider: p.provider,
      name: p.name,
      pending: p.pending,
      rate_per_minute: p.ratePerMinute === null ? null : Math.round(p.ratePerMinute * 10) / 10,
      expected_done_at: iso(p.expectedDoneAt),
    })),
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
