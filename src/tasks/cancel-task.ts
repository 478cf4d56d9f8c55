import type { Principal } from "../auth/principal.ts";
import type { Database, Queryable } from "../db/client.ts";
import { cancelPendingJobs } from "../db/queries/jobs.ts";
import { markTaskCancelled, type TaskRecord } from "../db/queries/tasks.ts";
import { cancelUploadOfTask } from "../db/queries/uploads.ts";
import { conflict } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { yieldToEventLoop } from "../lib/sleep.ts";
import { refundCancelledTask } from "./billing.ts";
import { enqueueCompletionWebhook } from "./finish-task.ts";
import { lockBalanceAndOwnTask } from "./task-locks.ts";

/** Pending jobs cancelled per statement (~0.15 s of PGlite each). */
const CANCEL_STEP = 1_000;

/**
 * Cancels one of the caller's unfinished tasks in one transaction: pending jobs are dropped
 * (`cancelled`), the task finishes at once (finished_at = cancelled_at), everything not delivered
 * is refunded in one ledger row (refundCancelledTask), the upload becomes `cancelled` and the
 * completion webhook is queued with status `cancelled`. Groups already running finish and are
 * recorded as usual; their billed results are charged then (chargeLateResults).
 *
 * The task's row lock is what makes it exactly once: the normal finish (finishTaskIfDone) takes
 * it too, and whichever comes second sees finished_at set — a second cancel gets CONFLICT, a late
 * finish does nothing. The refund's idempotency key is the last line behind that.
 */
/**
 * The cancel itself, on a task the caller has locked (with its owner's balance): pending jobs
 * dropped, the task finished, the rest refunded, the upload `cancelled`. No webhook: the caller
 * decides (a user's cancel sends one, stop-work.ts does not).
 */
export async function cancelLockedTask(tx: Queryable, task: TaskRecord, at: Date): Promise<void> {
  // PGlite runs each statement on the server's thread: 10,000 jobs in one update held it for
  // ~1.5 s. In steps, the event loop answers others in between.
  while ((await cancelPendingJobs(tx, task.id, at, CANCEL_STEP)) === CANCEL_STEP) await yieldToEventLoop();
  await markTaskCancelled(tx, task.id, at);
  await refundCancelledTask(tx, task, at);
  await cancelUploadOfTask(tx, task.id, at);
}

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
    await cancelLockedTask(tx, task, at);
    await enqueueCompletionWebhook(tx, task, "cancelled", at);
    return { ...task, finishedAt: at, cancelledAt: at, updatedAt: at };
  });
}
