import type { Database, Transaction } from "../db/client.ts";
import {
  advanceDeferringDomains,
  cancelHeldJobs,
  completeJobs,
  failJobs,
  jobsHeldBy,
  rescheduleJobs,
} from "../db/queries/jobs.ts";
import { shareLockTasks, type TaskRecord } from "../db/queries/tasks.ts";
import { insertVerifications, type VerificationRecord } from "../db/queries/verifications.ts";
import { firstDeferralsOf, rescheduleOf, settleRetryPastEnd, type JobOutcome } from "../jobs/outcomes.ts";
import { yieldToEventLoop } from "../lib/sleep.ts";
import { batchRecordOf } from "../db/verification-record.ts";
import {
  assertPayersLocked,
  chargeResultsAfterCancel,
  lockResultPayers,
  PayersNotLocked,
} from "./billing.ts";
import { finishTasksIfDone } from "./finish-task.ts";

/**
 * Most outcomes one result write covers. On PGlite every statement runs on the event loop's
 * thread, so the loop stalls for as long as a write lasts. Measured on a 10,000-address list of
 * disposable addresses (embedded, a busy 2-core machine): a 100-result write ~35 ms (median), a
 * 200-result one ~48 ms; the loop's p99 stall 106–111 ms with 100, 126–234 ms with 200; the
 * list's total time the same within noise.
 */
export const RECORD_BATCH_MAX = 100;

/** What finishes the tasks a write closed, after its commit; the crash suite leaves it out. */
type FinishTasks = (db: Database, taskIds: readonly string[], at: Date) => Promise<string[]>;

/**
 * Records a processed group: results stored and linked, retries rescheduled, hopeless jobs
 * failed, and every touched task finished if this was its last work (after the write committed,
 * see writeBatch). Written in batches of RECORD_BATCH_MAX outcomes, each one short transaction
 * (no network I/O inside) with its own ledger effect, the event loop getting a turn before each.
 * Jobs whose lease this worker lost meanwhile (another worker took them over), or whose result an
 * earlier call already wrote, are left alone, so nothing is recorded twice and a call repeated
 * after a failure, or a crash between batches, bills nothing twice (the jobs of unwritten batches
 * come back when their lease runs out). A group that was running when its task was cancelled is
 * recorded too: its billable results are charged (the cancel refunded them) and its retries end
 * as `cancelled`. A retry past its task's retries end (retry window, finish now) records its
 * unknown answer instead. Returns the ids of tasks this call finished.
 */
export async function recordGroup(
  db: Database,
  worker: string,
  outcomes: JobOutcome[],
  at: Date,
  takeTurn: () => Promise<void> = yieldToEventLoop,
  finish: FinishTasks = finishTasksIfDone,
): Promise<string[]> {
  const finished: string[] = [];
  for (let from = 0; from < outcomes.length; from += RECORD_BATCH_MAX) {
    await takeTurn();
    const batch = outcomes.slice(from, from + RECORD_BATCH_MAX);
    const closedTaskIds = await recordBatch(db, worker, batch, at);
    // Each recorder asks after its own commit, so the one that closed a task's last job sees it
    // closed; two that ask at once are sorted out by the finish's own lock on the task.
    finished.push(...(await finish(db, closedTaskIds, at)));
  }
  return finished;
}

async function recordBatch(
  db: Database,
  worker: string,
  outcomes: JobOutcome[],
  at: Date,
): Promise<string[]> {
  // A second round only when a task was cancelled between the first read and the locks; each
  // round locks at least one more user.
  let payers: readonly string[] | null = null;
  for (;;) {
    try {
      return await db.transaction((tx) => writeBatch(tx, worker, outcomes, at, payers));
    } catch (error) {
      if (!(error instanceof PayersNotLocked)) throw error;
      payers = error.payers;
    }
  }
}

/**
 * One batch in the global lock order (docs/locking.md): the users whose balance it moves
 * (billing.ts lockResultPayers), then its tasks (shared), then its jobs, each in id order.
 *
 * The tasks are locked FOR SHARE: enough to keep a cancel or a finish now (FOR UPDATE) from
 * changing them under the write, while the groups of one task that workers record at the same
 * moment do not wait for each other. The task's finish (its refund, upload, webhook) needs the
 * task to itself, so it runs after the commit (finishTasksIfDone). Returns the tasks whose jobs
 * this write closed.
 */
async function writeBatch(
  tx: Transaction,
  worker: string,
  outcomes: JobOutcome[],
  at: Date,
  knownPayers: readonly string[] | null,
): Promise<string[]> {
  const payers = await lockResultPayers(tx, outcomes, knownPayers);
  const tasks = new Map(
    (await shareLockTasks(tx, [...new Set(outcomes.map((o) => o.job.taskId))])).map((t) => [t.id, t]),
  );
  const mine = await outcomesStillMine(tx, worker, outcomes, tasks);
  assertPayersLocked(mine, tasks, payers);

  await writeResults(tx, worker, mine, tasks, at);
  // A cancelled task's jobs never go back to the queue: a retry ends them instead.
  const isCancelled = (o: JobOutcome) => tasks.get(o.job.taskId)!.cancelledAt !== null;
  const retries = mine.filter((o) => o.kind === "retry");
  const requeued = retries.filter((o) => !isCancelled(o));
  await rescheduleJobs(tx, requeued.map(rescheduleOf), worker, at);
  await advanceDeferringDomains(tx, firstDeferralsOf(requeued), at);
  await cancelHeldJobs(
    tx,
    retries.filter(isCancelled).map((o) => o.job.id),
    worker,
    at,
  );
  await failJobs(
    tx,
    mine.flatMap((o) => (o.kind === "failed" ? [{ id: o.job.id, error: o.error }] : [])),
    worker,
    at,
  );
  await chargeResultsAfterCancel(tx, tasks.values(), mine, at);
  // A cancelled task finished at its cancel; a retry leaves its job open.
  return [...new Set(mine.filter((o) => o.kind !== "retry" && !isCancelled(o)).map((o) => o.job.taskId))];
}

/**
 * The outcomes this write may record: jobs `worker` still holds, of tasks that still exist; a
 * retry past its task's retries end becomes its answer (settleRetryPastEnd).
 */
async function outcomesStillMine(
  tx: Transaction,
  worker: string,
  outcomes: readonly JobOutcome[],
  tasks: ReadonlyMap<string, TaskRecord>,
): Promise<JobOutcome[]> {
  const held = await jobsHeldBy(
    tx,
    outcomes.map((o) => o.job.id),
    worker,
  );
  return outcomes
    .filter((o) => held.has(o.job.id) && tasks.has(o.job.taskId))
    .map((o) => {
      const task = tasks.get(o.job.taskId)!;
      return task.cancelledAt === null ? settleRetryPastEnd(o, task.retriesEndAt) : o;
    });
}

/** Stores the results among `outcomes` and completes their jobs. */
async function writeResults(
  tx: Transaction,
  worker: string,
  outcomes: readonly JobOutcome[],
  tasks: ReadonlyMap<string, TaskRecord>,
  at: Date,
): Promise<void> {
  const records: VerificationRecord[] = [];
  const done: Array<{ id: string; emailId: string }> = [];
  for (const o of outcomes) {
    if (o.kind !== "result") continue;
    const record = batchRecordOf(o.result, o.job, tasks.get(o.job.taskId)!, at);
    records.push(record);
    done.push({ id: o.job.id, emailId: record.id });
  }
  await insertVerifications(tx, records);
  await completeJobs(tx, done, worker, at);
}
