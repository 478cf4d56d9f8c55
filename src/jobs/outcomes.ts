// What to do with each job of a processed group: pure decisions over the engine's answers (or
// the error that stopped it), the job's counters and the retry schedules. The runner applies them.
import type { JobRecord, Reschedule, RetrySchedule } from "../db/queries/jobs.ts";
import { isSandboxAddress, type VerificationResult } from "../verify/index.ts";
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
  | {
      kind: "retry";
      job: JobRecord;
      runAfter: Date;
      error: string | null;
      /** The claim's attempt is undone: the address was not really tried. */
      refundAttempt: boolean;
      /** The schedule this retry takes a step of (its counter goes up by one). */
      schedule: RetrySchedule | null;
      /** The unknown answer that is retried: it stands if the task's retries end first. */
      result: VerificationResult | null;
    }
  | { kind: "failed"; job: JobRecord; error: string };

/** Retries of `job` already scheduled on `schedule`. */
const retriesMade = (job: JobRecord, schedule: RetrySchedule): number =>
  schedule === "deferred" ? job.deferredRetries : job.unreachableRetries;

/** A job's answer: stored, or rescheduled when it is `unknown` for a reason worth a retry. */
export function outcomeOfResult(
  job: JobRecord,
  result: VerificationResult,
  now: Date,
  schedules: RetrySchedules,
  /** When the session that got `result` began (default `now`). */
  askedAt: Date = now,
): JobOutcome {
  const reason = result.status === "unknown" ? result.unknownReason : null;
  // A sandbox answer is fixed (verify/sandbox.ts): a retry would give it again, and its
  // timeout_smtp would otherwise be requeued at once as "interrupted", forever.
  if (reason === null || isSandboxAddress(job.emailAddress)) return { kind: "result", job, result };
  // `cancelled` and the timeout_* reasons only arise when our own shutdown aborted the session:
  // the address was never really tried.
  if (result.pacedBy != null) return pacedRetry(job, result, result.pacedBy.retryAt, now);
  if (retryClassOf(reason) === "interrupted") {
    return {
      kind: "retry",
      job,
      runAfter: now,
      error: reason,
      refundAttempt: true,
      schedule: null,
      result: null,
    };
  }
  // Our own resolvers or proxy failed, which says nothing about the address: the patient
  // schedule (VERIFY_RETRY_DELAYS, minutes), so that a resolver restart does not turn a task
  // into unknowns. Once it is spent the unknown stands (and is refunded like any other).
  const retryClass = result.dependencyFailure ? "deferred" : retryClassOf(reason);
  if (retryClass !== "deferred" && retryClass !== "unreachable") return { kind: "result", job, result };
  // Indexed by the retries of this cause, not by `attempts`: a re-claim after a crash or an
  // expired lease, or a retry for another cause, must not cut the greylisting schedule short.
  const delay = result.dependencyFailure
    ? (schedules.deferredMs[retriesMade(job, "deferred")] ?? null)
    : retryDelayMs(reason, retriesMade(job, retryClass) + 1, schedules, result.retryAfterMs ?? null);
  if (delay === null) return { kind: "result", job, result };
  // A delay of the schedule counts from when the server was asked: a greylisting window starts at
  // the attempt, not when a long session (four connections for 36 deferred addresses) ended. A
  // server's hint counts from its reply.
  const from = result.retryAfterMs != null && !result.dependencyFailure ? now : askedAt;
  return {
    kind: "retry",
    job,
    runAfter: new Date(from.getTime() + delay),
    error: reason,
    refundAttempt: false,
    schedule: retryClass,
    result,
  };
}

// A paced address with no time given (the pace's store was out of reach) looks again this soon.
const PACED_FALLBACK_MS = 5_000;

/**
 * A provider's pace held the address back (its volume refusal, or no room to ask it): it is
 * asked again when the pace has room, as often as the task's retry window allows. The pace, not
 * VERIFY_RETRY_DELAYS, governs it (docs/pacing.md), so no step of the schedule is taken and the
 * claim's attempt is undone; the unknown stands if the window ends first (settleRetryPastEnd).
 */
function pacedRetry(job: JobRecord, result: VerificationResult, retryAt: Date | null, now: Date): JobOutcome {
  const at = retryAt ?? new Date(now.getTime() + PACED_FALLBACK_MS);
  return {
    kind: "retry",
    job,
    runAfter: at > now ? at : now,
    error: result.unknownReason,
    refundAttempt: true,
    schedule: null,
    result,
  };
}

/** The reasons that say a server holds back every address for a while (greylisting), not a limit on us. */
const HOLDS_BACK_EVERYONE: ReadonlySet<string> = new Set(["greylisted", "temporary_failure"]);

/** Whether an answer is a server holding everyone back (not a rate limit, not our own resolver or proxy failing). */
export const holdsBackEveryone = (answer: VerificationResult | null): boolean =>
  answer !== null &&
  answer.status === "unknown" &&
  !answer.dependencyFailure &&
  HOLDS_BACK_EVERYONE.has(answer.unknownReason ?? "");

/**
 * The (task, domain) pairs whose server deferred a job's first attempt with greylisting or a
 * temporary failure: their untried jobs may start their own retry chains now
 * (advanceDeferringDomains). A rate limit is left out: more addresses at once is what it refuses.
 */
export function firstDeferralsOf(outcomes: readonly JobOutcome[]): Array<{ taskId: string; domain: string }> {
  const seen = new Map<string, { taskId: string; domain: string }>();
  for (const o of outcomes) {
    if (o.kind !== "retry" || o.schedule !== "deferred" || o.job.deferredRetries !== 0) continue;
    if (!holdsBackEveryone(o.result)) continue;
    seen.set(`${o.job.taskId} ${o.job.domain}`, { taskId: o.job.taskId, domain: o.job.domain });
  }
  return [...seen.values()];
}

/**
 * A retry its task no longer waits for: one scheduled after the task's retries end (its retry
 * window, or a finish now) records the unknown answer it retries instead. Only a retry of a
 * server's answer (deferred, unreachable, paced) ends so; a busy host or our own shutdown tried
 * nothing.
 */
export function settleRetryPastEnd(o: JobOutcome, retriesEndAt: Date | null): JobOutcome {
  if (o.kind !== "retry" || o.result === null || retriesEndAt === null) return o;
  return o.runAfter.getTime() > retriesEndAt.getTime() ? { kind: "result", job: o.job, result: o.result } : o;
}

/**
 * Jobs handed back untried (no session asked them), due again at `runAfter` (default: as they
 * were, keeping their place). The claim's attempt is refunded unless `countClaim` (a first touch's
 * rest: its next claim is then known not to be its first).
 */
export function outcomesOfUntried(
  jobs: readonly JobRecord[],
  opts: { runAfter?: Date; countClaim?: boolean } = {},
): JobOutcome[] {
  return jobs.map((job) => ({
    kind: "retry",
    job,
    runAfter: opts.runAfter ?? job.runAfter,
    error: null,
    refundAttempt: opts.countClaim !== true,
    schedule: null,
    result: null,
  }));
}

/** Why a group could not be verified at all. */
export type GroupFailure =
  /** This process already uses every session slot of the host: keep the queue place. */
  | { kind: "host_busy_locally" }
  /**
   * The cluster had no free slot within the wait: try again in a moment; or every egress
   * identity rests for the host's provider: try again when the first wakes (`retryAt`).
   */
  | { kind: "host_busy_in_cluster"; retryAt?: Date | null }
  /** Our own shutdown cut it short. */
  | { kind: "stopping" }
  /** The per-host slot table could not be reached (the database is down): the address was not tried. */
  | { kind: "slots_unavailable" }
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
      return outcomesOfUntried(jobs);
    case "host_busy_in_cluster":
    case "slots_unavailable": {
      const soon = now.getTime() + hostBusyDelayMs(rand);
      const wake = failure.kind === "host_busy_in_cluster" ? (failure.retryAt?.getTime() ?? 0) : 0;
      const runAfter = new Date(Math.max(soon, wake));
      return jobs.map((job) => ({
        kind: "retry",
        job,
        runAfter,
        error: null,
        refundAttempt: true,
        schedule: null,
        result: null,
      }));
    }
    case "stopping":
      return jobs.map((job) => ({
        kind: "retry",
        job,
        runAfter: now,
        error: null,
        refundAttempt: true,
        schedule: null,
        result: null,
      }));
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
              schedule: null,
              result: null,
            },
      );
  }
}

/**
 * Jobs whose outcome could not be recorded even after retries: they must not stay `processing`.
 * Back to the queue at once with the attempt refunded when the database was out of reach (the
 * verification was fine, only the write was lost); otherwise (a fault of ours) like an internal
 * failure: back off, and fail the job after `maxAttempts` so a write that can never succeed
 * cannot loop forever.
 */
export function outcomesOfUnrecorded(
  jobs: readonly JobRecord[],
  cause: { databaseUnavailable: boolean; message: string },
  now: Date,
  maxAttempts: number,
  rand: () => number = Math.random,
): JobOutcome[] {
  if (cause.databaseUnavailable)
    return jobs.map((job) => ({
      kind: "retry",
      job,
      runAfter: now,
      error: job.lastError,
      refundAttempt: true,
      schedule: null,
      result: null,
    }));
  return outcomesOfFailure(
    jobs,
    { kind: "internal", message: `recording failed: ${cause.message}` },
    now,
    maxAttempts,
    rand,
  );
}

/** The row that puts a job back in the queue for a retry outcome. */
export const rescheduleOf = (o: JobOutcome & { kind: "retry" }): Reschedule => ({
  id: o.job.id,
  runAfter: o.runAfter,
  error: o.error,
  refundAttempt: o.refundAttempt,
  schedule: o.schedule,
  result: o.result,
});
