import type { Queryable } from "../db/client.ts";
import {
  findCreditTransactionByKey,
  insertCreditTransaction,
  type CreditMetadata,
  type CreditTransaction,
} from "../db/queries/credit-transactions.ts";
import { applyBalanceDelta, lockUserBalance } from "../db/queries/users.ts";
import { newId } from "../lib/ids.ts";

// The credits ledger. Every movement is one credit_transactions row written in the same
// transaction as the balance change it describes. These functions take the caller's open
// transaction (a Queryable inside db.transaction) so a task's creation, its job rows and its
// reservation commit or roll back together.

export interface LedgerEntry {
  userId: string;
  /** Positive number of credits to move. */
  amount: number;
  reason: string;
  metadata: CreditMetadata;
  /** A repeated key is a no-op returning the first row (reservations, charges, refunds happen once). */
  idempotencyKey?: string | null;
  at: Date;
}

export type LedgerOutcome =
  | { kind: "applied"; transaction: CreditTransaction }
  | { kind: "replayed"; transaction: CreditTransaction }
  | { kind: "insufficient"; balance: number }
  | { kind: "user_not_found" };

async function move(q: Queryable, entry: LedgerEntry, direction: 1 | -1): Promise<LedgerOutcome> {
  if (!Number.isSafeInteger(entry.amount) || entry.amount <= 0) {
    throw new RangeError(`ledger amount must be a positive integer, got ${entry.amount}`);
  }
  // Locking the user row first serialises all ledger writes of one user, which makes the
  // idempotency check and the balance test below race-free on both PGlite and PostgreSQL. Users
  // come first in the global lock order (docs/locking.md): a caller that also locks tasks or
  // jobs must have locked this user before them (lockUserBalance again here is then a no-op).
  const balance = await lockUserBalance(q, entry.userId);
  if (balance === null) return { kind: "user_not_found" };
  if (entry.idempotencyKey) {
    const existing = await findCreditTransactionByKey(q, entry.userId, entry.idempotencyKey);
    if (existing) return { kind: "replayed", transaction: existing };
  }
  const delta = direction * entry.amount;
  if (balance + delta < 0) return { kind: "insufficient", balance };
  const balanceAfter = await applyBalanceDelta(q, entry.userId, delta, entry.at);
  if (balanceAfter === null) return { kind: "insufficient", balance };
  const transaction = await insertCreditTransaction(q, {
    id: newId(),
    userId: entry.userId,
    type: direction > 0 ? "grant" : "deduction",
    amount: delta,
    balanceAfter,
    reason: entry.reason,
    metadata: entry.metadata,
    idempotencyKey: entry.idempotencyKey ?? null,
    createdAt: entry.at,
  });
  return { kind: "applied", transaction };
}

/** Adds credits (a `grant` row). */
export const grantCredits = (q: Queryable, entry: LedgerEntry): Promise<LedgerOutcome> => move(q, entry, 1);

/** Removes credits unless that would take the balance below zero (a `deduction` row). */
export const deductCredits = (q: Queryable, entry: LedgerEntry): Promise<LedgerOutcome> => move(q, entry, -1);

/**
 * Returns credits for work not delivered (e.g. a task's unknown results): a `grant` row.
 * @alias grantCredits, named for what the caller does
 */
export const refundCredits = grantCredits;
