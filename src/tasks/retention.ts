import type { Database } from "../db/client.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../observability/logger.ts";
import { purgeChargesBefore } from "../db/queries/address-charges.ts";
import { FREE_REPEAT_WINDOW_MS } from "../realtime/charge-rules.ts";
import { purgeTasksFinishedBefore } from "./delete-task.ts";

const DAY_MS = 86_400_000;

/** Tasks purged per batch, each in its own transaction; a tick runs batches up to its cap. */
const PURGE_BATCH = 20;
/** Most batches one tick runs: a backlog (retention just switched on) drains over several ticks. */
const PURGE_MAX_BATCHES_PER_TICK = 10;

export interface RetentionSweeper {
  start(): void;
  /** Stops the timer and waits for a tick in progress. */
  stop(): Promise<void>;
  /** One tick: purges up to batchSize × maxBatchesPerTick tasks; returns how many. */
  runOnce(): Promise<number>;
}

export interface RetentionDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** RESULT_RETENTION_DAYS; null: keep forever (the sweeper does nothing). */
  retentionDays: number | null;
  /** Between ticks; default an hour (retention is counted in days). */
  intervalMs?: number;
  /** Why the sweep must not write now (DATA_DIR below its free-space threshold), or null. */
  pause?: () => string | null;
  /** Tasks per batch (default PURGE_BATCH) and batches per tick (default PURGE_MAX_BATCHES_PER_TICK). */
  batchSize?: number;
  maxBatchesPerTick?: number;
}

/** The moment before which finished tasks are purged. */
const retentionCutoff = (now: Date, days: number): Date => new Date(now.getTime() - days * DAY_MS);

/**
 * RESULT_RETENTION_DAYS on a timer, in the worker role beside the webhook dispatcher: finished
 * tasks past the cutoff lose their jobs, results and upload (deleteTaskData; the ledger stays).
 * Any number of workers may run it: each task is deleted under its row lock, and a task already
 * gone is skipped.
 */
export function createRetentionSweeper(deps: RetentionDeps): RetentionSweeper {
  const { db, clock, logger, retentionDays } = deps;
  const log = logger.child({ component: "retention" });
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<unknown> | null = null;
  const batchSize = deps.batchSize ?? PURGE_BATCH;
  const maxBatches = deps.maxBatchesPerTick ?? PURGE_MAX_BATCHES_PER_TICK;

  async function runOnce(): Promise<number> {
    if (retentionDays === null) return 0;
    // A purge writes (WAL, and the freed pages are only reused, never returned, by the embedded
    // engine): below the disk's threshold it waits for the next tick.
    if (deps.pause?.() != null) return 0;
    const before = retentionCutoff(clock.now(), retentionDays);
    let total = 0;
    for (let batch = 0; batch < maxBatches; batch++) {
      const n = await purgeTasksFinishedBefore(db, before, batchSize);
      total += n;
      if (n < batchSize) break;
    }
    if (total > 0) log.info({ tasks: total, before: before.toISOString() }, "purged old task data");
    // Charges older than the free-repeat window make nothing free any more (the ledger keeps them).
    await purgeChargesBefore(db, new Date(clock.now().getTime() - FREE_REPEAT_WINDOW_MS));
    return total;
  }

  return {
    start() {
      if (timer || retentionDays === null) return;
      timer = setInterval(() => {
        // A tick still running (a large backlog on a slow database) is not joined by another.
        if (running) return;
        running = runOnce()
          .catch((err: unknown) => log.warn({ err }, "purging old task data failed"))
          .finally(() => (running = null));
      }, deps.intervalMs ?? 3_600_000);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      await running;
    },
    runOnce,
  };
}
