// Retrying a domain that holds everyone back: a few addresses ask for all.
//
// A greylisting server defers every new address for its window, and each retry of a whole
// domain before the window ends earns one 4xx per address: errors the server counts against us
// (a connection takes at most SMTP_ERROR_BUDGET of them, so 36 deferred addresses cost four
// connections per retry). MTAs treat such a destination the same way: Postfix marks a site that
// keeps deferring "dead" and defers its queued mail without a delivery attempt until the next
// retry. Here, a retry of a domain whose addresses were deferred asks only its first
// CANARY_SIZE due retries; while they are deferred again, the others take the same step of their
// own schedule unasked, their last real answer standing. When a canary gets a definitive answer,
// the others are asked at once, in the same worker slot. An address never asked before is always
// asked: its first attempt is what starts its greylisting window.
import type { JobRecord } from "../db/queries/jobs.ts";
import { FIRST_TOUCH_SIZE } from "./first-touch.ts";
import { holdsBackEveryone, outcomeOfResult, type JobOutcome } from "./outcomes.ts";
import type { RetrySchedules } from "./backoff.ts";
import type { VerificationResult } from "../verify/index.ts";

/** Retried addresses asked at each step of a deferring domain's chain: one RCPT write. */
export const CANARY_SIZE = FIRST_TOUCH_SIZE;

/** A job waiting out a greylisting or temporary failure of its own. */
const isDeferredRetry = (job: JobRecord): boolean =>
  job.deferredRetries > 0 && holdsBackEveryone(job.retryResult);

/**
 * The jobs to ask now and the deferred retries held back for the canary's answer: every job but
 * the deferred retries after the first CANARY_SIZE of them.
 */
export function splitCanary(jobs: readonly JobRecord[]): { ask: JobRecord[]; held: JobRecord[] } {
  const ask: JobRecord[] = [];
  const held: JobRecord[] = [];
  let canaries = 0;
  for (const job of jobs) {
    if (!isDeferredRetry(job)) ask.push(job);
    else if (canaries < CANARY_SIZE) {
      canaries++;
      ask.push(job);
    } else held.push(job);
  }
  return { ask, held };
}

/** What the canaries' answers say of the held jobs. */
export type CanaryVerdict =
  /** Every canary was held back again: the held jobs take their next step unasked. */
  | "held_back"
  /** A canary got a definitive answer: the window is over, ask the held jobs now. */
  | "through"
  /** Nothing conclusive (the session never asked them, or another kind of failure): hand them back. */
  | "inconclusive";

const answerOf = (o: JobOutcome): VerificationResult | null =>
  o.kind === "result" ? o.result : o.kind === "retry" ? o.result : null;

export function canaryVerdict(asked: readonly JobOutcome[]): CanaryVerdict {
  const answers = asked.filter((o) => isDeferredRetry(o.job)).map(answerOf);
  if (answers.some((a) => a !== null && a.status !== "unknown")) return "through";
  return answers.length > 0 && answers.every(holdsBackEveryone) ? "held_back" : "inconclusive";
}

/**
 * Held jobs whose canaries were held back again: each takes the next step of its own schedule
 * with its stored answer, or that answer stands when the schedule is spent. The claim counts as
 * an attempt, as every claim does.
 */
export function outcomesOfHeldBack(
  held: readonly JobRecord[],
  now: Date,
  schedules: RetrySchedules,
): JobOutcome[] {
  return held.map((job) => outcomeOfResult(job, job.retryResult!, now, schedules));
}
