// The price of a list before it is uploaded: the server's quote of the upload
// (POST /api/v1/tasks/batch/upload/quote) counts the file as the real upload would.
import type { UploadFields } from "@mailprobe/client";
import { formatNumber, plural } from "./format.ts";

/** The quote's answer (UploadQuote in the API document): the fields this page shows. */
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
  /** xlsx: the sheet the preview shows (sent, so the server reads that one). */
  sheet: string | undefined;
}

export const sameRequest = (a: UploadRequest, b: UploadRequest): boolean =>
  a.webhookUrl === b.webhookUrl && samePrice(a, b);

/**
 * Whether two requests cost the same: the quote checks the webhook URL but the price does not
 * depend on it, so a price stays on the button while a new URL is checked. (The webhook field's
 * change event fires on the mousedown of a click on the button; a button that went back to
 * "Pricing…" and disabled in between lost the click.)
 */
export function samePrice(a: PricedFor, b: PricedFor): boolean {
  return a.file === b.file && a.emailColumn === b.emailColumn && a.sheet === b.sheet;
}

type PricedFor = Pick<UploadRequest, "file" | "emailColumn" | "sheet">;

/**
 * The form fields of the upload and of its quote besides the file (sent under its own name):
 * the same for both, so the list is uploaded at the price its quote showed.
 */
export function uploadFieldsOf(r: UploadRequest): UploadFields {
  return {
    ...(r.webhookUrl ? { webhook_url: r.webhookUrl } : {}),
    ...(r.emailColumn !== undefined ? { email_column: r.emailColumn } : {}),
    ...(r.sheet !== undefined ? { sheet: r.sheet } : {}),
  };
}

/**
 * "Verify 1,653 addresses for 1,600 credits (balance 2,000 → 400)": the price on the button that
 * spends it. The addresses are the distinct ones (each verified once); the credits are what the
 * upload reserves (sandbox addresses are free). When the balance is short the arrow would point
 * below zero, so the label says how short instead.
 */
export function startLabel(q: UploadQuote): string {
  const head = `Verify ${plural(q.unique_count, "address", "addresses")} for ${plural(q.credits_required, "credit", "credits")}`;
  const shortfall = shortfallOf(q);
  return shortfall === null
    ? `${head} (balance ${formatNumber(q.balance)} → ${formatNumber(q.balance - q.credits_required)})`
    : `${head} (balance ${formatNumber(q.balance)}, ${formatNumber(shortfall)} short)`;
}

/** Whether the server still asks what the button showed: the upload goes ahead only at that price. */
export const isSameQuote = (shown: UploadQuote | null, now: UploadQuote): boolean =>
  shown !== null &&
  shown.unique_count === now.unique_count &&
  shown.credits_required === now.credits_required &&
  shown.balance === now.balance;

/** What the primary button offers for the chosen list. */
export type StartButton =
  /** No file yet: the label names the action; pressing it asks for a file. */
  | { kind: "start" }
  /** A file is chosen and its quote is under way (or its preview is being made): disabled. */
  | { kind: "pricing" }
  /** A workbook with addresses on several sheets: disabled until the user picks one. */
  | { kind: "sheet" }
  | { kind: "priced"; quote: UploadQuote }
  /** Disabled: the upload would be refused (402) until the balance covers it. */
  | { kind: "short"; quote: UploadQuote; shortfall: number }
  /**
   * The quote failed (its error is shown). Enabled, so a price that cannot be had (the server
   * busy, the network) does not lock the list out; pressing asks for the price again first.
   */
  | { kind: "unpriced" };

/**
 * Where the price of the chosen list stands: nothing chosen, being asked, the quote failed, or
 * not asked until a sheet is chosen.
 */
export type Pricing = "none" | "pending" | "failed" | "sheet";

export function startButtonOf(price: UploadQuote | null, pricing: Pricing): StartButton {
  if (price) {
    const shortfall = shortfallOf(price);
    return shortfall === null ? { kind: "priced", quote: price } : { kind: "short", quote: price, shortfall };
  }
  if (pricing === "pending") return { kind: "pricing" };
  if (pricing === "sheet") return { kind: "sheet" };
  return pricing === "failed" ? { kind: "unpriced" } : { kind: "start" };
}

export function startButtonLabel(b: StartButton): string {
  switch (b.kind) {
    case "start":
      return "Start verification";
    case "pricing":
      return "Pricing the list…";
    case "sheet":
      return "Choose the sheet to verify";
    case "priced":
    case "short":
      return startLabel(b.quote);
    case "unpriced":
      return "Start verification (price unavailable)";
  }
}

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
