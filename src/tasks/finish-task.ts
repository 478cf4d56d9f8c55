import type { Queryable } from "../db/client.ts";
import { countOpenJobs } from "../db/queries/jobs.ts";
import { metricsOfTasks } from "../db/queries/task-metrics.ts";
import { markTaskFinished, type TaskRecord } from "../db/queries/tasks.ts";
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
