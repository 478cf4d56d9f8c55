import type { Database, Queryable } from "../db/client.ts";
import { countOpenJobs } from "../db/queries/jobs.ts";
import { metricsOfTasks } from "../db/queries/task-metrics.ts";
import {
  findTask,
  findTasksLeftUnfinished,
  lockTask,
  markTaskFinished,
  type TaskRecord,
} from "../db/queries/tasks.ts";
import { lockUserBalance } from "../db/queries/users.ts";
import { completeUploadOfTask, findUploadIdOfTask } from "../db/queries/uploads.ts";
import { enqueueTaskCompleted } from "../webhooks/outbox.ts";
import { toMetricsReply } from "../webhooks/payload.ts";
import { refundUnbilledOnFinish } from "./billing.ts";

/**
 * Finishes `task` if none of its jobs is pending or processing: sets finished_at, refunds the
 * credits of unknown (and failed) results in one grant (refundUnbilledOnFinish), completes a
 * linked upload and queues the completion webhook (when the task has a webhook_url) in the same
 * transaction. The caller must hold the task's row lock (lockTask) in this transaction: that
 * makes "last job done → finish" happen exactly once even when two workers record the last jobs
 * of one task at the same moment. The refund locks the owner's balance: a caller that may finish
 * the task locks it before the task (docs/locking.md). Returns true when this call finished the task.
 */
export async function finishTaskIfDone(tx: Queryable, task: TaskRecord, at: Date): Promise<boolean> {
  if (task.finishedAt !== null) return false;
  if ((await countOpenJobs(tx, task.id)) > 0) return false;
  if (!(await markTaskFinished(tx, task.id, at))) return false;
  await refundUnbilledOnFinish(tx, task, at);
  await completeUploadOfTask(tx, task.id, at);
  await enqueueCompletionWebhook(tx, task, "completed", at);
  return true;
}

/**
 * Queues the task's one completion webhook (when it has a webhook_url), in the caller's
 * transaction; the outbox row is unique per task and event type, so it is written once whichever
 * way the task ended.
 */
export async function enqueueCompletionWebhook(
  tx: Queryable,
  task: TaskRecord,
  status: "completed" | "cancelled",
  at: Date,
): Promise<void> {
  if (!task.webhookUrl || !task.userId) return;
  const metrics = (await metricsOfTasks(tx, [task.id])).get(task.id)!;
  await enqueueTaskCompleted(tx, {
    userId: task.userId,
    url: task.webhookUrl,
    event: {
      taskId: task.id,
      status,
      uploadId: await findUploadIdOfTask(tx, task.id),
      metrics: toMetricsReply(metrics),
    },
    at,
  });
}

/**
 * After a result write committed: finishes each of `taskIds` none of whose jobs is open any more.
 * The open count is read first without a lock (most writes are not a task's last); a task that
 * looks done is finished in its own transaction, balance then task locked (docs/locking.md), where
 * finishTaskIfDone checks again, so two recorders that both saw it done finish it once. Returns
 * the ids of the tasks this call finished.
 */
export async function finishTasksIfDone(
  db: Database,
  taskIds: readonly string[],
  at: Date,
): Promise<string[]> {
  const finished: string[] = [];
  for (const id of taskIds) {
    if ((await countOpenJobs(db, id)) > 0) continue;
    if (await finishLockedIfDone(db, id, at)) finished.push(id);
  }
  return finished;
}

/**
 * Finishes the tasks a crash left done but unfinished (between a result write's commit and the
 * finish after it), oldest first, at most `limit` per call; the worker pool runs it periodically.
 */
export async function finishTasksLeftUnfinished(db: Database, at: Date, limit = 100): Promise<string[]> {
  return finishTasksIfDone(db, await findTasksLeftUnfinished(db, limit), at);
}

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
