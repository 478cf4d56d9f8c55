import type { TaskMetrics } from "../db/queries/task-metrics.ts";

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * The spec's metrics object, as the API and the completion webhook show it. `progress` is the
 * share of jobs that reached a final state (completed, failed or cancelled): 1 when nothing is
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
  };
}
