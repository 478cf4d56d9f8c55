import type { Database, Transaction } from "../db/client.ts";
import {
  advanceDeferringDomains,
  cancelHeldJobs,
  completeJobs,
  failJobs,
  jobsHeldBy,
  rescheduleJobs,
  type Reschedule,
} from "../db/queries/jobs.ts";
import { findOwnersOfCancelledTasks, shareLockTasks, type TaskRecord } from "../db/queries/tasks.ts";
import { lockUserBalances } from "../db/queries/users.ts";
import { isBillable } from "../db/queries/billable-jobs.ts";
import { insertVerifications, type VerificationRecord } from "../db/queries/verifications.ts";
import { yieldToEventLoop } from "../lib/sleep.ts";
import { batchRecordOf } from "../verifications/record-of-result.ts";
import { firstDeferralsOf, settleRetryPastEnd, type JobOutcome } from "./outcomes.ts";

/**
 * Most outcomes one result write covers. On PGlite every statement runs on the event loop's
 * thread, so the loop stalls for as long as a write lasts. Measured on a 10,000-address list of
 * disposable addresses (embedded, a busy 2-core machine): a 100-result write ~35 ms (median), a
 * 200-result one ~48 ms; the loop's p99 stall 106–111 ms with 100, 126–234 ms with 200; the
 * list's total time the same within noise.
 */
export const RECORD_BATCH_MAX = 100;

/**
 * The task layer's part of a result write, implemented by tasks/ (`taskSettlement` in
 * tasks/groups-recorded.ts) and wired by app/, so the runner stays a generic queue that never
 * imports tasks/.
 */
export interface GroupsRecordedHandler {
  /**
   * Inside the batch's transaction, under its locks (the payers' balances, then its tasks shared):
   * charge a cancelled task's billed results that arrived after its cancel refunded them.
   */
  chargeLateResults(
    tx: Transaction,
    tasks: readonly TaskRecord[],
    billedJobIdsOf: (taskId: string) => string[],
    at: Date,
  ): Promise<void>;
  /**
   * After the batch committed: finish each of `taskIds` whose jobs are all closed now (it takes
   * its own locks). Returns the ids of the tasks it finished.
   */
  finishTasksIfDone(db: Database, taskIds: readonly string[], at: Date): Promise<string[]>;
  /**
   * Finishes the tasks whose every job is closed but that no finish reached (the process died
   * between a write's commit and its finish); the pool calls it periodically.
   */
  finishTasksLeftUnfinished(db: Database, at: Date): Promise<string[]>;
}

/**
 * Records a processed group: results stored and linked, retries rescheduled, hopeless jobs
 * failed, and every touched task finished if this was its last work (after the write committed,
 * see writeBatch). Written in batches of
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
  onRecorded: GroupsRecordedHandler,
  takeTurn: () => Promise<void> = yieldToEventLoop,
): Promise<string[]> {
  const finished: string[] = [];
  for (let from = 0; from < outcomes.length; from += RECORD_BATCH_MAX) {
    await takeTurn();
    const batch = outcomes.slice(from, from + RECORD_BATCH_MAX);
    const closedTaskIds = await recordBatch(db, worker, batch, at, onRecorded);
    // Each recorder asks after its own commit, so the one that closed a task's last job sees it
    // closed; two that ask at once are sorted out by the finish's own lock on the task.
    finished.push(...(await onRecorded.finishTasksIfDone(db, closedTaskIds, at)));
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
  onRecorded: GroupsRecordedHandler,
): Promise<string[]> {
  // A second round only when a task was cancelled between the first read and the locks; each
  // round locks at least one more user.
  let payers: readonly string[] | null = null;
  for (;;) {
    try {
      return await db.transaction((tx) => writeBatch(tx, worker, outcomes, at, payers, onRecorded));
    } catch (error) {
      if (!(error instanceof PayersNotLocked)) throw error;
      payers = error.payers;
    }
  }
}

/** A recorded result that is billed: not unknown, not a sandbox address. */
const isBilled = (o: JobOutcome): boolean =>
  o.kind === "result" && isBillable(o.job.emailAddress, o.result.status);

/** Tasks with a billed result among `outcomes`. */
const billedTaskIds = (outcomes: readonly JobOutcome[]): string[] => [
  ...new Set(outcomes.filter(isBilled).map((o) => o.job.taskId)),
];

/**
 * One batch in the global lock order (docs/locking.md): the users whose balance it moves, then
 * its tasks (shared), then its jobs, each in id order. Recording a result moves no money (the
 * task's reservation paid for it), so most writes lock no user; only one that records billed
 * results of a task cancelled meanwhile (their late charge) does. Which users that is is read
 * before the locks and checked under them; a wrong guess rolls back and runs again.
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
  onRecorded: GroupsRecordedHandler,
): Promise<string[]> {
  const taskIds = [...new Set(outcomes.map((o) => o.job.taskId))];
  const payers = knownPayers ?? (await findOwnersOfCancelledTasks(tx, billedTaskIds(outcomes)));
  await lockUserBalances(tx, payers);
  const tasks = new Map((await shareLockTasks(tx, taskIds)).map((t) => [t.id, t]));
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
  const due = [
    ...new Set(
      billedTaskIds(mine).flatMap((id) => {
        const t = tasks.get(id)!;
        return t.cancelledAt !== null && t.userId !== null ? [t.userId] : [];
      }),
    ),
  ];
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
  const cancelled = [...tasks.values()].filter((t) => t.cancelledAt !== null);
  await onRecorded.chargeLateResults(tx, cancelled, (taskId) => billedJobIds(mine, taskId), at);
  // A cancelled task finished at its cancel; a retry leaves its job open.
  return [...new Set(mine.filter((o) => o.kind !== "retry" && !isCancelled(o)).map((o) => o.job.taskId))];
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
