// When a failed webhook delivery is tried again.

// Redelivery schedule. Receivers that fail are usually deploying or down for minutes, sometimes
// hours: the first retries come quickly, then the pace settles at hourly until the retry window
// (config.webhooks.retryWindowMs, 24 h by default) closes — about 28 attempts in 24 h. The shape
// follows what Stripe and Svix document for their webhook retries (fast first, hours later).

/** Delay before attempt n+1 after the n-th failed attempt (n = 1, 2, …); the last entry repeats. */
export const WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [
  30_000, // 30 s
  120_000, // 2 min
  600_000, // 10 min
  1_800_000, // 30 min
  3_600_000, // 1 h, then hourly: the cap
];

/** Share of the delay that jitter may take off, so receivers recovering at once are not hit in lockstep. */
const WEBHOOK_RETRY_JITTER = 0.2;

/**
 * Milliseconds to wait after the `attempt`-th failed attempt (1-based). Jitter only shortens the
 * delay (by up to 20 %), so the table's values — and the 1 h cap — are true upper bounds.
 * `rand` returns a number in [0, 1).
 */
export function webhookRetryDelayMs(attempt: number, rand: () => number = Math.random): number {
  const table = WEBHOOK_RETRY_DELAYS_MS;
  const index = Math.min(Math.max(1, Math.floor(attempt)), table.length) - 1;
  const ceiling = table[index]!;
  return Math.round(ceiling * (1 - WEBHOOK_RETRY_JITTER * rand()));
}
