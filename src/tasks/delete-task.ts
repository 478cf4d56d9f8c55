import { INTEGRATION_PURPOSES, type Principal } from "../auth/principal.ts";
import type { Database } from "../db/client.ts";
import { announceInvalidation, type InvalidationBus } from "../db/invalidation-bus.ts";
import { deleteTaskData, findTasksFinishedBefore, lockTask } from "../db/queries/tasks.ts";
import { conflict, forbidden } from "../lib/app-error.ts";
import { lockOwnTask } from "./task-locks.ts";

/**
 * DESIGN §5 key scopes, for deletion: integration keys (zapier, n8n, google sheets) may create,
 * read and cancel tasks — a cancel only stops spending and returns credits — but not delete them:
 * deletion destroys paid-for results for good, and those keys live in third-party platforms.
 * `custom` keys and dashboard sessions may delete.
 */
const mayDeleteTasks = (p: Principal): boolean =>
  p.source === "frontend" || (p.apiKeyPurpose !== null && !INTEGRATION_PURPOSES.includes(p.apiKeyPurpose));

/**
 * Deletes one of the caller's finished tasks: its jobs, results, upload and stored rows. The
 * ledger is untouched (money history is never deleted). An unfinished task is a CONFLICT: cancel
 * it first.
 */
export async function deleteTask(
  db: Database,
  principal: Principal,
  id: string,
  bus?: Pick<InvalidationBus, "applyLocally">,
): Promise<void> {
  if (!mayDeleteTasks(principal))
    throw forbidden(
      `An integration key (purpose "${principal.apiKeyPurpose}") cannot delete tasks; use a "custom" key or a session`,
    );
  await db.transaction(async (tx) => {
    const task = await lockOwnTask(tx, principal, id);
    if (!task.finishedAt) throw conflict("The task has not finished; cancel it first, then delete it");
    await deleteTaskData(tx, task.id);
    // Nodes that remember the user's results (realtime/recent-results.ts) forget them.
    await announceInvalidation(tx, { kind: "user_results", userId: principal.userId });
  });
  bus?.applyLocally({ kind: "user_results", userId: principal.userId });
}

/**
 * Deletes the data of up to `limit` tasks finished before `before` (RESULT_RETENTION_DAYS), oldest
 * first, one short transaction per task (a task holds up to 10,000 jobs and results; PGlite has
 * one connection). Returns how many were deleted.
 */
export async function purgeTasksFinishedBefore(db: Database, before: Date, limit: number): Promise<number> {
  const ids = await findTasksFinishedBefore(db, before, limit);
  let deleted = 0;
  for (const id of ids) {
    const done = await db.transaction(async (tx) => {
      const task = await lockTask(tx, id);
      if (!task?.finishedAt || !(await deleteTaskData(tx, id))) return false;
      if (task.userId) await announceInvalidation(tx, { kind: "user_results", userId: task.userId });
      return true;
    });
    if (done) deleted++;
  }
  return deleted;
}
