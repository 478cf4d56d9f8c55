// What an upload keeps of a parsed list, made in the parsing thread. The server's thread gets a
// few strings per row instead of one string per cell: a 1,000-column file of 10,000 rows is 10
// million cells, and copying them across threads, scanning each for unstorable text and
// stringifying each row for the database took seconds of the thread that answers HTTP. Here that
// work happens where a heap cap and a time cap bound it (parse-pool.ts), and the rows arrive as
// the compressed blocks the database stores (row-block.ts).
import { unstorableTextReason } from "../../lib/storable-text.ts";
import type { ParsedList } from "./parse-list-file.ts";
import { encodeRowBlock } from "../row-block.ts";
import { fileProblem, formatCount, type ListFileProblem } from "./problems.ts";
import type { SkippedCounts } from "./table.ts";

/**
 * Consecutive rows of the file, `first` to `first + count - 1`, as stored (row-block.ts). About
 * BLOCK_JSON_CHARS of JSON before compression, so decoding one on download is a short step.
 */
export interface RowBlock {
  first: number;
  count: number;
  data: Uint8Array;
}

/** PGlite parsed ~3 MB of jsonb a second on the server's thread; a block is now one bytea value. */
const BLOCK_JSON_CHARS = 256 * 1024;

/**
 * Stored bytes a file may cost, per byte uploaded, and the allowance every file has whatever its
 * size (a small list of long rows compresses less than its own bytes' worth of cells). A
 * workbook's shared strings can expand 1,000-fold in text; compressed they stay near the file's
 * size, and what would not is refused as a file problem (docs/storage.md).
 */
export const STORED_BYTES_PER_FILE_BYTE = 20;
export const STORED_BYTES_ALLOWANCE = 1024 * 1024;

export interface PackedList {
  format: ParsedList["format"];
  header: string[] | null;
  emailColumn: number;
  columnCount: number;
  /** xlsx: the sheet the list was read from. */
  sheetName?: string;
  /** The data rows in file order, in blocks as stored. */
  blocks: RowBlock[];
  /** Bytes of the blocks: what the upload costs the database, before its row overhead. */
  storedBytes: number;
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

function blocksOf(rows: readonly string[][], emails: ReadonlyArray<string | null>): RowBlock[] {
  const blocks: RowBlock[] = [];
  let texts: string[] = [];
  let chars = 0;
  let first = 0;
  const flush = (end: number): void => {
    blocks.push({ first, count: end - first, data: encodeRowBlock(texts, emails.slice(first, end)) });
    texts = [];
    chars = 0;
    first = end;
  };
  rows.forEach((cells, i) => {
    const text = JSON.stringify(cells);
    texts.push(text);
    chars += text.length + 1;
    if (chars >= BLOCK_JSON_CHARS) flush(i + 1);
  });
  if (texts.length > 0) flush(rows.length);
  return blocks;
}

function tooBigToStore(storedBytes: number, fileBytes: number): ListFileProblem | null {
  const allowed = Math.max(STORED_BYTES_ALLOWANCE, STORED_BYTES_PER_FILE_BYTE * fileBytes);
  if (storedBytes <= allowed) return null;
  return fileProblem(
    "too_much_text",
    `The file's rows take ${formatCount(storedBytes)} bytes to keep, more than ${String(STORED_BYTES_PER_FILE_BYTE)} times the file's size: it repeats the same text too often (a workbook's shared strings). Upload the list without the repeated text, or as a .csv.`,
  );
}

/** `fileBytes`: the size of the uploaded file, which bounds what its rows may cost to keep. */
export function packList(list: ParsedList, fileBytes: number): PackListResult {
  const unstorable = unstorableProblem(list);
  if (unstorable) return { ok: false, problem: unstorable };
  const rowEmails = new Array<string | null>(list.rows.length).fill(null);
  for (const entry of list.entries) rowEmails[entry.rowIndex] = entry.email;
  const blocks = blocksOf(list.rows, rowEmails);
  const storedBytes = blocks.reduce((n, b) => n + b.data.byteLength, 0);
  const tooBig = tooBigToStore(storedBytes, fileBytes);
  if (tooBig) return { ok: false, problem: tooBig };
  return {
    ok: true,
    list: {
      format: list.format,
      header: list.header,
      emailColumn: list.emailColumn,
      columnCount: list.columnCount,
      ...(list.sheetName === undefined ? {} : { sheetName: list.sheetName }),
      blocks,
      storedBytes,
      rowCount: list.rows.length,
      rowEmails,
      emails: list.emails,
      skipped: list.skipped,
    },
  };
}
