import type { FieldError } from "../lib/app-error.ts";
import { validationError } from "../lib/app-error.ts";
import { notAnAddressReason } from "../lib/address-shape.ts";

/** The spec's limit of addresses per batch task (JSON list or file). */
export const MAX_TASK_EMAILS = 10_000;

/**
 * The same edge rule as realtime verification, per entry: a 400 only for what is not an address
 * at all (blank, too long, no "@" with text on both sides). RFC-invalid addresses become jobs
 * whose result is `invalid_syntax`.
 */
export function checkTaskEmails(emails: string[]): string[] {
  if (emails.length === 0)
    throw validationError("emails must contain at least one address", [
      { field: "emails", reason: "must not be empty" },
    ]);
  if (emails.length > MAX_TASK_EMAILS) {
    throw validationError(`A task holds at most ${MAX_TASK_EMAILS} addresses`, [
      { field: "emails", reason: `must contain at most ${MAX_TASK_EMAILS} items (got ${emails.length})` },
    ]);
  }
  const details: FieldError[] = [];
  const trimmed = emails.map((raw, i) => {
    const email = raw.trim();
    const reason = notAnAddressReason(email);
    // Every bad entry (at most 10,000): the HTTP layer lists the first 20 and counts the rest.
    if (reason) details.push({ field: `emails[${i}]`, reason });
    return email;
  });
  if (details.length > 0)
    throw validationError(`${details.length} of ${emails.length} entries are not email addresses`, details);
  return trimmed;
}

/** Longest retry window a task may ask for (`retry_window_minutes`, TASK_RETRY_WINDOW_MINUTES): a day. */
export const MAX_RETRY_WINDOW_MINUTES = 1_440;

/**
 * The upload form's `retry_window_minutes` (text, as multipart fields are): whole minutes from 0
 * to MAX_RETRY_WINDOW_MINUTES, or `fallback` when absent or blank.
 */
export function readRetryWindowField(raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const minutes = /^\d{1,5}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!(minutes <= MAX_RETRY_WINDOW_MINUTES))
    throw validationError("Invalid retry_window_minutes", [
      {
        field: "retry_window_minutes",
        reason: `must be a whole number of minutes from 0 to ${MAX_RETRY_WINDOW_MINUTES}`,
      },
    ]);
  return minutes;
}
