import type { Database } from "../db/client.ts";
import {
  listCreditTransactions,
  type CreditMetadata,
  type CreditTransaction,
} from "../db/queries/credit-transactions.ts";
import { findUser } from "../db/queries/users.ts";
import { AppError, notFound, validationError } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { grantCredits, type LedgerOutcome } from "./ledger.ts";
import { MAX_GRANT_CREDITS } from "./limits.ts";

export type { CreditTransaction };

/**
 * The attribution of every grant an operator makes: `mailprobe users create --credits` (reason
 * `initial_grant`), `mailprobe credits grant`, the loopback admin API behind both, and the
 * ADMIN_TOKEN console. Usage reports count these rows under `source=operator` (docs/reporting.md);
 * migration 0016 labels the rows those commands wrote before with no source.
 */
export const OPERATOR_METADATA: Readonly<CreditMetadata> = Object.freeze({ source: "operator" });

export interface CreditsService {
  balance(userId: string): Promise<{ userId: string; balance: number }>;
  transactions(
    userId: string,
    page: { limit: number; offset: number; taskId?: string | null },
  ): Promise<{ transactions: CreditTransaction[]; total: number }>;
  /** An operator's grant (OPERATOR_METADATA). */
  grant(userId: string, amount: number, reason: string, idempotencyKey?: string): Promise<CreditTransaction>;
}

/** Maps a ledger outcome that must have applied (or replayed) to its row, else the matching AppError. */
export function requireApplied(outcome: LedgerOutcome): CreditTransaction {
  switch (outcome.kind) {
    case "applied":
    case "replayed":
      return outcome.transaction;
    case "insufficient":
      throw new AppError("INSUFFICIENT_CREDITS", `Insufficient credits: balance is ${outcome.balance}`);
    case "user_not_found":
      throw notFound("User");
  }
}

export function createCreditsService(db: Database, clock: Clock): CreditsService {
  return {
    async balance(userId) {
      const user = await findUser(db, userId);
      if (!user) throw notFound("User");
      return { userId: user.id, balance: user.balance };
    },
    async transactions(userId, page) {
      if (!(await findUser(db, userId))) throw notFound("User");
      const { rows, total } = await listCreditTransactions(
        db,
        userId,
        page.limit,
        page.offset,
        page.taskId ?? null,
      );
      return { transactions: rows, total };
    },
    async grant(userId, amount, reason, idempotencyKey) {
      if (!Number.isSafeInteger(amount) || amount < 1 || amount > MAX_GRANT_CREDITS)
        throw validationError("amount is out of range", [
          {
            field: "amount",
            reason: `must be a whole number from 1 to ${MAX_GRANT_CREDITS.toLocaleString("en-US")}`,
          },
        ]);
      return requireApplied(
        await db.transaction((tx) =>
          grantCredits(tx, {
            userId,
            amount,
            reason,
            metadata: { ...OPERATOR_METADATA },
            idempotencyKey,
            at: clock.now(),
          }),
        ),
      );
    },
  };
}
