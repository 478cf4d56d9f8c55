import { isDatabaseUnavailable, type Database } from "../db/client.ts";
import { rescheduleJobs } from "../db/queries/jobs.ts";
import type { Clock } from "../lib/clock.ts";
import { sleep } from "../lib/sleep.ts";
import type { Logger } from "../observability/logger.ts";
import type { GroupRecorder } from "./group-recorder.ts";
import { outcomesOfUnrecorded, rescheduleOf, type JobOutcome } from "./outcomes.ts";

export interface SettleDeps {
  db: Database;
  clock: Clock;
  log: Logger;
  workerId: string;
  recorder: GroupRecorder;
  /** Waits between retries of a failed write (RECORD_RETRY_DELAYS_MS). */
  retryDelaysMs: readonly number[];
  maxAttempts: number;
  /** Gives the event loop a turn before each write (EventLoopTurns). */
  takeTurn: () => Promise<void>;
}

/**
 * Records a group's outcomes, retrying a failed write with backoff (a database restart is over in
 * seconds); if it still fails, gives the jobs back to the queue in one small statement. Never
 * throws: every job leaves `processing` here, or its lease runs out unrenewed.
 */
export async function settleOutcomes(deps: SettleDeps, outcomes: JobOutcome[]): Promise<void> {
  const { db, clock, log, workerId, recorder, takeTurn } = deps;
  let lastError: unknown;
  for (let attempt = 0; attempt <= deps.retryDelaysMs.length; attempt++) {
    if (attempt > 0) await sleep(deps.retryDelaysMs[attempt - 1]!);
    try {
      const finished = await recorder.record(db, workerId, outcomes, clock.now(), takeTurn);
      for (const taskId of finished) log.info({ taskId }, "task finished");
      return;
    } catch (error) {
      lastError = error;
      log.warn({ err: error, jobs: outcomes.length, attempt: attempt + 1 }, "recording a group failed");
    }
  }
  await handBack(deps, outcomes, lastError);
}

/** The jobs of a group whose write kept failing, back in the queue (or left to their lease). */
async function handBack(deps: SettleDeps, outcomes: JobOutcome[], lastError: unknown): Promise<void> {
  const { db, clock, log, workerId } = deps;
  const jobs = outcomes.map((o) => o.job);
  const cause = {
    databaseUnavailable: isDatabaseUnavailable(lastError),
    message: lastError instanceof Error ? lastError.message : String(lastError),
  };
  const fallback = outcomesOfUnrecorded(jobs, cause, clock.now(), deps.maxAttempts);
  try {
    if (cause.databaseUnavailable) {
      const retries = fallback.flatMap((o) => (o.kind === "retry" ? [rescheduleOf(o)] : []));
      await rescheduleJobs(db, retries, workerId, clock.now());
    } else {
      // May fail the last jobs of a task: the recorder also finishes it.
      await deps.recorder.record(db, workerId, fallback, clock.now(), deps.takeTurn);
    }
    log.error(
      { err: lastError, jobs: jobs.length },
      "results could not be recorded; jobs returned to the queue",
    );
  } catch (error) {
    log.error(
      { err: error, jobs: jobs.length },
      "results could not be recorded; jobs return when their lease runs out",
    );
  }
}
