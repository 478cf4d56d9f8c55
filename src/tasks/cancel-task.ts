import { INTEGRATION_PURPOSES, type Principal } from "../auth/principal.ts";
import { announceInvalidation, type InvalidationBus } from "../db/invalidation-bus.ts";
import { deductCredits, refundCredits } from "../credits/ledger.ts";
import type { Database, Queryable } from "../db/client.ts";
import { findCreditTransactionByKey } from "../db/queries/credit-transactions.ts";
import { cancelPendingJobs } from "../db/queries/jobs.ts";
import { countBillableJobs } from "../db/queries/task-metrics.ts";
import {
  deleteTaskData,
  findTasksFinishedBefore,
  lockTask,
  markTaskCancelled,
  type TaskRecord,
} from "../db/queries/tasks.ts";
import { cancelUploadOfTask } from "../db/queries/uploads.ts";
import { lockUserBalance } from "../db/queries/users.ts";
import { conflict, forbidden, notFound } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { yieldToEventLoop } from "../lib/sleep.ts";
import { attributionOfTask, enqueueCompletionWebhook } from "./finish-task.ts";

/** Ledger reasons of a cancel: the one refund, and the charge of results that arrive after it. */
export const CANCEL_REFUND_REASON = "task_cancelled_refund";
export const LATE_RESULT_REASON = "task_cancelled_late_result";

/** The ledger keys of a task's credit movements (create-task.ts and finish-task.ts write the first two). */
/** Pending jobs cancelled per statement (~0.15 s of PGlite each). */
const CANCEL_STEP = 1_000;

const reserveKey = (taskId: string) => `task:${taskId}:reserve`;
const finishRefundKey = (taskId: string) => `task:${taskId}:refund`;
const cancelRefundKey = (taskId: string) => `task:${taskId}:cancel-refund`;

/** The caller's task, row-locked in `tx`; another user's task is "not found", as on get/jobs. */
export async function lockOwnTask(tx: Queryable, principal: Principal, id: string): Promise<TaskRecord> {
  const task = await lockTask(tx, id);
  if (!task || task.userId !== principal.userId) throw notFound("Task");
  return task;
}

/**
 * For an action that may refund (cancel, finish now): the caller's balance row, then the caller's
 * task, in the global lock order (docs/locking.md), whether or not the task turns out to be theirs.
 */
export async function lockBalanceAndOwnTask(
  tx: Queryable,
  principal: Principal,
  id: string,
): Promise<TaskRecord> {
  if ((await lockUserBalance(tx, principal.userId)) === null) throw notFound("Task");
  return lockOwnTask(tx, principal, id);
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
  const reserved = await creditsOf(tx, task.userId, reserveKey(task.id));
  const refunded =
    (await creditsOf(tx, task.userId, finishRefundKey(task.id))) +
    (await creditsOf(tx, task.userId, cancelRefundKey(task.id)));
  return Math.max(0, reserved - (await countBillableJobs(tx, task.id)) - refunded);
}

/**
 * Cancels one of the caller's unfinished tasks in one transaction: pending jobs are dropped
 * (`cancelled`), the task finishes at once (finished_at = cancelled_at), everything not delivered
 * is refunded in one ledger row, the upload becomes `cancelled` and the completion webhook is
 * queued with status `cancelled`. Groups already running finish and are recorded as usual.
 *
 * The task's row lock is what makes it exactly once: the normal finish (recordGroup) takes it
 * too, and whichever comes second sees finished_at set — a second cancel gets CONFLICT, a late
 * finish does nothing. The refund's idempotency key is the last line behind that.
 */
export async function cancelTask(
  db: Database,
  clock: Clock,
  principal: Principal,
  id: string,
): Promise<TaskRecord> {
  return db.transaction(async (tx) => {
    // The refund moves the caller's balance.
    const task = await lockBalanceAndOwnTask(tx, principal, id);
    if (task.cancelledAt) throw conflict("The task was already cancelled");
    if (task.finishedAt)
      throw conflict("The task has already finished; only an unfinished task can be cancelled");
    const at = clock.now();
    // PGlite runs each statement on the server's thread: 10,000 jobs in one update held it for
    // ~1.5 s. In steps, the event loop answers others in between.
    while ((await cancelPendingJobs(tx, task.id, at, CANCEL_STEP)) === CANCEL_STEP) await yieldToEventLoop();
    await markTaskCancelled(tx, task.id, at);
    if (task.userId) {
      const refund = await cancelRefundOf(tx, { ...task, userId: task.userId });
      if (refund > 0) {
        await refundCredits(tx, {
          userId: task.userId,
          amount: refund,
          reason: CANCEL_REFUND_REASON,
          metadata: { ...(await attributionOfTask(tx, task)), task_id: task.id },
          idempotencyKey: cancelRefundKey(task.id),
          at,
        });
      }
    }
    await cancelUploadOfTask(tx, task.id, at);
    await enqueueCompletionWebhook(tx, task, "cancelled", at);
    return { ...task, finishedAt: at, cancelledAt: at, updatedAt: at };
  });
}

/**
 * Results of a group that was running when its task was cancelled: the cancel refunded them, so
 * the billable ones are charged now (one row per group, keyed by its first job, so a retried write
 * cannot charge twice). When the balance no longer covers them they are kept unbilled: the
 * balance never goes negative, and the user gets no worse than the results they paid for. The
 * caller locks the owner's balance before the task (docs/locking.md).
 */
export async function chargeLateResults(
  tx: Queryable,
  task: TaskRecord,
  jobIds: string[],
  at: Date,
): Promise<void> {
  if (!task.userId || jobIds.length === 0) return;
  await deductCredits(tx, {
    userId: task.userId,
    amount: jobIds.length,
    reason: LATE_RESULT_REASON,
    metadata: { ...(await attributionOfTask(tx, task)), task_id: task.id },
    idempotencyKey: `task:${task.id}:late:${[...jobIds].sort()[0]!}`,
    at,
  });
}

/**
 * DESIGN §5 key scopes, for deletion: integration keys (zapier, n8n, google sheets) may create,
 * read and cancel tasks — a cancel only stops spending and returns credits — but not delete them:
 * deletion destroys paid-for results for good, and those keys live in third-party platforms.
 * `custom` keys and dashboard sessions may delete.
 */
export const mayDeleteTasks = (p: Principal): boolean =>
  p.source === "frontend" || (p.apiKeyPurpose !== null && !INTEGRATION_PURPOSES.includes(p.apiKeyPurpose));

/**
 * Deletes one of the caller's finished tasks: its jobs, results, upload and stored rows. The
 * ledger is untouched (money history is never deleted). An unfinished task is a CONFLICT: cancel
 * it first.
 */
export async function deleteTask(
  db: Database,
  principal: Principal,
  id: string,
  bus?: Pick<InvalidationBus, "applyLocally">,
): Promise<void> {
  if (!mayDeleteTasks(principal))
    throw forbidden(
      `An integration key (purpose "${principal.apiKeyPurpose}") cannot delete tasks; use a "custom" key or a session`,
    );
  await db.transaction(async (tx) => {
    const task = await lockOwnTask(tx, principal, id);
    if (!task.finishedAt) throw conflict("The task has not finished; cancel it first, then delete it");
    await deleteTaskData(tx, task.id);
    // Nodes that remember the user's results (verifications/recent-results.ts) forget them.
    await announceInvalidation(tx, { kind: "user_results", userId: principal.userId });
  });
  bus?.applyLocally({ kind: "user_results", userId: principal.userId });
}

/**
 * Deletes the data of up to `limit` tasks finished before `before` (RESULT_RETENTION_DAYS), oldest
 * first, one short transaction per task (a task holds up to 10,000 jobs and results; PGlite has
 * one connection). Returns how many were deleted.
 */
export async function purgeTasksFinishedBefore(db: Database, before: Date, limit: number): Promise<number> {
  const ids = await findTasksFinishedBefore(db, before, limit);
  let deleted = 0;
  for (const id of ids) {
    const done = await db.transaction(async (tx) => {
      const task = await lockTask(tx, id);
      if (!task?.finishedAt || !(await deleteTaskData(tx, id))) return false;
      if (task.userId) await announceInvalidation(tx, { kind: "user_results", userId: task.userId });
      return true;
    });
    if (done) deleted++;
  }
  return deleted;
}
