import {
  BurstyRateLimiter,
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from "rate-limiter-flexible";

export type Admission = { allowed: true } | { allowed: false; retryAfterMs: number };

/** Admission control for one credential, user or client address. */
export interface RateLimiter {
  /** Allowed, or refused with the time until a retry can succeed. */
  consume(key: string): Promise<Admission>;
  /** Whether `key` is refused right now (its allowance is spent), without spending any of it. */
  peek(key: string): Promise<Admission>;
  close(): Promise<void>;
}

export interface RateLimitOptions {
  perSecond: number;
  burst: number;
}

export type RateLimitStore =
  { kind: "memory" } | { kind: "redis"; client: unknown } | { kind: "postgres"; pool: unknown };

// The sustained rate is a 1 s window of `perSecond` points; the burst allowance is a second
// bucket of (burst - perSecond) points refilled over 10 s that is only drawn on when the first is
// empty. That is rate-limiter-flexible's documented way to get "N/s with bursts up to M".
const BURST_REFILL_SECONDS = 10;

function limiterFor(
  store: RateLimitStore,
  keyPrefix: string,
  points: number,
  duration: number,
): RateLimiterAbstract {
  const common = { keyPrefix, points, duration };
  switch (store.kind) {
    case "memory":
      return new RateLimiterMemory(common);
    case "redis":
      // If the shared store is unreachable, keep limiting per process rather than failing requests.
      return new RateLimiterRedis({
        ...common,
        storeClient: store.client,
        insuranceLimiter: new RateLimiterMemory(common),
      });
    case "postgres":
      return new RateLimiterPostgres({
        ...common,
        storeClient: store.pool,
        storeType: "pool",
        tableName: "rate_limits",
        // Created by migrations/0001_init.sql, so both engines share one schema.
        tableCreated: true,
        clearExpiredByTimeout: false,
        insuranceLimiter: new RateLimiterMemory(common),
      });
  }
}

export function createRateLimiter(opts: RateLimitOptions, store: RateLimitStore): RateLimiter {
  const sustained = limiterFor(store, "rl_s", opts.perSecond, 1);
  const extra = Math.max(0, opts.burst - opts.perSecond);
  const burst = extra > 0 ? limiterFor(store, "rl_b", extra, BURST_REFILL_SECONDS) : null;
  const limiter = burst ? new BurstyRateLimiter(sustained, burst) : sustained;
  return {
    async consume(key) {
      try {
        await limiter.consume(key);
        return { allowed: true };
      } catch (e) {
        if (e instanceof RateLimiterRes) return { allowed: false, retryAfterMs: e.msBeforeNext };
        throw e;
      }
    },
    async peek(key) {
      // Refused requests are counted too, so "spent" is: more consumed than allowed in both buckets.
      const s = await sustained.get(key);
      if (!s || s.consumedPoints <= opts.perSecond) return { allowed: true };
      if (!burst) return { allowed: false, retryAfterMs: s.msBeforeNext };
      const b = await burst.get(key);
      if (!b || b.consumedPoints <= extra) return { allowed: true };
      return { allowed: false, retryAfterMs: Math.min(s.msBeforeNext, b.msBeforeNext) };
    },
    async close() {},
  };
}
