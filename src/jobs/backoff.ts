// When to try a verification job again: pure functions over attempts, reasons and the other
// side's hints (retry classes, internal faults, busy mail hosts, failed result writes). The
// polling loops' outage pause is lib/backoff.ts; the webhook schedule is webhooks/retry-schedule.ts.
import type { UnknownReason } from "../verify/index.ts";

/**
 * Delay before retrying work that failed for an internal reason (a bug, a database hiccup):
 * exponential from 5 s, capped at 30 min, with ±25 % jitter so a burst of failures spreads out.
 */
export function internalRetryDelayMs(attempt: number, rand: () => number = Math.random): number {
  const ceiling = Math.min(30 * 60_000, 5_000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling * (0.75 + rand() / 2));
}

/**
 * Waits before retrying a failed result write (attempt n = 1, 2, …); past the table the group is
 * given back to the queue. About 12 s in all: a `pg_ctl restart` is over in one or two seconds.
 */
export const RECORD_RETRY_DELAYS_MS: readonly number[] = [250, 1_000, 3_000, 8_000];

/**
 * How an `unknown` answer is retried:
 * - `deferred`: the server asked us to come back (greylisting, 4xx rate limits, other 4xx):
 *   on its hint, or VERIFY_RETRY_DELAYS (greylisting windows are 5–15 minutes);
 * - `unreachable`: nothing answered (refused, dropped, timed out, DNS failure): a short
 *   schedule, VERIFY_UNREACHABLE_RETRY_DELAYS, so one dead domain can't hold a task open;
 * - `interrupted`: our own deadline or shutdown cut it short: at once, the attempt not counted;
 * - `final`: a standing situation (blocklisted, policy, unrecognised rejection) a retry won't change.
 */
export type RetryClass = "deferred" | "unreachable" | "interrupted" | "final";

const CLASS_OF: Readonly<Record<UnknownReason, RetryClass>> = {
  greylisted: "deferred",
  rate_limited: "deferred",
  temporary_failure: "deferred",
  smtp_timeout: "unreachable",
  connection_failed: "unreachable",
  connection_dropped: "unreachable",
  dns_timeout: "unreachable",
  dns_error: "unreachable",
  proxy_error: "unreachable",
  port25_blocked: "unreachable",
  timeout_dns: "interrupted",
  timeout_smtp: "interrupted",
  cancelled: "interrupted",
  ip_blocklisted: "final",
  policy_rejection: "final",
  recipient_blocks_sender: "final",
  smtp_protocol_error: "final",
  unclassified_rejection: "final",
  address_literal: "final",
  private_host_refused: "final",
};

export const retryClassOf = (reason: UnknownReason): RetryClass => CLASS_OF[reason];

export interface RetrySchedules {
  /** VERIFY_RETRY_DELAYS */
  deferredMs: readonly number[];
  /** VERIFY_UNREACHABLE_RETRY_DELAYS */
  unreachableMs: readonly number[];
}

// A hinted retry lands just after the server's window: 5 % later, at least one second.
const HINT_MARGIN_RATIO = 0.05;
const HINT_MARGIN_MIN_MS = 1_000;

/**
 * Delay before retrying an address answered `unknown` for `reason` after `attemptsMade`
 * attempts; null when it is final or its schedule is exhausted (the answer stands).
 */
export function retryDelayMs(
  reason: UnknownReason,
  attemptsMade: number,
  schedules: RetrySchedules,
  hintMs: number | null = null,
): number | null {
  const retryClass = retryClassOf(reason);
  if (retryClass === "final" || retryClass === "interrupted") return null;
  const schedule = retryClass === "deferred" ? schedules.deferredMs : schedules.unreachableMs;
  if (attemptsMade < 1 || attemptsMade > schedule.length) return null;
  if (retryClass === "deferred" && hintMs !== null && hintMs > 0) {
    return hintMs + Math.max(HINT_MARGIN_MIN_MS, Math.round(hintMs * HINT_MARGIN_RATIO));
  }
  return schedule[attemptsMade - 1]!;
}

/** Short pause before trying a group again when its mail host has no free connection slot. */
export function hostBusyDelayMs(rand: () => number = Math.random): number {
  return Math.round(300 + rand() * 700);
}
