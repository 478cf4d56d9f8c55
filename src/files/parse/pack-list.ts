// What an upload keeps of a parsed list, made in the parsing thread. The server's thread gets a
// few strings per row instead of one string per cell: a 1,000-column file of 10,000 rows is 10
// million cells, and copying them across threads, scanning each for unstorable text and
// stringifying each row for the database took seconds of the thread that answers HTTP. Here that
// work happens where a heap cap and a time cap bound it (parse-pool.ts), and the rows arrive as
// the JSON texts the database stores.
import { unstorableTextReason } from "../../lib/storable-text.ts";
import type { ParsedList } from "./parse-list-file.ts";
import { fileProblem, type ListFileProblem } from "./problems.ts";
import type { SkippedCounts } from "./table.ts";

/**
 * Rows of the file in one statement's worth: `rowsJson` is the JSON array of their cell arrays,
 * `emails` their job addresses (ListEntry.email, or null for a skipped row), `first` the index of
 * the first. About ROWS_JSON_CHARS of JSON each, so writing one is a short step.
 */
export interface RowBatch {
  first: number;
  rowsJson: string;
  emails: Array<string | null>;
}

/** PGlite parses ~3 MB of jsonb a second on the server's thread: ~80 ms a batch. */
const ROWS_JSON_CHARS = 256 * 1024;

export interface PackedList {
  format: ParsedList["format"];
  header: string[] | null;
  emailColumn: number;
  columnCount: number;
  /** The data rows in file order, in batches for the database. */
  batches: RowBatch[];
  /** Data rows (blank lines are not rows). */
  rowCount: number;
  /** Each data row's job address (ListEntry.email), or null when the row is skipped; file order. */
  rowEmails: Array<string | null>;
  /** Distinct job addresses, first-occurrence order. */
  emails: string[];
  skipped: SkippedCounts;
}

export type PackListResult = { ok: true; list: PackedList } | { ok: false; problem: ListFileProblem };

/**
 * Text PostgreSQL cannot store refuses the file: the sniffer reads only the first KB for binary
 * content, so a NUL further in would otherwise reach the database as cell text.
 */
function unstorableProblem(list: ParsedList): ListFileProblem | null {
  for (const cells of list.header ? [list.header, ...list.rows] : list.rows) {
    for (const cell of cells) {
      const reason = unstorableTextReason(cell);
      if (!reason) continue;
      return fileProblem(
        "invalid_file",
        reason.includes("NUL")
          ? "The file contains a NUL character (a zero byte), which a text list cannot hold: it is binary or corrupt. Upload a .csv, .txt or .xlsx list."
          : "The file contains text that is not valid Unicode. Save it again as UTF-8 and upload it.",
      );
    }
  }
  return null;
}

function batchesOf(rows: readonly string[][], emails: ReadonlyArray<string | null>): RowBatch[] {
  const batches: RowBatch[] = [];
  let texts: string[] = [];
  let chars = 0;
  let first = 0;
  const flush = (end: number): void => {
    batches.push({ first, rowsJson: `[${texts.join(",")}]`, emails: emails.slice(first, end) });
    texts = [];
    chars = 0;
    first = end;
  };
  rows.forEach((cells, i) => {
    const text = JSON.stringify(cells);
    texts.push(text);
    chars += text.length + 1;
    if (chars >= ROWS_JSON_CHARS) flush(i + 1);
  });
  if (texts.length > 0) flush(rows.length);
  return batches;
}

export function packList(list: ParsedList): PackListResult {
  const problem = unstorableProblem(list);
  if (problem) return { ok: false, problem };
  const rowEmails = new Array<string | null>(list.rows.length).fill(null);
  for (const entry of list.entries) rowEmails[entry.rowIndex] = entry.email;
  return {
    ok: true,
    list: {
      format: list.format,
      header: list.header,
      emailColumn: list.emailColumn,
      columnCount: list.columnCount,
      batches: batchesOf(list.rows, rowEmails),
      rowCount: list.rows.length,
      rowEmails,
      emails: list.emails,
      skipped: list.skipped,
    },
  };
}
