import type { FieldError } from "../lib/app-error.ts";
import { validationError } from "../lib/app-error.ts";
import { MAX_EMAIL_INPUT_LENGTH } from "../verifications/realtime-input.ts";

/** The spec's limit of addresses per batch task (JSON list or file). */
export const MAX_TASK_EMAILS = 10_000;

/** Details listed per request; a list of 10,000 bad entries must not produce a 10,000-line error. */
const MAX_DETAILS = 20;

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
  let bad = 0;
  const trimmed = emails.map((raw, i) => {
    const email = raw.trim();
    const at = email.lastIndexOf("@");
    const reason =
      email === ""
        ? "must not be empty"
        : email.length > MAX_EMAIL_INPUT_LENGTH
          ? `must be at most ${MAX_EMAIL_INPUT_LENGTH} characters`
          : at <= 0 || at === email.length - 1
            ? "must contain an @ with text on both sides"
            : null;
    if (reason) {
      bad++;
      if (details.length < MAX_DETAILS) details.push({ field: `emails[${i}]`, reason });
    }
    return email;
  });
  if (bad > 0) throw validationError(`${bad} of ${emails.length} entries are not email addresses`, details);
  return trimmed;
}
