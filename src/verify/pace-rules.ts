// The arithmetic of a provider's pace (docs/pacing.md), pure: how long to wait before probing a
// provider that refused us, what budget a learnt pace allows, what a second refusal costs it, and
// when a quiet provider's pace is forgotten. politeness/provider-pace.ts applies it to the stored
// paces; the claim and the task metrics read the budget and rate from here too.

/** The first probe comes no sooner than this after the burst began. */
const MIN_PROBE_MS = 1_000;
/**
 * Each refused probe moves the next one this much later (measured from the burst's start): the
 * learnt window is at most this much longer than the provider's, for about log(W/first)/log(1.15)
 * refused probes (a 10 s window first probed 2 s in: 12 probes at most; an hour first probed at
 * 2 min: 25 over the hour).
 */
const PROBE_GROWTH = 1.15;
/** A provider that has not let a probe through for this long is probed at this interval at most. */
const MAX_PROBE_OFFSET_MS = 24 * 3_600_000;
/** A probe asks this many RCPTs: enough to see whether the provider answers again. */
export const PROBE_RCPTS = 1;
/** A learnt pace asks for this share of what the provider accepted before it refused. */
const BUDGET_SHARE = 0.9;
/** A provider that refuses a learnt pace cuts its budget to this share. */
const RETRIP_SHARE = 0.75;
/** A pace is kept at least this many of its windows after its last refusal. */
const QUIET_WINDOWS = 4;

/**
 * When (ms after `episodeStart`) to probe first after a refusal at `trippedAt`: the provider's
 * window is longer than the burst that filled it, so not before twice the burst's length.
 */
export function firstProbeOffsetMs(episodeStart: Date, trippedAt: Date): number {
  const burst = Math.max(0, trippedAt.getTime() - episodeStart.getTime());
  return Math.min(MAX_PROBE_OFFSET_MS, Math.max(MIN_PROBE_MS, 2 * burst));
}

/** The next probe's offset after one refused at `offsetMs` (or refused later than planned, at `elapsedMs`). */
export function nextProbeOffsetMs(offsetMs: number, elapsedMs: number): number {
  const from = Math.max(offsetMs, elapsedMs, MIN_PROBE_MS);
  return Math.min(MAX_PROBE_OFFSET_MS, Math.ceil(from * PROBE_GROWTH));
}

/** RCPTs a pace lets through per window, from the RCPTs the provider accepted before refusing. */
export const budgetOf = (maxRcpts: number): number => Math.max(1, Math.floor(maxRcpts * BUDGET_SHARE));

/** What a learnt pace keeps of `maxRcpts` when the provider refuses it anyway. */
export const afterRetrip = (maxRcpts: number): number => Math.max(1, Math.floor(maxRcpts * RETRIP_SHARE));

/** When a pace not refused since `trippedAt` is forgotten. */
export function forgetAt(trippedAt: Date, windowMs: number, quietMs: number): Date {
  return new Date(trippedAt.getTime() + Math.max(quietMs, QUIET_WINDOWS * windowMs));
}

/** RCPTs per minute of a learnt pace (null while its window is unknown). */
export function ratePerMinute(maxRcpts: number, windowMs: number | null): number | null {
  if (windowMs === null) return null;
  return (budgetOf(maxRcpts) * 60_000) / windowMs;
}
