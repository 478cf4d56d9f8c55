import { sha256Hex } from "../lib/tokens.ts";

// The spec's realtime credit rules, as pure functions of time.

/** Rule 3: a repeat of the same (user, canonical email) within this window is free. */
export const FREE_REPEAT_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Rule 5: concurrent identical requests share one charge per 5-minute UTC window. */
const CHARGE_DEDUP_WINDOW_MS = 5 * 60 * 1000;

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

/** What a realtime request owes: nothing (a free repeat or an unknown result), 1 credit, or a refusal. */
export type RealtimeChargeDecision = "free" | "charge" | "refuse";

export interface RealtimeChargeFacts {
  now: Date;
  /** When the user last paid for this address, if known. */
  lastChargedAt: Date | undefined;
  /** The result's status once the engine has run; absent before it (and for a cached answer). */
  status?: string;
  /** The user's balance, when it is checked before the engine runs. */
  balance?: number;
}

/**
 * The spec's realtime billing rules in one place: a repeat within the free-repeat window (rule 3)
 * and an `unknown` result are free; otherwise a caller with less than 1 credit is refused and
 * anyone else charged. The balance is asked only before the engine runs: the charge itself is one
 * statement that refuses on its own when the balance ran out meanwhile.
 */
export function decideRealtimeCharge(facts: RealtimeChargeFacts): RealtimeChargeDecision {
  const { now, lastChargedAt, status, balance } = facts;
  if (lastChargedAt !== undefined && lastChargedAt > freeRepeatWindowStart(now)) return "free";
  if (status === "unknown") return "free";
  if (balance !== undefined && balance < 1) return "refuse";
  return "charge";
}
