// What deactivating a user or revoking a key does to the work they started (docs/api.md, "Keys,
// sessions and scopes": "Deleting a key ends the work it started"): a credential's end ends
// everything it opened. In the transaction that deactivates the user (or revokes the key), every
// unfinished task of the user (of the key) is cancelled as a cancel would (cancelLockedTask:
// pending jobs dropped, the rest refunded in one ledger row, the upload `cancelled`) but without
// a completion webhook, and every webhook not yet
// delivered is dropped as `failed`. Address groups a worker was verifying at that moment finish
// and are recorded and billed as after a cancel (chargeLateResults): they are work done.
import type { Queryable } from "../db/client.ts";
import { lockUnfinishedTasksOf } from "../db/queries/tasks.ts";
import { dropUndeliveredWebhooks } from "../db/queries/webhook-deliveries.ts";
import { cancelLockedTask } from "./cancel-task.ts";

export interface StoppedWork {
  /** Tasks cancelled. */
  tasks: number;
  /** Webhook deliveries dropped. */
  webhooks: number;
}

/**
 * Stops the work of a user (`apiKeyIds` null) or of their keys. Call inside the transaction that
 * deactivates or revokes, after it has locked the user's row (lock order: users, tasks, jobs).
 */
export async function stopWorkOf(
  tx: Queryable,
  who: { userId: string; apiKeyIds: readonly string[] | null; reason: string },
  at: Date,
): Promise<StoppedWork> {
  const tasks = await lockUnfinishedTasksOf(tx, who.userId, who.apiKeyIds);
  for (const task of tasks) await cancelLockedTask(tx, task, at);
  const webhooks = await dropUndeliveredWebhooks(tx, { ...who, at });
  return { tasks: tasks.length, webhooks };
}
