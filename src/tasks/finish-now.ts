import type { Principal } from "../auth/principal.ts";
import type { Database, Queryable } from "../db/client.ts";
import { lockPendingJobs, settlePendingJobs, type JobRecord } from "../db/queries/jobs.ts";
import { endTaskRetries, findTask, type TaskRecord } from "../db/queries/tasks.ts";
import { insertVerifications } from "../db/queries/verifications.ts";
import { conflict } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { yieldToEventLoop } from "../lib/sleep.ts";
import { batchRecordOf } from "../db/verification-record.ts";
import {
  allSkippedAfterSyntax,
  isDisposableDomain,
  isRoleAccount,
  isUnknownReason,
  type VerificationResult,
} from "../verify/index.ts";
import { finishTaskIfDone } from "./finish-task.ts";
import { lockBalanceAndOwnTask } from "./task-locks.ts";

/** Pending jobs settled per statement, as a cancel drops them (PGlite: the event loop turns between). */
const SETTLE_STEP = 1_000;

/**
 * The unknown a pending job ends with: the answer it was retrying after (its reason, host and
 * evidence), or for a job with none stored (never tried; a busy host put it back) an unknown
 * saying so — `cancelled` unless its last error names a reason.
 */
export function settledResultOf(job: JobRecord, at: Date): VerificationResult {
  if (job.retryResult) return { ...job.retryResult, status: "unknown" };
  const local = job.emailAddress.slice(0, job.emailAddress.lastIndexOf("@"));
  return {
    email: job.emailAddress,
    status: "unknown",
    isRoleBased: isRoleAccount(local),
    isDisposable: job.domain !== "" && isDisposableDomain(job.domain),
    hasMxRecords: false,
    hasReverseDns: false,
    domainName: job.domain,
    hostName: "",
    serverType: "unknown",
    isCatchall: false,
    validatedAt: at,
    unknownReason: isUnknownReason(job.lastError) ? job.lastError : "cancelled",
    needsPhysicalVerify: false,
    didYouMean: null,
    isFreeProvider: false,
    // Earlier attempts' facts were not kept (only their reason, above): nothing to report per check.
    checks: allSkippedAfterSyntax("task_finished"),
    evidence: "not verified: the task was finished before this address was tried",
  };
}

/** Stores the settled results of `jobs` (pending, locked by the caller) and completes them. */
async function settleJobs(tx: Queryable, task: TaskRecord, jobs: JobRecord[], at: Date): Promise<void> {
  const records = jobs.map((job) => batchRecordOf(settledResultOf(job, at), job, task, at));
  await insertVerifications(tx, records);
  await settlePendingJobs(
    tx,
    jobs.map((job, i) => ({ id: job.id, emailId: records[i]!.id })),
    at,
  );
}

/**
 * Finishes one of the caller's tasks now instead of waiting for its retries: every pending job
 * ends `completed` with an unknown result (the answer it was waiting to retry after), and the
 * task's retries end at this moment. With no job running, the task finishes in this transaction
 * the normal way (finishTaskIfDone: the unknowns refunded, the upload completed, the completion
 * webhook queued once). Jobs running right now are neither waited for nor settled here: their
 * results are recorded as usual, a retry they would ask for records its unknown instead (their
 * task's retries have ended), and the write of the last one finishes the task — so no answer is
 * thrown away and none is billed twice.
 *
 * Locks in the global order (docs/locking.md), as a cancel: the caller's user (the refund), the
 * task, its pending jobs SKIP LOCKED (a locked one is being claimed; it is settled when its group
 * is recorded). A finished task is returned as it is (finishing is idempotent); a cancelled one
 * is a CONFLICT; another user's task is "not found".
 */
export async function finishTaskNow(
  db: Database,
  clock: Clock,
  principal: Principal,
  id: string,
): Promise<TaskRecord> {
  return db.transaction(async (tx) => {
    const locked = await lockBalanceAndOwnTask(tx, principal, id);
    if (locked.cancelledAt) throw conflict("The task was cancelled; a cancelled task cannot be finished");
    if (locked.finishedAt) return locked;
    const at = clock.now();
    const task = await endTaskRetries(tx, locked.id, at);
    for (;;) {
      const jobs = await lockPendingJobs(tx, task.id, SETTLE_STEP);
      await settleJobs(tx, task, jobs, at);
      if (jobs.length < SETTLE_STEP) break;
      await yieldToEventLoop();
    }
    await finishTaskIfDone(tx, task, at);
    return (await findTask(tx, task.id))!;
  });
}
