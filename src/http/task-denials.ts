import { AppError } from "../lib/app-error.ts";
import { isCreditsShort, type TaskCreditsShort } from "../tasks/billing.ts";

/**
 * A task creation's expected denial (a value from tasks/, like realtime's refusals) as the spec's
 * 402, or the created result itself.
 */
export function createdOrRefused<T extends object>(created: T | TaskCreditsShort): T {
  if (!isCreditsShort(created)) return created;
  throw new AppError(
    "INSUFFICIENT_CREDITS",
    `Insufficient credits: the task needs ${created.needed}, the balance is ${created.balance}`,
  );
}
