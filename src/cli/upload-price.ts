// `mailprobe client upload`'s price step: the server's quote of the upload in one line, and
// what to do with it (upload, ask, refuse), decided apart from the I/O so each rule has a test.
import type { UploadQuote } from "@mailprobe/client";

const count = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** The credits the balance lacks, or null when it covers the list. */
const shortfallOf = (q: UploadQuote): number | null =>
  q.has_enough_credits ? null : q.credits_required - q.balance;

/**
 * "list.csv: 4 addresses, 3 credits, balance 100 → 97 (6 rows: 1 duplicate, 1 without an
 * address, 1 sandbox address free)". Addresses are the distinct ones (each verified once); the
 * credits are what the upload reserves. A short balance says how short instead of an arrow to
 * below zero.
 */
export function priceLine(q: UploadQuote): string {
  const shortfall = shortfallOf(q);
  const balance =
    shortfall === null
      ? `balance ${q.balance} → ${q.balance - q.credits_required}`
      : `balance ${q.balance}, ${shortfall} short`;
  const notes = [
    q.duplicate_count > 0 ? count(q.duplicate_count, "duplicate", "duplicates") : null,
    q.skipped_count > 0 ? `${q.skipped_count} without an address` : null,
    q.sandbox_count > 0 ? `${count(q.sandbox_count, "sandbox address", "sandbox addresses")} free` : null,
  ].filter((n): n is string => n !== null);
  const rows = count(q.submitted_count + q.skipped_count, "row", "rows");
  const detail = notes.length > 0 ? ` (${rows}: ${notes.join(", ")})` : "";
  const where = q.sheet === null ? "" : ` (sheet ${q.sheet}, column ${q.email_column})`;
  return `${q.filename}${where}: ${count(q.unique_count, "address", "addresses")}, ${count(q.credits_required, "credit", "credits")}, ${balance}${detail}`;
}

/** What `client upload` does once the price is known. */
export type UploadStep =
  /** The balance does not cover it: say so, upload nothing, exit 1 (also with --dry-run). */
  | "short"
  /** --dry-run: the price was the answer; exit 0. */
  | "priced"
  /** --yes: upload at this price without asking. */
  | "upload"
  /** On a terminal: ask, y/N. */
  | "ask"
  /** Nobody to ask (stdin is not a terminal) and no --yes: upload nothing, exit 1. */
  | "refuse";

export function uploadStep(
  q: UploadQuote,
  opts: { dryRun?: boolean; yes?: boolean },
  canAsk: boolean,
): UploadStep {
  if (!q.has_enough_credits) return "short";
  if (opts.dryRun) return "priced";
  if (opts.yes) return "upload";
  return canAsk ? "ask" : "refuse";
}

/** Why nothing was uploaded on a short balance, and what to do about it. */
export function shortMessage(q: UploadQuote): string {
  const shortfall = shortfallOf(q) ?? 0;
  return (
    `not uploaded: ${count(shortfall, "credit", "credits")} short (the list needs ${q.credits_required}, ` +
    `the balance is ${q.balance}); ask the server's operator for credits (mailprobe credits grant) or upload a shorter list`
  );
}

/** The question asked on a terminal before the upload reserves credits. */
export const confirmQuestion = (q: UploadQuote): string =>
  `Upload ${q.filename} and reserve ${count(q.credits_required, "credit", "credits")}?`;

export const REFUSE_MESSAGE =
  "not uploaded: stdin is not a terminal, so nobody can confirm the price; pass --yes to upload at this price (--dry-run shows it only)";
