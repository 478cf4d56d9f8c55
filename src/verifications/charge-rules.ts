import { sha256Hex } from "../lib/tokens.ts";

// The spec's realtime credit rules, as pure functions of time.

/** Rule 3: a repeat of the same (user, canonical email) within this window is free. */
export const FREE_REPEAT_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Rule 5: concurrent identical requests share one charge per 5-minute UTC window. */
export const CHARGE_DEDUP_WINDOW_MS = 5 * 60 * 1000;

export const freeRepeatWindowStart = (now: Date): Date => new Date(now.getTime() - FREE_REPEAT_WINDOW_MS);

/**
 * The ledger idempotency key of a realtime charge: deterministic per user (the ledger's unique
 * key is per user) + canonical email + UTC 5-minute window. Client headers such as X-Request-ID
 * never enter it. The address is hashed to keep keys short and free of personal data.
 */
export function realtimeChargeKey(canonicalEmail: string, now: Date): string {
  const window = Math.floor(now.getTime() / CHARGE_DEDUP_WINDOW_MS);
  return `realtime:${sha256Hex(canonicalEmail).slice(0, 32)}:${window}`;
}
