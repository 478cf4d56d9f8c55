// Format-independent half of parsing: rows come in one at a time (from txt, csv or a sheet),
// this decides the header and the email column, counts, and stops the reader as soon as a limit
// is crossed so a huge file is refused without being read to the end.
import { isEmailHeaderName } from "./email-header-names.ts";
import { isAddressShaped } from "../../lib/address-shape.ts";
import { checkSyntax } from "../../verify/index.ts";
import { columnProblem, fileProblem, formatCount, type ListFileProblem } from "./problems.ts";

/** How the caller asked for the email column. */
export type ColumnRequest =
  | { kind: "auto" }
  /** A header name; `position` is set when the text is also a 1-based column number ("3"). */
  | { kind: "named"; name: string; position: number | null };

export interface TableLimits {
  /** More distinct addresses than this → too_many_emails. */
  maxEmails: number;
  /** More non-blank rows than this → too_many_rows. */
  maxRows: number;
  /** More blank rows than this → too_many_rows (sheets with a million formatted empty rows). */
  maxBlankRows: number;
  /** A row wider than this, trailing blank cells not counted → too_many_columns. */
  maxColumns: number;
  /**
   * Cells holding an "@" whose syntax is checked, per file (all sheets): more → too_many_emails.
   * Only a file without email_column and without an "Email" header checks every column.
   */
  maxAddressChecks: number;
  /**
   * Characters of cell text in one row, its cells together. Counted in the parsing thread before
   * the row is kept, so what crosses back to the server is bounded, not only the parse's heap.
   */
  maxRowChars: number;
  /**
   * Characters of cell text kept from the whole file (all sheets). An xlsx cell refers to a
   * shared string by index: 64,000 references to one 32,767-character string is 2.1 billion
   * characters from a 499 KB file, each reference counted here as the text it expands to.
   */
  maxTextChars: number;
}

/** What a file has spent of its per-file budgets; the sheets of a workbook share one. */
export interface FileSpend {
  /** Syntax checks of cells holding an "@" (maxAddressChecks). */
  addressChecks: number;
  /** Characters of the rows kept (maxTextChars). */
  textChars: number;
}

export const newFileSpend = (): FileSpend => ({ addressChecks: 0, textChars: 0 });

/**
 * Characters of cell text a file may hold, rows together, and one row. A 10 MB csv cannot exceed
 * 10 M characters (every character is at least one byte), so the per-file figure only binds
 * workbooks, whose compressed and shared text expands: 20 M is ~3× the text of a 10,000-row list
 * with 20 columns of 100 characters. One row of 1,000 columns of 256 characters stays under the
 * row figure; a single Excel cell holds at most 32,767.
 */
export const DEFAULT_MAX_TEXT_CHARS = 20_000_000;
export const DEFAULT_MAX_ROW_CHARS = 262_144;

/**
 * Columns a list may have (trailing blank cells are not columns). Results are written beside
 * every original column, so this also bounds how wide each row of a download is.
 */
export const DEFAULT_MAX_COLUMNS = 1_000;

/**
 * `full`: a first row without addresses, or with an email header name, is a header (csv, xlsx).
 * `email-name-only`: only a first line like "email" is a header (txt: any other non-address
 * first line is just an invalid line).
 */
export type HeaderRule = "full" | "email-name-only";

/**
 * One data row's email cell: `email` is the canonical address; for a cell that is address-shaped
 * but breaks RFC syntax, the trimmed lowercased cell (a job whose result is `invalid_syntax`,
 * DESIGN §5 "Syntax, one rule everywhere"); null when the cell is not an address at all (skipped).
 */
export interface ListEntry {
  rowIndex: number;
  email: string | null;
  raw: string;
}

export interface SkippedCounts {
  /** Blank rows, and rows whose email cell is blank. */
  blank: number;
  /** Rows whose email cell has text that is not address-shaped (not an email at all). */
  invalid: number;
  /** Rows repeating an earlier row's address (verified and billed once). */
  duplicates: number;
}

export interface ParsedTable {
  header: string[] | null;
  rows: string[][];
  emailColumn: number;
  columnCount: number;
  entries: ListEntry[];
  emails: string[];
  skipped: SkippedCounts;
}

const sameName = (cell: string, name: string): boolean => cell.trim().toLowerCase() === name.toLowerCase();

const isBlank = (cell: string | undefined): boolean => cell === undefined || cell.trim() === "";

/** Canonical address of a cell, or null. The "@" test skips the parser for the usual non-address cell. */
export function addressOf(cell: string | undefined): string | null {
  if (cell === undefined || !cell.includes("@")) return null;
  const result = checkSyntax(cell);
  return result.ok ? result.canonical : null;
}

/** The job address of an email cell: addressOf, else the cell itself when address-shaped; or null. */
function entryAddressOf(cell: string): string | null {
  return addressOf(cell) ?? (isAddressShaped(cell) ? cell.trim().toLowerCase() : null);
}

/** Turns the `email_column` form value into a request; blank means "find it". */
export function parseColumnRequest(value: string | null | undefined): ColumnRequest {
  const name = (value ?? "").trim();
  if (name === "") return { kind: "auto" };
  return { kind: "named", name, position: /^[0-9]{1,6}$/.test(name) ? Number(name) : null };
}

/** A short list of cells for messages: `Name, E-mail, Company`. */
export function describeCells(cells: readonly string[]): string {
  const shown = cells
    .slice(0, 20)
    .map((c) => c.trim())
    .map((c) => (c.length > 40 ? `${c.slice(0, 39)}…` : c))
    .map((c) => (c === "" ? "(empty)" : c));
  return shown.join(", ") + (cells.length > 20 ? `, … (${cells.length.toString()} columns)` : "");
}

interface ColumnStats {
  addresses: number;
  unique: Set<string>;
}

export class TableBuilder {
  private readonly rows: string[][] = [];
  private header: string[] | null = null;
  private sawFirstRow = false;
  private blankRows = 0;
  private width = 0;
  /** Chosen by request (name or position) or by a known header name; null = decide at the end. */
  private fixedColumn: number | null = null;
  /** Leftmost column whose header is an email name; preferred when it holds any address. */
  private namedColumn: number | null = null;
  private readonly stats: ColumnStats[] = [];
  /** Set when the requested header name is not in the first row (xlsx then tries the next sheet). */
  missingNamedColumn = false;
  /** The first non-blank row, for messages. */
  firstRow: string[] | null = null;

  constructor(
    private readonly request: ColumnRequest,
    private readonly limits: TableLimits,
    private readonly headerRule: HeaderRule = "full",
    private readonly spent: FileSpend = newFileSpend(),
  ) {}

  /** Number of non-blank rows seen, header included. */
  get rowCount(): number {
    return this.rows.length + (this.header ? 1 : 0);
  }

  /**
   * Feeds one row; a problem means "stop reading, refuse the file". Trailing blank cells are cut
   * (a csv row of a million empty fields is one blank row), so the width of the list, and of
   * every row of its download, is that of its widest real header or cell.
   */
  push(raw: string[]): ListFileProblem | null {
    let end = raw.length;
    while (end > 0 && isBlank(raw[end - 1])) end -= 1;
    const cells = end === raw.length ? raw : raw.slice(0, end);
    if (cells.length === 0) {
      this.blankRows += 1;
      return this.blankRows > this.limits.maxBlankRows
        ? fileProblem(
            "too_many_rows",
            `The file has more than ${formatCount(this.limits.maxBlankRows)} empty rows; delete them and upload it again.`,
          )
        : null;
    }
    if (cells.length > this.limits.maxColumns) {
      return fileProblem(
        "too_many_columns",
        `Row ${formatCount(this.rowCount + this.blankRows + 1)} of the file has ${formatCount(cells.length)} columns; ` +
          `a list may have at most ${formatCount(this.limits.maxColumns)}. Delete the columns you do not need ` +
          "(or save only the email column) and upload it again.",
      );
    }
    const textProblem = this.spendText(cells);
    if (textProblem) return textProblem;
    if (!this.sawFirstRow) {
      this.sawFirstRow = true;
      this.firstRow = cells;
      const problem = this.decideHeader(cells);
      if (problem) return problem;
      if (this.header) {
        this.width = cells.length;
        return null;
      }
    }
    this.rows.push(cells);
    if (cells.length > this.width) this.width = cells.length;
    if (this.rows.length > this.limits.maxRows) {
      return fileProblem(
        "too_many_rows",
        `The file has more than ${formatCount(this.limits.maxRows)} rows; a list holds at most ` +
          `${formatCount(this.limits.maxEmails)} addresses. Split it into smaller files.`,
      );
    }
    return this.count(cells);
  }

  /** Charges the row's text to the row and file budgets before the row is kept. */
  private spendText(cells: readonly string[]): ListFileProblem | null {
    let chars = 0;
    for (const cell of cells) chars += cell === undefined ? 0 : cell.length;
    const row = formatCount(this.rowCount + this.blankRows + 1);
    if (chars > this.limits.maxRowChars) {
      return fileProblem(
        "too_much_text",
        `Row ${row} of the file holds ${formatCount(chars)} characters of text; a row may hold at most ` +
          `${formatCount(this.limits.maxRowChars)}. Delete the long columns you do not need (or save only ` +
          "the email column) and upload it again.",
      );
    }
    this.spent.textChars += chars;
    if (this.spent.textChars > this.limits.maxTextChars) {
      return fileProblem(
        "too_much_text",
        `The file holds more than ${formatCount(this.limits.maxTextChars)} characters of text (stopped at ` +
          `row ${row}), the most read from one file. Delete the columns you do not need (or save only the ` +
          "email column) and upload it again.",
      );
    }
    return null;
  }

  private decideHeader(first: string[]): ListFileProblem | null {
    const request = this.request;
    if (request.kind === "named") {
      const byName = first.findIndex((c) => sameName(c, request.name));
      if (byName >= 0) {
        this.header = first;
        this.fixedColumn = byName;
        return null;
      }
      if (request.position === null) {
        this.missingNamedColumn = true;
        return columnProblem("column_not_found", missingNameMessage(request.name, first));
      }
      if (request.position < 1) {
        return columnProblem(
          "column_not_found",
          `Column numbers start at 1; "${request.name}" is not a column.`,
        );
      }
      this.fixedColumn = request.position - 1;
    }
    const named = first.findIndex(isEmailHeaderName);
    const hasAddress = first.some((c) => addressOf(c) !== null);
    if (named >= 0 || (!hasAddress && this.headerRule === "full")) {
      // A first row without any address but with text is a header; if no later row holds an
      // address either, the file is refused as no_valid_emails anyway, so nothing rides on it.
      this.header = first;
      if (named >= 0) this.namedColumn = named;
    }
    return null;
  }

  private statsFor(column: number): ColumnStats {
    let s = this.stats[column];
    if (!s) {
      s = { addresses: 0, unique: new Set() };
      this.stats[column] = s;
    }
    return s;
  }

  /** The cell's address, each syntax check charged to the file's budget (~6 µs apiece). */
  private addressIn(cell: string | undefined): string | null | ListFileProblem {
    if (cell === undefined || !cell.includes("@")) return null;
    this.spent.addressChecks += 1;
    if (this.spent.addressChecks > this.limits.maxAddressChecks) {
      return fileProblem(
        "too_many_emails",
        `The file has more than ${formatCount(this.limits.maxAddressChecks)} cells holding an "@" in its ` +
          "columns, the most read from one file; name the email column (email_column) so that only it is read, " +
          "or upload only that column.",
      );
    }
    return addressOf(cell);
  }

  private count(cells: string[]): ListFileProblem | null {
    // Once an "Email" column holds an address it is the one chosen, whatever the others hold:
    // the other columns are no longer looked at.
    const named = this.namedColumn;
    const column =
      this.fixedColumn ?? (named !== null && (this.stats[named]?.addresses ?? 0) > 0 ? named : null);
    if (column !== null) {
      const email = this.addressIn(cells[column]);
      if (email === null) return null;
      if (typeof email !== "string") return email;
      const s = this.statsFor(column);
      s.addresses += 1;
      s.unique.add(email);
      return s.unique.size > this.limits.maxEmails ? this.tooMany() : null;
    }
    for (let i = 0; i < cells.length; i += 1) {
      const email = this.addressIn(cells[i]);
      if (email === null) continue;
      if (typeof email !== "string") return email;
      const s = this.statsFor(i);
      s.addresses += 1;
      s.unique.add(email);
      // With an "Email" header only that column can be chosen (unless it stays empty); without
      // one, a column holding more distinct addresses than the limit wins or ties for the win.
      if (s.unique.size > this.limits.maxEmails && (this.namedColumn === null || this.namedColumn === i)) {
        return this.tooMany();
      }
    }
    return null;
  }

  private tooMany(): ListFileProblem {
    return fileProblem(
      "too_many_emails",
      `The file has more than ${formatCount(this.limits.maxEmails)} addresses (stopped reading at ` +
        `${formatCount(this.rowCount)} rows); a list holds at most ${formatCount(this.limits.maxEmails)}. ` +
        "Split it into smaller files.",
    );
  }

  private chooseColumn(): number | ListFileProblem {
    if (this.fixedColumn !== null) {
      if (this.fixedColumn >= this.width) {
        return columnProblem(
          "column_not_found",
          `Column ${String(this.fixedColumn + 1)} does not exist; the file has ` +
            `${String(this.width)} column${this.width === 1 ? "" : "s"}.`,
        );
      }
      return this.fixedColumn;
    }
    if (this.namedColumn !== null && (this.stats[this.namedColumn]?.addresses ?? 0) > 0)
      return this.namedColumn;
    let best = -1;
    let bestCount = 0;
    this.stats.forEach((s, i) => {
      if (s.addresses > bestCount) {
        best = i;
        bestCount = s.addresses;
      }
    });
    return best >= 0 ? best : fileProblem("no_valid_emails", this.noAddressMessage());
  }

  private noAddressMessage(): string {
    if (this.rows.length === 0) {
      return this.header
        ? "The file has only a header row; add one email address per row below it."
        : "The file is empty; it needs one email address per row.";
    }
    return `No cell in the file's ${formatCount(this.rows.length)} rows is a valid email address.`;
  }

  /** Decides the column and builds the result once the reader reached the end. */
  finish(): ParsedTable | ListFileProblem {
    if (this.rows.length === 0) return fileProblem("no_valid_emails", this.noAddressMessage());
    const column = this.chooseColumn();
    if (typeof column !== "number") return column;
    const entries: ListEntry[] = [];
    const emails: string[] = [];
    const seen = new Set<string>();
    const skipped: SkippedCounts = { blank: this.blankRows, invalid: 0, duplicates: 0 };
    this.rows.forEach((cells, rowIndex) => {
      const raw = cells[column] ?? "";
      const email = entryAddressOf(raw);
      entries.push({ rowIndex, email, raw });
      if (email === null) {
        if (isBlank(raw)) skipped.blank += 1;
        else skipped.invalid += 1;
      } else if (seen.has(email)) {
        skipped.duplicates += 1;
      } else {
        seen.add(email);
        emails.push(email);
      }
    });
    if (emails.length === 0) {
      const name = this.header?.[column]?.trim() || `column ${String(column + 1)}`;
      return fileProblem(
        "no_valid_emails",
        `No valid email address in ${name} (${formatCount(skipped.invalid)} invalid, ` +
          `${formatCount(skipped.blank)} blank). Check that the right column was chosen.`,
      );
    }
    if (emails.length > this.limits.maxEmails) return this.tooMany();
    return {
      header: this.header,
      rows: this.rows,
      emailColumn: column,
      columnCount: this.width,
      entries,
      emails,
      skipped,
    };
  }
}

function missingNameMessage(name: string, first: readonly string[]): string {
  return first.some((c) => addressOf(c) !== null)
    ? `No column named "${name}": the file has no header row (its first row is: ${describeCells(first)}).`
    : `No column named "${name}"; the header row has: ${describeCells(first)}.`;
}
