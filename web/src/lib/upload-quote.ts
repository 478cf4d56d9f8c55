// The price of a list before it is uploaded: the server's dry run of the upload
// (POST /api/v1/tasks/batch/upload with dry_run) counts the file as the real upload would.
import { formatNumber, plural } from "./format.ts";

/** The dry run's answer (UploadDryRun in the API document). */
export interface UploadQuote {
  filename: string;
  submitted_count: number;
  unique_count: number;
  duplicate_count: number;
  skipped_count: number;
  invalid_syntax_count: number;
  sandbox_count: number;
  credits_required: number;
  balance: number;
  has_enough_credits: boolean;
}

/** What the form would send; a quote answers for exactly these. */
export interface UploadRequest {
  file: File;
  webhookUrl: string;
  emailColumn: string | undefined;
}

export const sameRequest = (a: UploadRequest, b: UploadRequest): boolean =>
  a.file === b.file && a.webhookUrl === b.webhookUrl && a.emailColumn === b.emailColumn;

/** The multipart form of the upload; with `dryRun` the server prices it and creates nothing. */
export function uploadFormOf(r: UploadRequest, dryRun: boolean): FormData {
  const form = new FormData();
  if (r.webhookUrl) form.append("webhook_url", r.webhookUrl);
  if (r.emailColumn !== undefined) form.append("email_column", r.emailColumn);
  if (dryRun) form.append("dry_run", "true");
  form.append("file", r.file, r.file.name);
  return form;
}

/**
 * "About 1,653 credits, you have 94." Only "about": the credits of unknown results come back
 * when the list finishes.
 */
export const priceText = (q: UploadQuote): string =>
  `About ${plural(q.credits_required, "credit", "credits")}, you have ${formatNumber(q.balance)}.`;

/** "1,653 distinct addresses in 2,000 rows: 300 duplicate rows, 47 rows skipped (no address) …". */
export function countsText(q: UploadQuote): string {
  const rows = q.submitted_count + q.skipped_count;
  const notes = [
    q.duplicate_count > 0 ? plural(q.duplicate_count, "duplicate row", "duplicate rows") : null,
    q.skipped_count > 0 ? `${plural(q.skipped_count, "row", "rows")} skipped (no address)` : null,
    q.invalid_syntax_count > 0
      ? `${plural(q.invalid_syntax_count, "address", "addresses")} with invalid syntax (billed, no mail server asked)`
      : null,
    q.sandbox_count > 0 ? `${plural(q.sandbox_count, "sandbox address", "sandbox addresses")} (free)` : null,
  ].filter((n): n is string => n !== null);
  const head = `${plural(q.unique_count, "distinct address", "distinct addresses")} in ${plural(rows, "row", "rows")}`;
  return notes.length > 0 ? `${head}: ${notes.join(", ")}.` : `${head}.`;
}

/** The credits still missing, or null when the balance suffices. */
export const shortfallOf = (q: UploadQuote): number | null =>
  q.has_enough_credits ? null : q.credits_required - q.balance;
