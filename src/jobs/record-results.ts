import type { Database, Transaction } from "../db/client.ts";
import {
  cancelHeldJobs,
  completeJobs,
  failJobs,
  jobsHeldBy,
  rescheduleJobs,
  type Reschedule,
} from "../db/queries/jobs.ts";
import { findPayersOfWrite, lockTasks } from "../db/queries/tasks.ts";
import { lockUserBalances } from "../db/queries/users.ts";
import { insertVerifications, type VerificationRecord } from "../db/queries/verifications.ts";
import { yieldToEventLoop } from "../lib/sleep.ts";
import { batchRecordOf } from "../verifications/record-of-result.ts";
import { chargeLateResults } from "../tasks/cancel-task.ts";
import { finishTaskIfDone } from "../tasks/finish-task.ts";
import { isSandboxAddress } from "../verify/index.ts";
import { settleRetryPastEnd, type JobOutcome } from "./outcomes.ts";

/**
 * Most outcomes one result write covers. On PGlite every statement runs on the event loop's
 * thread, so the loop stalls for as long as a write lasts. Measured on a 10,000-address list of
 * disposable addresses (embedded, a busy 2-core machine): a 100-result write ~35 ms (median), a
 * 200-result one ~48 ms; the loop's p99 stall 106–111 ms with 100, 126–234 ms with 200; the
 * list's total time the same within noise.
 */
export const RECORD_BATCH_MAX = 100;

/**
 * Records a processed group: results stored and linked, retries rescheduled, hopeless jobs
 * failed, and every touched task finished if this was its last work. Written in batches of
 * RECORD_BATCH_MAX outcomes, each one short transaction (no network I/O inside) with its own
 * ledger effect, the event loop getting a turn before each. Jobs whose lease this worker lost
 * meanwhile (another worker took them over), or whose result an earlier call already wrote, are
 * left alone, so nothing is recorded twice and a call repeated after a failure, or a crash
 * between batches, bills nothing twice (the jobs of unwritten batches come back when their lease
 * runs out). A group that was running when its task was cancelled is recorded too: its billable
 * results are charged (the cancel refunded them) and its retries end as `cancelled`. A retry past
 * its task's retries end (retry window, finish now) records its unknown answer instead. Returns
 * the ids of tasks this call finished.
 */
export async function recordGroup(
  db: Database,
  worker: string,
  outcomes: JobOutcome[],
  at: Date,
  takeTurn: () => Promise<void> = yieldToEventLoop,
): Promise<string[]> {
  const finished: string[] = [];
  for (let from = 0; from < outcomes.length; from += RECORD_BATCH_MAX) {
    await takeTurn();
    finished.push(...(await recordBatch(db, worker, outcomes.slice(from, from + RECORD_BATCH_MAX), at)));
  }
  return finished;
}

/** A batch's write met a user whose balance it must move but did not lock first: run it again with them. */
class PayersNotLocked extends Error {
  constructor(readonly payers: readonly string[]) {
    super("the write moves the balance of users it did not lock first");
  }
}

async function recordBatch(
  db: Database,
  worker: string,
  outcomes: JobOutcome[],
  at: Date,
): Promise<string[]> {
  // Each round locks at least one more user (of the batch's tasks' owners): few rounds, and a
  // second one only when another worker closed a task's other jobs between the forecast and the
  // locks.
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

/** A recorded result that is billed: not unknown, not a sandbox address. */
const isBilled = (o: JobOutcome): boolean =>
  o.kind === "result" && o.result.status !== "unknown" && !isSandboxAddress(o.job.emailAddress);

/** Outcomes that end their job (a result, a failure): the rest put it back in the queue. */
const closingIds = (outcomes: readonly JobOutcome[]): string[] =>
  outcomes.flatMap((o) => (o.kind === "retry" ? [] : [o.job.id]));

/** Tasks with a billed result among `outcomes`. */
const billedTaskIds = (outcomes: readonly JobOutcome[]): string[] => [
  ...new Set(outcomes.filter(isBilled).map((o) => o.job.taskId)),
];

/**
 * One batch in the global lock order (docs/locking.md): the users whose balance it moves, then
 * its tasks, then its jobs, each in id order. Recording a result moves no money (the task's
 * reservation paid for it), so most writes lock no user; only a write that finishes a task (its
 * refund) or records results of a cancelled one (their charge) does. Which ones is forecast
 * before the locks and checked under them; a wrong forecast rolls back and runs again.
 */
async function writeBatch(
  tx: Transaction,
  worker: string,
  outcomes: JobOutcome[],
  at: Date,
  knownPayers: readonly string[] | null,
): Promise<string[]> {
  const taskIds = [...new Set(outcomes.map((o) => o.job.taskId))];
  const payers =
    knownPayers ??
    (await findPayersOfWrite(tx, {
      taskIds,
      closingJobIds: closingIds(outcomes),
      billedTaskIds: billedTaskIds(outcomes),
      forecast: true,
    }));
  await lockUserBalances(tx, payers);
  const tasks = new Map((await lockTasks(tx, taskIds)).map((t) => [t.id, t]));
  const held = await jobsHeldBy(
    tx,
    outcomes.map((o) => o.job.id),
    worker,
  );
  const mine = outcomes
    .filter((o) => held.has(o.job.id) && tasks.has(o.job.taskId))
    .map((o) => {
      const task = tasks.get(o.job.taskId)!;
      return task.cancelledAt === null ? settleRetryPastEnd(o, task.retriesEndAt) : o;
    });
  const due = await findPayersOfWrite(tx, {
    taskIds: [...tasks.keys()],
    closingJobIds: closingIds(mine),
    billedTaskIds: billedTaskIds(mine),
    forecast: false,
  });
  if (due.some((u) => !payers.includes(u))) throw new PayersNotLocked([...new Set([...payers, ...due])]);

  const records: VerificationRecord[] = [];
  const done: Array<{ id: string; emailId: string }> = [];
  for (const o of mine) {
    if (o.kind !== "result") continue;
    const record = batchRecordOf(o.result, o.job, tasks.get(o.job.taskId)!, at);
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
  await failJobs(
    tx,
    mine.flatMap((o) => (o.kind === "failed" ? [{ id: o.job.id, error: o.error }] : [])),
    worker,
    at,
  );
  for (const task of tasks.values()) {
    if (task.cancelledAt !== null) await chargeLateResults(tx, task, billedJobIds(mine, task.id), at);
  }

  const finished: string[] = [];
  for (const task of tasks.values()) {
    if (await finishTaskIfDone(tx, task, at)) finished.push(task.id);
  }
  return finished;
}

/** The jobs of `taskId` whose recorded result is billed. */
export const billedJobIds = (outcomes: readonly JobOutcome[], taskId: string): string[] =>
  outcomes.filter((o) => o.job.taskId === taskId && isBilled(o)).map((o) => o.job.id);

/** The row that puts a job back in the queue for a retry outcome. */
export const rescheduleOf = (o: JobOutcome & { kind: "retry" }): Reschedule => ({
  id: o.job.id,
  runAfter: o.runAfter,
  error: o.error,
  refundAttempt: o.refundAttempt,
  schedule: o.schedule,
  result: o.result,
});
