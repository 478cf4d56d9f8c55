import type { Principal } from "../auth/principal.ts";
import type { Queryable } from "../db/client.ts";
import { lockTask, type TaskRecord } from "../db/queries/tasks.ts";
import { lockUserBalance } from "../db/queries/users.ts";
import { notFound } from "../lib/app-error.ts";

/** The caller's task, row-locked in `tx`; another user's task is "not found", as on get/jobs. */
export async function lockOwnTask(tx: Queryable, principal: Principal, id: string): Promise<TaskRecord> {
  const task = await lockTask(tx, id);
  if (!task || task.userId !== principal.userId) throw notFound("Task");
  return task;
}

/**
 * For an action that may refund (cancel, finish now): the caller's balance row, then the caller's
 * task, in the global lock order (docs/locking.md), whether or not the task turns out to be theirs.
 */
export async function lockBalanceAndOwnTask(
  tx: Queryable,
  principal: Principal,
  id: string,
): Promise<TaskRecord> {
  if ((await lockUserBalance(tx, principal.userId)) === null) throw notFound("Task");
  return lockOwnTask(tx, principal, id);
}
