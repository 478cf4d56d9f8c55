import { refundCredits } from "../credits/ledger.ts";
import type { Queryable } from "../db/client.ts";
import { findApiKeyPurpose } from "../db/queries/api-keys.ts";
import { countOpenJobs } from "../db/queries/jobs.ts";
import { countUnbillableJobs, metricsOfTasks, type TaskMetrics } from "../db/queries/task-metrics.ts";
import { markTaskFinished, type TaskRecord } from "../db/queries/tasks.ts";
import { completeUploadOfTask, findUploadIdOfTask } from "../db/queries/uploads.ts";

/** The refund is attributed like the reservation it returns (spec: Authentication rule 6). */
async function attributionOfTask(tx: Queryable, task: TaskRecord): Promise<Record<string, string>> {
  if (task.source !== "api_key" || !task.apiKeyId) return { source: task.source };
  const purpose = await findApiKeyPurpose(tx, task.apiKeyId);
  return { source: "api_key", api_key_id: task.apiKeyId, ...(purpose ? { api_key_purpose: purpose } : {}) };
}

/** What happens beyond the task itself when it finishes (the webhook outbox). */
export interface TaskFinishedHook {
  (
    tx: Queryable,
    event: { task: TaskRecord; uploadId: string | null; metrics: TaskMetrics; at: Date },
  ): Promise<void>;
}

/**
 * Finishes `task` if none of its jobs is pending or processing: sets finished_at, refunds the
 * credits of unknown (and failed) results in one grant, completes a linked upload and runs the
 * finished hook. The caller must hold the task's row lock (lockTask) in this transaction: that
 * makes "last job done → finish" happen exactly once even when two workers record the last jobs
 * of one task at the same moment. Returns true when this call finished the task.
 */
export async function finishTaskIfDone(
  tx: Queryable,
  task: TaskRecord,
  at: Date,
  onFinished: TaskFinishedHook | null,
): Promise<boolean> {
  if (task.finishedAt !== null) return false;
  if ((await countOpenJobs(tx, task.id)) > 0) return false;
  if (!(await markTaskFinished(tx, task.id, at))) return false;
  const refund = await countUnbillableJobs(tx, task.id);
  if (refund > 0 && task.userId !== null) {
    await refundCredits(tx, {
      userId: task.userId,
      amount: refund,
      reason: "task_unknown_refund",
      metadata: { ...(await attributionOfTask(tx, task)), task_id: task.id },
      idempotencyKey: `task:${task.id}:refund`,
      at,
    });
  }
  await completeUploadOfTask(tx, task.id, at);
  if (onFinished) {
    const metrics = (await metricsOfTasks(tx, [task.id])).get(task.id)!;
    await onFinished(tx, { task, uploadId: await findUploadIdOfTask(tx, task.id), metrics, at });
  }
  return true;
}
