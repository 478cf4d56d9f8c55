import type { Database } from "../db/client.ts";
import type { JobOutcome } from "./outcomes.ts";

/**
 * Where the worker pool hands a processed group: the queue decides what happened to each job
 * (outcomes.ts); the layer that owns tasks records it, bills it and finishes the tasks it closed
 * (tasks/group-recorder.ts, wired by app/). The queue never imports tasks/.
 */
export interface GroupRecorder {
  /**
   * Records `outcomes`: results stored, retries rescheduled, hopeless jobs failed, late results of
   * a cancelled task charged, and each task whose last job this was finished. Jobs whose lease
   * `worker` lost are left alone, so a call repeated after a failure records nothing twice.
   * Throws when a write failed (the pool retries); returns the ids of the tasks it finished.
   * `takeTurn` runs before each write, giving the event loop a turn.
   */
  record(
    db: Database,
    worker: string,
    outcomes: JobOutcome[],
    at: Date,
    takeTurn: () => Promise<void>,
  ): Promise<string[]>;
  /**
   * Finishes the tasks whose every job is closed but that no finish reached (the process died
   * between a write's commit and its finish); the pool calls it periodically.
   */
  finishTasksLeftUnfinished(db: Database, at: Date): Promise<string[]>;
}
