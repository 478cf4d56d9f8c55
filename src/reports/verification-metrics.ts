import type { Database } from "../db/client.ts";
import {
  countJobs,
  countTasks,
  countUniqueAddresses,
  countVerifications,
  inReportTransaction,
  NO_JOBS,
  NO_VERIFICATIONS,
  type JobCounts,
  type VerificationCounts,
} from "../db/queries/reports.ts";
import type { StatusCounts } from "../db/queries/task-metrics.ts";
import { utcDaysOf, windowOf, type DateRange, type DateRangeInput } from "./date-range.ts";
import { metricsScope } from "./validation.ts";

export interface JobStatusCounts {
  pending: number;
  processing: number;
  completed: number;
  failed: number;
}

/** The counters shared by the totals and each series point (definitions: docs/reporting.md). */
export interface MetricsCounts {
  totalVerifications: number;
  totalTasks: number;
  uniqueEmailAddresses: number;
  jobStatus: JobStatusCounts;
  /** Under the spec's status names, the same shape as a task's metrics (db/queries/task-metrics.ts). */
  verificationStatus: StatusCounts;
  totalCatchall: number;
  totalRoleBased: number;
  totalDisposableDomainEmails: number;
  /** Beyond the spec: results whose domain is a free mailbox provider. */
  totalFreeProviderEmails: number;
}

export interface MetricsPoint extends MetricsCounts {
  /** UTC calendar day, YYYY-MM-DD. */
  date: string;
}

export interface VerificationMetricsReport extends MetricsCounts {
  userId: string;
  /** The range the numbers cover when both ends were given (then with a series), else null. */
  range: DateRange | null;
  lastVerificationRequestedAt: Date | null;
  lastVerificationCompletedAt: Date | null;
  /** Only with a range: every UTC day from date(from) to date(to), zeros included. */
  series: MetricsPoint[] | null;
}

function countsOf(v: VerificationCounts, j: JobCounts, tasks: number, unique: number): MetricsCounts {
  return {
    totalVerifications: v.total,
    totalTasks: tasks,
    uniqueEmailAddresses: unique,
    jobStatus: { pending: j.pending, processing: j.processing, completed: j.completed, failed: j.failed },
    verificationStatus: v.byStatus,
    totalCatchall: v.catchallDomain,
    totalRoleBased: v.roleBased,
    totalDisposableDomainEmails: v.disposable,
    totalFreeProviderEmails: v.freeProvider,
  };
}

const newest = (...dates: Array<Date | null>): Date | null =>
  dates.reduce<Date | null>((acc, d) => (d !== null && (acc === null || d > acc) ? d : acc), null);

/**
 * GET /metrics/verifications. Without from/to: the user's whole history, no series. With them:
 * every number is restricted to rows created in [from, to) and the daily series is included, so
 * each additive counter of the totals equals the sum of its series points. With only one: the
 * numbers are restricted on that side, without a series (validation.ts metricsScope).
 */
export async function reportVerificationMetrics(
  db: Database,
  userId: string,
  query: DateRangeInput,
): Promise<VerificationMetricsReport> {
  const scope = metricsScope(query);
  const range = scope.kind === "range" ? scope.range : null;
  const window = range ? windowOf(range) : scope.kind === "bounds" ? scope.bounds : null;
  // One snapshot for the four statements (see inReportTransaction).
  const [v, j, t, u] = await inReportTransaction(db, async (q) => {
    const verifications = await countVerifications(q, userId, window);
    const jobs = await countJobs(q, userId, window);
    const tasks = await countTasks(q, userId, window);
    const unique = await countUniqueAddresses(q, userId, window);
    return [verifications, jobs, tasks, unique] as const;
  });
  return {
    userId,
    range,
    ...countsOf(v.totals, j.totals, t.totals, u.totals),
    lastVerificationRequestedAt: newest(v.totals.lastRealtimeCreatedAt, j.totals.lastCreatedAt),
    lastVerificationCompletedAt: v.totals.lastValidatedAt,
    series: range
      ? utcDaysOf(range).map((date) => ({
          date,
          ...countsOf(
            v.byDay.get(date) ?? NO_VERIFICATIONS,
            j.byDay.get(date) ?? NO_JOBS,
            t.byDay.get(date) ?? 0,
            u.byDay.get(date) ?? 0,
          ),
        }))
      : null,
  };
}
