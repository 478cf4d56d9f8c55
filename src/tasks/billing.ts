import { attributionOf, type Principal } from "../auth/principal.ts";
import { deductCredits, refundCredits, type LedgerEntry } from "../credits/ledger.ts";
import type { Queryable } from "../db/client.ts";
import { findApiKeyPurpose } from "../db/queries/api-keys.ts";
import { countBillableJobs, countUnbillableJobs, isBillableAddress } from "../db/queries/billable-jobs.ts";
import { findCreditTransactionByKey } from "../db/queries/credit-transactions.ts";
import type { TaskRecord } from "../db/queries/tasks.ts";
import { AppError, notFound } from "../lib/app-error.ts";

// A task's money, in one place: the reservation at creation, the refund of unknown and failed
// results at finish, the refund of everything undelivered at cancel, and the charge of results
// that arrive after a cancel. Which job is billable at all (not a sandbox address, not an unknown
// answer) is db/queries/billable-jobs.ts, in TypeScript and SQL side by side, because the worker
// pool (jobs/) needs it too and may not import tasks/.

/**
 * The ledger idempotency keys of a task's credit movements. Rows already in the ledger carry
 * them, so they never change (test/unit/tasks/billing.test.ts pins each one).
 */
export const taskLedgerKey = {
  reserve: (taskId: string): string => `task:${taskId}:reserve`,
  finishRefund: (taskId: string): string => `task:${taskId}:refund`,
  cancelRefund: (taskId: string): string => `task:${taskId}:cancel-refund`,
  /** One charge per recorded group, keyed by its first job, so a retried write cannot charge twice. */
  lateCharge: (taskId: string, jobIds: readonly string[]): string =>
    `task:${taskId}:late:${[...jobIds].sort()[0]!}`,
} as const;

/** The ledger `reason` of each movement (reports and tests read them). */
export const TASK_LEDGER_REASON = {
  reserve: "task_reservation",
  finishRefund: "task_unknown_refund",
  cancelRefund: "task_cancelled_refund",
  lateCharge: "task_cancelled_late_result",
} as const;

/** The refund is attributed like the reservation it returns (spec: Authentication rule 6). */
export async function attributionOfTask(tx: Queryable, task: TaskRecord): Promise<Record<string, string>> {
  if (task.source !== "api_key" || !task.apiKeyId) return { source: task.source };
  const purpose = await findApiKeyPurpose(tx, task.apiKeyId);
  return { source: "api_key", api_key_id: task.apiKeyId, ...(purpose ? { api_key_purpose: purpose } : {}) };
}

/** A movement of `task`'s credits on `userId`'s balance (the task's owner), attributed like the task. */
async function entryOf(
  tx: Queryable,
  task: TaskRecord,
  userId: string,
  movement: "finishRefund" | "cancelRefund" | "lateCharge",
  amount: number,
  idempotencyKey: string,
  at: Date,
): Promise<LedgerEntry> {
  return {
    userId,
    amount,
    reason: TASK_LEDGER_REASON[movement],
    metadata: { ...(await attributionOfTask(tx, task)), task_id: task.id },
    idempotencyKey,
    at,
  };
}

/** Credits a task of these jobs reserves: one per billable address (sandbox ones are free). */
export const creditsToReserve = (jobs: readonly { emailAddress: string }[]): number =>
  jobs.reduce((n, job) => (isBillableAddress(job.emailAddress) ? n + 1 : n), 0);

/**
 * Reserves `amount` credits for a new task in the creating transaction, or throws
 * INSUFFICIENT_CREDITS (nothing is written then). No amount, no ledger row: a task of only
 * sandbox addresses needs no balance.
 */
export async function reserveTaskCredits(
  tx: Queryable,
  principal: Principal,
  taskId: string,
  amount: number,
  at: Date,
): Promise<void> {
  if (amount <= 0) return;
  const reservation = await deductCredits(tx, {
    userId: principal.userId,
    amount,
    reason: TASK_LEDGER_REASON.reserve,
    metadata: { ...attributionOf(principal), task_id: taskId },
    idempotencyKey: taskLedgerKey.reserve(taskId),
    at,
  });
  if (reservation.kind === "insufficient") {
    throw new AppError(
      "INSUFFICIENT_CREDITS",
      `Insufficient credits: the task needs ${amount}, the balance is ${reservation.balance}`,
    );
  }
  if (reservation.kind === "user_not_found") throw notFound("User");
}

/**
 * At a task's finish, returns the credits of its unknown (and failed) results in one grant.
 * The caller has locked the owner's balance before the task (docs/locking.md).
 */
export async function refundUnbilledOnFinish(tx: Queryable, task: TaskRecord, at: Date): Promise<void> {
  const refund = await countUnbillableJobs(tx, task.id);
  if (refund > 0 && task.userId !== null) {
    const key = taskLedgerKey.finishRefund(task.id);
    await refundCredits(tx, await entryOf(tx, task, task.userId, "finishRefund", refund, key, at));
  }
}

const creditsOf = async (tx: Queryable, userId: string, key: string): Promise<number> =>
  Math.abs((await findCreditTransactionByKey(tx, userId, key))?.amount ?? 0);

/**
 * What a cancel returns: reserved − delivered − already refunded. Read from the ledger rather than
 * from the task's counts, so a reservation that left some addresses out (sandbox ones) is right too.
 * Jobs still running are not delivered yet: they are refunded here and charged when they arrive
 * (chargeLateResults), so the user pays exactly for the results they get.
 */
async function cancelRefundOf(tx: Queryable, task: TaskRecord & { userId: string }): Promise<number> {
  const reserved = await creditsOf(tx, task.userId, taskLedgerKey.reserve(task.id));
  const refunded =
    (await creditsOf(tx, task.userId, taskLedgerKey.finishRefund(task.id))) +
    (await creditsOf(tx, task.userId, taskLedgerKey.cancelRefund(task.id)));
  return Math.max(0, reserved - (await countBillableJobs(tx, task.id)) - refunded);
}

/**
 * At a cancel, returns everything not delivered in one ledger row; its key makes it once, behind
 * the task's row lock. The caller has locked the owner's balance before the task.
 */
export async function refundCancelledTask(tx: Queryable, task: TaskRecord, at: Date): Promise<void> {
  if (!task.userId) return;
  const refund = await cancelRefundOf(tx, { ...task, userId: task.userId });
  if (refund > 0) {
    const key = taskLedgerKey.cancelRefund(task.id);
    await refundCredits(tx, await entryOf(tx, task, task.userId, "cancelRefund", refund, key, at));
  }
}

/**
 * Results of a group that was running when its task was cancelled: the cancel refunded them, so
 * the billable ones are charged now, in one row per group. When the balance no longer covers them
 * they are kept unbilled: the balance never goes negative, and the user gets no worse than the
 * results they paid for. The caller locks the owner's balance before the task (docs/locking.md).
 */
export async function chargeLateResults(
  tx: Queryable,
  task: TaskRecord,
  jobIds: string[],
  at: Date,
): Promise<void> {
  if (!task.userId || jobIds.length === 0) return;
  const key = taskLedgerKey.lateCharge(task.id, jobIds);
  await deductCredits(tx, await entryOf(tx, task, task.userId, "lateCharge", jobIds.length, key, at));
}
