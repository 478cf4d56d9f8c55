import type { Database } from "../db/client.ts";
import {
  cancelHeldJobs,
  completeJobs,
  failJobs,
  jobsHeldBy,
  rescheduleJobs,
  type JobRecord,
  type Reschedule,
} from "../db/queries/jobs.ts";
import { lockTask, type TaskRecord } from "../db/queries/tasks.ts";
import { insertVerifications, type VerificationRecord } from "../db/queries/verifications.ts";
import { newId } from "../lib/ids.ts";
import { recordOfResult } from "../verifications/record-of-result.ts";
import { chargeLateResults } from "../tasks/cancel-task.ts";
import { finishTaskIfDone } from "../tasks/finish-task.ts";
import { isSandboxAddress, type VerificationResult } from "../verify/index.ts";
import type { JobOutcome } from "./outcomes.ts";

function toRecord(job: JobRecord, task: TaskRecord, r: VerificationResult, at: Date): VerificationRecord {
  return recordOfResult(r, {
    id: newId(),
    userId: job.userId ?? task.userId!,
    origin: "batch",
    source: task.source,
    apiKeyId: task.apiKeyId,
    taskId: task.id,
    creditTransactionId: null,
    fromCache: false,
    createdAt: at,
  });
}

/**
 * Records a processed group in one short transaction (no network I/O inside): results stored and
 * linked, retries rescheduled, hopeless jobs failed, and every touched task finished if this was
 * its last work. Jobs whose lease this worker lost meanwhile (another worker took them over) are
 * left alone, so nothing is recorded twice. A group that was running when its task was cancelled
 * is recorded too: its billable results are charged (the cancel refunded them) and its retries
 * end as `cancelled`. Returns the ids of tasks this call finished.
 */
export async function recordGroup(
  db: Database,
  worker: string,
  outcomes: JobOutcome[],
  at: Date,
): Promise<string[]> {
  if (outcomes.length === 0) return [];
  return db.transaction(async (tx) => {
    // Tasks first, in id order: the same lock order in every recorder rules out deadlocks.
    const taskIds = [...new Set(outcomes.map((o) => o.job.taskId))].sort();
    const tasks = new Map<string, TaskRecord>();
    for (const id of taskIds) {
      const task = await lockTask(tx, id);
      if (task) tasks.set(id, task);
    }
    const held = await jobsHeldBy(
      tx,
      outcomes.map((o) => o.job.id),
      worker,
    );
    const mine = outcomes.filter((o) => held.has(o.job.id) && tasks.has(o.job.taskId));

    const records: VerificationRecord[] = [];
    const done: Array<{ id: string; emailId: string }> = [];
    for (const o of mine) {
      if (o.kind !== "result") continue;
      const record = toRecord(o.job, tasks.get(o.job.taskId)!, o.result, at);
      records.push(record);
      done.push({ id: o.job.id, emailId: record.id });
    }
    await insertVerifications(tx, records);
    await completeJobs(tx, done, worker, at);
    // A cancelled task's jobs never go back to the queue: a retry ends them instead.
    const isCancelled = (o: JobOutcome) => tasks.get(o.job.taskId)!.cancelledAt !== null;
    const retries = mine.filter((o) => o.kind === "retry");
    await rescheduleJobs(tx, retries.filter((o) => !isCancelled(o)).map(rescheduleOf), worker, at);
    await cancelHeldJobs(
      tx,
      retries.filter(isCancelled).map((o) => o.job.id),
      worker,
      at,
    );
    for (const o of mine) if (o.kind === "failed") await failJobs(tx, [o.job.id], o.error, worker, at);
    for (const task of tasks.values()) {
      if (task.cancelledAt !== null) await chargeLateResults(tx, task, billedJobIds(mine, task.id), at);
    }

    const finished: string[] = [];
    for (const task of tasks.values()) {
      if (await finishTaskIfDone(tx, task, at)) finished.push(task.id);
    }
    return finished;
  });
}

/** The jobs of `taskId` whose recorded result is billed: not unknown, not a sandbox address. */
export const billedJobIds = (outcomes: readonly JobOutcome[], taskId: string): string[] =>
  outcomes.flatMap((o) =>
    o.kind === "result" &&
    o.job.taskId === taskId &&
    o.result.status !== "unknown" &&
    !isSandboxAddress(o.job.emailAddress)
      ? [o.job.id]
      : [],
  );

/** The row that puts a job back in the queue for a retry outcome. */
export const rescheduleOf = (o: JobOutcome & { kind: "retry" }): Reschedule => ({
  id: o.job.id,
  runAfter: o.runAfter,
  error: o.error,
  refundAttempt: o.refundAttempt,
  schedule: o.schedule,
});
