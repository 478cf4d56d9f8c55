import type { Database, Transaction } from "../db/client.ts";
import { countOpenJobs } from "../db/queries/jobs.ts";
import { findTask, findTasksLeftUnfinished, lockTask, type TaskRecord } from "../db/queries/tasks.ts";
import { lockUserBalance } from "../db/queries/users.ts";
import { chargeLateResults } from "./billing.ts";
import { finishTaskIfDone } from "./finish-task.ts";

/**
 * What a task owes when the worker pool records its jobs. The pool (jobs/) calls it through its
 * `GroupsRecordedHandler` port, wired by app/, so jobs/ never imports tasks/.
 */
export const taskSettlement = {
  /**
   * In the write's transaction, which holds the payers' balances and the tasks' share locks: a
   * cancelled task is charged for the billed results that arrived after its cancel refunded them.
   */
  async chargeLateResults(
    tx: Transaction,
    tasks: readonly TaskRecord[],
    billedJobIdsOf: (taskId: string) => string[],
    at: Date,
  ): Promise<void> {
    for (const task of tasks) {
      if (task.cancelledAt !== null) await chargeLateResults(tx, task, billedJobIdsOf(task.id), at);
    }
  },

  /**
   * After a write committed: finishes each task none of whose jobs is open any more. The open
   * count is read first without a lock (most writes are not a task's last); a task that looks done
   * is finished in its own transaction, balance then task locked (docs/locking.md), where
   * finishTaskIfDone checks again, so two recorders that both saw it done finish it once.
   */
  async finishTasksIfDone(db: Database, taskIds: readonly string[], at: Date): Promise<string[]> {
    const finished: string[] = [];
    for (const id of taskIds) {
      if ((await countOpenJobs(db, id)) > 0) continue;
      if (await finishLockedIfDone(db, id, at)) finished.push(id);
    }
    return finished;
  },

  /**
   * Finishes the tasks a crash left done but unfinished (between a result write's commit and the
   * finish after it), oldest first, at most `limit` per call; the worker pool runs it periodically.
   */
  async finishTasksLeftUnfinished(db: Database, at: Date, limit = 100): Promise<string[]> {
    return taskSettlement.finishTasksIfDone(db, await findTasksLeftUnfinished(db, limit), at);
  },
};

async function finishLockedIfDone(db: Database, taskId: string, at: Date): Promise<boolean> {
  const owner = (await findTask(db, taskId))?.userId ?? null;
  return db.transaction(async (tx) => {
    if (owner !== null) await lockUserBalance(tx, owner);
    const task = await lockTask(tx, taskId);
    // An owner that changed since the read is left to the next sweep, which reads it again.
    if (task === null || task.userId !== owner) return false;
    return finishTaskIfDone(tx, task, at);
  });
}
