// What to do with each job of a processed group: pure decisions over the engine's answers (or
// the error that stopped it), the job's attempts and the retry schedules. The runner applies them.
import type { JobRecord } from "../db/queries/jobs.ts";
import type { VerificationResult } from "../verify/index.ts";
import {
  hostBusyDelayMs,
  internalRetryDelayMs,
  retryClassOf,
  retryDelayMs,
  type RetrySchedules,
} from "./backoff.ts";

/** What to do with each job of a processed group. */
export type JobOutcome =
  | { kind: "result"; job: JobRecord; result: VerificationResult }
  | { kind: "retry"; job: JobRecord; runAfter: Date; error: string | null; refundAttempt: boolean }
  | { kind: "failed"; job: JobRecord; error: string };

/** A job's answer: stored, or rescheduled when it is `unknown` for a reason worth a retry. */
export function outcomeOfResult(
  job: JobRecord,
  result: VerificationResult,
  now: Date,
  schedules: RetrySchedules,
): JobOutcome {
  const reason = result.status === "unknown" ? result.unknownReason : null;
  if (reason === null) return { kind: "result", job, result };
  // `cancelled` and the timeout_* reasons only arise when our own shutdown aborted the session:
  // the address was never really tried.
  if (retryClassOf(reason) === "interrupted") {
    return { kind: "retry", job, runAfter: now, error: reason, refundAttempt: true };
  }
  const delay = retryDelayMs(reason, job.attempts, schedules, result.retryAfterMs ?? null);
  if (delay === null) return { kind: "result", job, result };
  return {
    kind: "retry",
    job,
    runAfter: new Date(now.getTime() + delay),
    error: reason,
    refundAttempt: false,
  };
}

/** Why a group could not be verified at all. */
export type GroupFailure =
  /** This process already uses every session slot of the host: keep the queue place. */
  | { kind: "host_busy_locally" }
  /** The cluster had no free slot within the wait: try again in a moment. */
  | { kind: "host_busy_in_cluster" }
  /** Our own shutdown cut it short. */
  | { kind: "stopping" }
  /** A bug or an infrastructure fault: back off, and give up after `maxAttempts`. */
  | { kind: "internal"; message: string };

/** Outcomes for every job of a group that could not be verified. */
export function outcomesOfFailure(
  jobs: readonly JobRecord[],
  failure: GroupFailure,
  now: Date,
  maxAttempts: number,
  rand: () => number = Math.random,
): JobOutcome[] {
  switch (failure.kind) {
    case "host_busy_locally":
      // Claims skip this host's domains while it is saturated, so the jobs keep their place.
      return jobs.map((job) => ({
        kind: "retry",
        job,
        runAfter: job.runAfter,
        error: null,
        refundAttempt: true,
      }));
    case "host_busy_in_cluster": {
      const runAfter = new Date(now.getTime() + hostBusyDelayMs(rand));
      return jobs.map((job) => ({ kind: "retry", job, runAfter, error: null, refundAttempt: true }));
    }
    case "stopping":
      return jobs.map((job) => ({ kind: "retry", job, runAfter: now, error: null, refundAttempt: true }));
    case "internal":
      return jobs.map((job) =>
        job.attempts >= maxAttempts
          ? { kind: "failed", job, error: failure.message }
          : {
              kind: "retry",
              job,
              runAfter: new Date(now.getTime() + internalRetryDelayMs(job.attempts, rand)),
              error: failure.message,
              refundAttempt: false,
            },
      );
  }
}
