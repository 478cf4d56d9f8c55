import { VERIFICATION_STATUSES, type VerificationStatus } from "../../verify/index.ts";
import type { Queryable } from "../client.ts";

/** Jobs by state. */
type JobCounts = {
  pending: number;
  processing: number;
  completed: number;
  failed: number;
  cancelled: number;
};
/** Results by verification status plus the two flags the spec counts beside them. */
type VerificationCounts = StatusCounts & {
  role_based: number;
  disposable_domain_emails: number;
};

/** The spec's batch metrics object, computed in SQL over a task's jobs and their results. */
export interface TaskMetrics {
  totalEmailAddresses: number;
  jobStatus: JobCounts;
  verificationStatus: VerificationCounts;
  lastVerificationRequestedAt: Date | null;
  lastVerificationCompletedAt: Date | null;
  /**
   * Pending jobs waiting for a retry (greylisting, unreachable host…): the earliest and the latest
   * retry scheduled, and when the task's retries end (retry window, finish now): by then every
   * one of them is settled.
   */
  retries: {
    pending: number;
    nextAttemptAt: Date | null;
    lastAttemptAt: Date | null;
    settlesAt: Date | null;
  };
  /** Providers whose pace holds this task's addresses back (docs/pacing.md); filled by tasks/paced-metrics.ts. */
  paced: PacedProvider[];
}

/** A provider pacing us, as one task sees it. */
export interface PacedProvider {
  provider: string;
  /** Its name for people ("Gmail"). */
  name: string;
  /** The task's addresses still to ask it. */
  pending: number;
  /** RCPTs per minute its pace allows over all our identities; null while it is still being learnt. */
  ratePerMinute: number | null;
  /** When the last of them should be answered at that rate; null while the pace is being learnt. */
  expectedDoneAt: Date | null;
}

/** One row of METRICS_COLUMNS: the counts under their SQL names, flat. */
export interface MetricsRow extends JobCounts, VerificationCounts {
  total: number;
  last_requested: Date | null;
  last_completed: Date | null;
  retry_pending: number;
  next_retry_at: Date | null;
  last_retry_at: Date | null;
  retries_end_at: Date | null;
}

/**
 * One `count(*) filter (...) as <status>` column per verification status, over `alias`.status:
 * the task metrics and the verification report count the same list, so it is written once.
 */
export const countsByVerificationStatus = (alias: string): string =>
  VERIFICATION_STATUSES.map((s) => `count(*) filter (where ${alias}.status = '${s}') as ${s}`).join(",\n  ");

/** The per-status counts of a row selected with countsByVerificationStatus (0 for a missing row). */
export const statusCountsOf = (r: Partial<Record<VerificationStatus, number>> | undefined): StatusCounts =>
  Object.fromEntries(VERIFICATION_STATUSES.map((s) => [s, r?.[s] ?? 0])) as StatusCounts;

/** Results by verification status, under the spec's status names: one shape for tasks and reports. */
export type StatusCounts = Record<VerificationStatus, number>;

/**
 * Aggregate columns shared by the per-task and per-day metric queries (j = email_jobs, v = results,
 * t = tasks).
 */
const METRICS_COLUMNS = `
  count(*) as total,
  count(*) filter (where j.status = 'pending') as pending,
  count(*) filter (where j.status = 'processing') as processing,
  count(*) filter (where j.status = 'completed') as completed,
  count(*) filter (where j.status = 'failed') as failed,
  count(*) filter (where j.status = 'cancelled') as cancelled,
  ${countsByVerificationStatus("v")},
  count(*) filter (where v.is_role_based) as role_based,
  count(*) filter (where v.is_disposable) as disposable_domain_emails,
  max(j.created_at) as last_requested,
  max(v.validated_at) as last_completed,
  count(*) filter (where j.status = 'pending' and j.attempts > 0) as retry_pending,
  min(j.run_after) filter (where j.status = 'pending' and j.attempts > 0) as next_retry_at,
  max(j.run_after) filter (where j.status = 'pending' and j.attempts > 0) as last_retry_at,
  max(t.retries_end_at) filter (where j.status = 'pending' and j.attempts > 0) as retries_end_at`;

export const toTaskMetrics = (r: MetricsRow | undefined): TaskMetrics => ({
  totalEmailAddresses: r?.total ?? 0,
  jobStatus: {
    pending: r?.pending ?? 0,
    processing: r?.processing ?? 0,
    completed: r?.completed ?? 0,
    failed: r?.failed ?? 0,
    cancelled: r?.cancelled ?? 0,
  },
  verificationStatus: {
    ...statusCountsOf(r),
    role_based: r?.role_based ?? 0,
    disposable_domain_emails: r?.disposable_domain_emails ?? 0,
  },
  lastVerificationRequestedAt: r?.last_requested ?? null,
  lastVerificationCompletedAt: r?.last_completed ?? null,
  retries: {
    pending: r?.retry_pending ?? 0,
    nextAttemptAt: r?.next_retry_at ?? null,
    lastAttemptAt: r?.last_retry_at ?? null,
    settlesAt: r?.retries_end_at ?? null,
  },
  paced: [],
});

/** Metrics of several tasks in one grouped query (a page of the task list). */
export async function metricsOfTasks(q: Queryable, taskIds: string[]): Promise<Map<string, TaskMetrics>> {
  if (taskIds.length === 0) return new Map();
  const { rows } = await q.query<MetricsRow & { task_id: string }>(
    `select j.task_id, ${METRICS_COLUMNS}
       from email_jobs j join tasks t on t.id = j.task_id
            left join email_verifications v on v.id = j.email_id
      where j.task_id = any($1::uuid[])
      group by j.task_id`,
    [taskIds],
  );
  return new Map(rows.map((r) => [r.task_id, toTaskMetrics(r)]));
}

/** One point per UTC day: jobs grouped by the day their result was validated (pending ones by creation day). */
export async function dailyMetricsOfTask(
  q: Queryable,
  taskId: string,
  from: Date,
  to: Date,
): Promise<Array<{ date: string; metrics: TaskMetrics }>> {
  const { rows } = await q.query<MetricsRow & { day: string }>(
    `select to_char(date_trunc('day', coalesce(v.validated_at, j.created_at) at time zone 'UTC'), 'YYYY-MM-DD') as day,
            ${METRICS_COLUMNS}
       from email_jobs j join tasks t on t.id = j.task_id
            left join email_verifications v on v.id = j.email_id
      where j.task_id = $1
        and coalesce(v.validated_at, j.created_at) >= $2 and coalesce(v.validated_at, j.created_at) < $3
      group by 1`,
    [taskId, from, to],
  );
  return rows.map((r) => ({ date: r.day, metrics: toTaskMetrics(r) }));
}
