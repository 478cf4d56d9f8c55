import type { GroupRecorder } from "../jobs/group-recorder.ts";
import { finishTasksLeftUnfinished } from "./finish-task.ts";
import { recordGroup } from "./record-group.ts";

/** The task layer's recorder of processed groups, which app/ hands the worker pool. */
export const taskGroupRecorder: GroupRecorder = {
  record: (db, worker, outcomes, at, takeTurn) => recordGroup(db, worker, outcomes, at, takeTurn),
  finishTasksLeftUnfinished: (db, at) => finishTasksLeftUnfinished(db, at),
};
