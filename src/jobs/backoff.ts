/**
 * Delay before retrying work that failed for an internal reason (a bug, a database hiccup):
 * exponential from 5 s, capped at 30 min, with ±25 % jitter so a burst of failures spreads out.
 */
export function internalRetryDelayMs(attempt: number, rand: () => number = Math.random): number {
  const ceiling = Math.min(30 * 60_000, 5_000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling * (0.75 + rand() / 2));
}

/**
 * Delay before re-verifying an address whose answer was temporary (greylisting, 4xx, timeouts):
 * the configured schedule (VERIFY_RETRY_DELAYS, default 5 min, 15 min, 30 min), indexed by the
 * number of attempts made so far; null when the schedule is exhausted and the result stands.
 */
export function temporaryRetryDelayMs(attemptsMade: number, schedule: readonly number[]): number | null {
  return attemptsMade >= 1 && attemptsMade <= schedule.length ? schedule[attemptsMade - 1]! : null;
}

/** Short pause before trying a group again when its mail host has no free connection slot. */
export function hostBusyDelayMs(rand: () => number = Math.random): number {
  return Math.round(300 + rand() * 700);
}
