import { RateLimiterMemory } from "rate-limiter-flexible";
import type { Admission } from "./limiter.ts";

/**
 * Counts failed attempts of one client address at a secret (the operator token) and refuses the
 * address once it has used up `maxFailures` in `windowSeconds`, right token or not, until the
 * window passes. Per process: with several nodes behind a balancer each counts its own share.
 */
export interface FailureLimiter {
  /** Refused while the address has no failures left. */
  check(key: string): Promise<Admission>;
  /** Records one failure; refused when it was the last one allowed or beyond. */
  fail(key: string): Promise<Admission>;
}

export function createFailureLimiter(opts: { maxFailures: number; windowSeconds: number }): FailureLimiter {
  const limiter = new RateLimiterMemory({
    keyPrefix: "failures",
    points: opts.maxFailures,
    duration: opts.windowSeconds,
  });
  const admissionOf = (consumed: number, msBeforeNext: number): Admission =>
    consumed >= opts.maxFailures ? { allowed: false, retryAfterMs: msBeforeNext } : { allowed: true };
  return {
    async check(key) {
      const res = await limiter.get(key);
      return res ? admissionOf(res.consumedPoints, res.msBeforeNext) : { allowed: true };
    },
    async fail(key) {
      // penalty() never throws when the points run out (consume() would): the count is the answer.
      const res = await limiter.penalty(key, 1);
      return admissionOf(res.consumedPoints, res.msBeforeNext);
    },
  };
}
