import { attributionOf, type Principal } from "../auth/principal.ts";
import { deductCredits, refundCredits, type LedgerEntry } from "../credits/ledger.ts";
import type { Queryable } from "../db/client.ts";
import { findApiKeyPurpose } from "../db/queries/api-keys.ts";
import { countBillableJobs, countUnbillableJobs } from "../db/queries/billable-jobs.ts";
import { findCreditTransactionByKey } from "../db/queries/credit-transactions.ts";
import { findOwnersOfCancelledTasks, type TaskRecord } from "../db/queries/tasks.ts";
import { lockUserBalances } from "../db/queries/users.ts";
import type { JobOutcome } from "../jobs/outcomes.ts";
import { notFound } from "../lib/app-error.ts";
import { isSandboxAddress, type VerificationStatus } from "../verify/index.ts";

// A task's money, in one place: the reservation at creation, the refund of unknown and failed
// results at finish, the refund of everything undelivered at cancel, and the charge of results
// that arrive after a cancel, with who pays for a result write. Which job is billable at all (not
// a sandbox address, not an unknown answer) is written here in TypeScript and in
// db/queries/billable-jobs.ts in SQL (the refunds count by it);
// test/integration/tasks/billing-rule.test.ts holds the two equal on both engines.

/** An address whose verification costs a credit: every one but the sandbox's (verify/sandbox.ts). */
export const isBillableAddress = (emailAddress: string): boolean => !isSandboxAddress(emailAddress);

/** A recorded batch result that costs a credit: an answer other than unknown, for a billable address. */
export const isBillable = (emailAddress: string, status: VerificationStatus): boolean =>
  status !== "unknown" && isBillableAddress(emailAddress);

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
async function attributionOfTask(tx: Queryable, task: TaskRecord): Promise<Record<string, string>> {
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
 * A task its owner's balance cannot pay for: an expected denial, answered as a value like
 * realtime's (the route maps it to 402 INSUFFICIENT_CREDITS).
 */
export interface TaskCreditsShort {
  kind: "insufficient_credits";
  /** Credits the task would reserve. */
  needed: number;
  balance: number;
}

export const isCreditsShort = (x: object): x is TaskCreditsShort =>
  "kind" in x && x.kind === "insufficient_credits";

/**
 * Reserves `amount` credits for a new task in the creating transaction; the denial when the
 * balance is short (the caller rolls the transaction back: nothing is written then). No amount,
 * no ledger row: a task of only sandbox addresses needs no balance.
 */
export async function reserveTaskCredits(
  tx: Queryable,
  principal: Principal,
  taskId: string,
  amount: number,
  at: Date,
): Promise<TaskCreditsShort | null> {
  if (amount <= 0) return null;
  const reservation = await deductCredits(tx, {
    userId: principal.userId,
    amount,
    reason: TASK_LEDGER_REASON.reserve,
    metadata: { ...attributionOf(principal), task_id: taskId },
    idempotencyKey: taskLedgerKey.reserve(taskId),
    at,
  });
  if (reservation.kind === "insufficient")
    return { kind: "insufficient_credits", needed: amount, balance: reservation.balance };
  if (reservation.kind === "user_not_found") throw notFound("User");
  return null;
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

/** A recorded result that is billed: not unknown, not a sandbox address. */
const isBilled = (o: JobOutcome): boolean =>
  o.kind === "result" && isBillable(o.job.emailAddress, o.result.status);

/** The jobs of `taskId` whose recorded result is billed. */
const billedJobIds = (outcomes: readonly JobOutcome[], taskId: string): string[] =>
  outcomes.filter((o) => o.job.taskId === taskId && isBilled(o)).map((o) => o.job.id);

/** Tasks with a billed result among `outcomes`. */
const billedTaskIds = (outcomes: readonly JobOutcome[]): string[] => [
  ...new Set(outcomes.filter(isBilled).map((o) => o.job.taskId)),
];

/** A result write met a user whose balance it must move but did not lock first: run it again with them. */
export class PayersNotLocked extends Error {
  constructor(readonly payers: readonly string[]) {
    super("the write moves the balance of users it did not lock first");
  }
}

/**
 * Locks, first in a result write (docs/locking.md), the balances the write may move. Recording a
 * result moves no money (the task's reservation paid for it); only billed results of a task
 * cancelled meanwhile are charged (chargeLateResults), so the payers are the owners of such tasks,
 * read before any lock (or `known` from a previous round) and checked under the locks by
 * assertPayersLocked.
 */
export async function lockResultPayers(
  tx: Queryable,
  outcomes: readonly JobOutcome[],
  known: readonly string[] | null,
): Promise<readonly string[]> {
  const payers = known ?? (await findOwnersOfCancelledTasks(tx, billedTaskIds(outcomes)));
  await lockUserBalances(tx, payers);
  return payers;
}

/** Throws PayersNotLocked when a cancelled task among `tasks` owes a charge its owner's lock does not cover. */
export function assertPayersLocked(
  outcomes: readonly JobOutcome[],
  tasks: ReadonlyMap<string, TaskRecord>,
  payers: readonly string[],
): void {
  const due = new Set(
    billedTaskIds(outcomes).flatMap((id) => {
      const t = tasks.get(id)!;
      return t.cancelledAt !== null && t.userId !== null ? [t.userId] : [];
    }),
  );
  if ([...due].some((u) => !payers.includes(u))) throw new PayersNotLocked([...new Set([...payers, ...due])]);
}

/**
 * In a result write, under its locks: each cancelled task among `tasks` is charged for the billed
 * results of `outcomes` that arrived after its cancel refunded them.
 */
export async function chargeResultsAfterCancel(
  tx: Queryable,
  tasks: Iterable<TaskRecord>,
  outcomes: readonly JobOutcome[],
  at: Date,
): Promise<void> {
  for (const task of tasks) {
    if (task.cancelledAt !== null) await chargeLateResults(tx, task, billedJobIds(outcomes, task.id), at);
  }
}
