// Which column of a previewed list holds the addresses, by the server's rules
// (src/files/parse/table.ts): a header named like "Email" wins; otherwise the column where the
// most cells look like addresses. The server decides again on the whole file.

import { isEmailHeaderName } from "../../../src/files/parse/email-header-names.ts";

export { isEmailHeaderName };

/** Address-shaped: an "@" with text on both sides and no spaces, after trimming (a cheap test). */
export const looksLikeAddress = (cell: string | undefined): boolean =>
  cell !== undefined && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(cell.trim());

export interface ColumnGuess {
  /** The first row is a header (a named email column, or a row without any address). */
  hasHeader: boolean;
  /** 0-based column; -1 when no column holds anything like an address. */
  column: number;
  /** Why, in words, for the preview. */
  reason: string;
}

export function guessEmailColumn(rows: readonly string[][]): ColumnGuess {
  const first = rows[0] ?? [];
  const named = first.findIndex(isEmailHeaderName);
  const hasHeader = named >= 0 || (rows.length > 1 && !first.some(looksLikeAddress));
  if (named >= 0)
    return { hasHeader, column: named, reason: `its header “${first[named]!.trim()}” names it` };
  const width = Math.max(0, ...rows.map((r) => r.length));
  const counts = Array.from(
    { length: width },
    (_, c) => rows.slice(hasHeader ? 1 : 0).filter((r) => looksLikeAddress(r[c])).length,
  );
  let best = -1;
  counts.forEach((n, c) => {
    if (n > 0 && (best < 0 || n > counts[best]!)) best = c;
  });
  if (best < 0) return { hasHeader, column: -1, reason: "no column of the first rows holds an address" };
  const n = counts[best]!;
  return {
    hasHeader,
    column: best,
    reason: `${n.toString()} of its first ${(rows.length - (hasHeader ? 1 : 0)).toString()} cells look like addresses`,
  };
}

/**
 * The `email_column` form value for a chosen column: its header name when the first row names it
 * (the server matches names first, case-insensitively), else its 1-based number.
 */
export function columnFieldValue(rows: readonly string[][], guess: ColumnGuess, column: number): string {
  const header = guess.hasHeader ? rows[0]?.[column]?.trim() : undefined;
  if (header) {
    const first = rows[0]!.findIndex((c) => c.trim().toLowerCase() === header.toLowerCase());
    if (first === column && !/^[0-9]+$/.test(header)) return header;
  }
  return String(column + 1);
}

/** "A", "B", … "Z", "AA": spreadsheet column letters for unnamed columns. */
export function columnLetter(index: number): string {
  let n = index + 1;
  let s = "";
  while (n > 0) {
    const r = (n - 1) % 26;
    s = String.fromCharCode(65 + r) + s;
    n = Math.floor((n - 1) / 26);
  }
  return s;
}
