// The one entry point of list parsing: name → format, bytes → checks → rows → email column.
import { decodeText, type TextEncodingName } from "./decode-text.ts";
import type { Delimiter } from "./delimiter.ts";
import { columnProblem, fileProblem, sheetProblem, type ListFileProblem } from "./problems.ts";
import { readCsv, readTxt } from "./read-text.ts";
import { readXlsx } from "./read-xlsx.ts";
import {
  describeKind,
  formatFromFilename,
  isEncryptedOoxml,
  sniffContent,
  type ListFormat,
} from "./sniff.ts";
import {
  DEFAULT_MAX_COLUMNS,
  DEFAULT_MAX_ROW_CHARS,
  DEFAULT_MAX_TEXT_CHARS,
  parseColumnRequest,
  type ParsedTable,
  type TableLimits,
} from "./table.ts";
import { DEFAULT_ZIP_LIMITS, type ZipLimits } from "./zip-guard.ts";

export interface ParseListInput {
  /** Original file name; only its extension is used. */
  filename: string;
  data: Buffer;
  /** The `email_column` form field: a header name or a 1-based column number; csv/xlsx only. */
  emailColumn?: string | null;
  /** The `sheet` form field: the workbook's sheet holding the list (xlsx only); blank: chosen (sheet-choice.ts). */
  sheet?: string | null;
  /** More distinct addresses than this → too_many_emails (the spec's 10,000). */
  maxEmails: number;
  /** More non-blank rows than this → too_many_rows. Default: maxEmails + max(maxEmails, 10,000). */
  maxRows?: number;
  /** More blank rows than this → too_many_rows. Default: the same as maxRows. */
  maxBlankRows?: number;
  /** A row with more columns than this (trailing blank cells cut) → too_many_columns. Default 1,000. */
  maxColumns?: number;
  /** Cells holding an "@" checked per file → too_many_emails. Default: 10 × maxRows. */
  maxAddressChecks?: number;
  /** Characters of cell text in one row → too_much_text. Default DEFAULT_MAX_ROW_CHARS. */
  maxRowChars?: number;
  /** Characters of cell text in the whole file → too_much_text. Default DEFAULT_MAX_TEXT_CHARS. */
  maxTextChars?: number;
  /** xlsx zip limits; defaults in DEFAULT_ZIP_LIMITS. */
  zipLimits?: Partial<ZipLimits>;
}

/** A parsed list: the original table plus the addresses found in its email column. */
export interface ParsedList extends ParsedTable {
  format: ListFormat;
  /** csv/txt: the encoding the text was decoded with. */
  encoding?: TextEncodingName;
  /** csv: the field delimiter. */
  delimiter?: Delimiter;
  /** xlsx: the sheet the list was read from. */
  sheetName?: string;
}

export type ParseListResult = { ok: true; list: ParsedList } | { ok: false; problem: ListFileProblem };

const refuse = (problem: ListFileProblem): ParseListResult => ({ ok: false, problem });

function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf(".");
  return dot >= 0 ? filename.slice(dot).trim().slice(0, 20) : "";
}

/** Parses an uploaded txt/csv/xlsx list. Refusals are values; only bugs throw. */
export async function parseListFile(input: ParseListInput): Promise<ParseListResult> {
  const format = formatFromFilename(input.filename);
  if (!format) {
    const ext = extensionOf(input.filename);
    return refuse(
      fileProblem(
        "unsupported_format",
        `${ext ? `Files ending in "${ext}" are not supported` : "The file name has no extension"}; upload a .csv, .txt or .xlsx file.`,
      ),
    );
  }
  const request = parseColumnRequest(input.emailColumn);
  if (format === "txt" && request.kind !== "auto") {
    return refuse(
      columnProblem(
        "column_not_supported",
        "email_column applies to .csv and .xlsx files; a .txt file has one address per line, so leave it empty.",
      ),
    );
  }
  const sheet = input.sheet?.trim() ? input.sheet : null;
  if (format !== "xlsx" && sheet !== null) {
    return refuse(
      sheetProblem(
        "sheet_not_supported",
        `sheet applies to .xlsx workbooks; a .${format} file has no sheets, so leave it empty.`,
      ),
    );
  }
  // The xlsx reader needs ~3 µs per row, empty or not: 20,000 rows is ~60 ms.
  const maxRows = input.maxRows ?? input.maxEmails + Math.max(input.maxEmails, 10_000);
  const limits: TableLimits = {
    maxEmails: input.maxEmails,
    maxRows,
    maxBlankRows: input.maxBlankRows ?? maxRows,
    maxColumns: input.maxColumns ?? DEFAULT_MAX_COLUMNS,
    // ~6 µs a check: 200,000 is ~1.3 s. A list names its column, or has an "Email" header, or
    // holds its addresses in a few columns; only a file of addresses everywhere gets near it.
    maxAddressChecks: input.maxAddressChecks ?? 10 * maxRows,
    maxRowChars: input.maxRowChars ?? DEFAULT_MAX_ROW_CHARS,
    maxTextChars: input.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS,
  };
  const kind = sniffContent(input.data);

  if (format === "xlsx") {
    if (input.data.length === 0) return refuse(fileProblem("invalid_file", "The file is empty."));
    if (kind === "cfb") {
      return refuse(
        fileProblem(
          "invalid_file",
          isEncryptedOoxml(input.data)
            ? "Password-protected workbooks are not supported; remove the password in Excel (File → Info → Protect Workbook) and upload it again."
            : "This is an old Excel .xls workbook renamed .xlsx; open it in Excel and save it as .xlsx or .csv.",
        ),
      );
    }
    if (kind !== "zip") {
      const looksText = kind === "other" && decodeText(input.data).ok;
      return refuse(
        fileProblem(
          "content_mismatch",
          looksText
            ? "The file's name ends in .xlsx but it contains text, not a workbook; if it is a CSV, rename it to .csv."
            : `The file's name ends in .xlsx but it is ${kind === "other" ? "not an Excel workbook" : describeKind(kind)}.`,
        ),
      );
    }
    const zipLimits = { ...DEFAULT_ZIP_LIMITS, ...input.zipLimits };
    const result = await readXlsx(input.data, request, limits, zipLimits, sheet);
    return result.ok ? { ok: true, list: { format, ...result.table, sheetName: result.sheetName } } : result;
  }

  if (kind !== "other") {
    return refuse(
      fileProblem(
        "content_mismatch",
        `The file's name ends in .${format} but it is ${describeKind(kind)}; ` +
          (kind === "zip" || kind === "cfb"
            ? "save it as CSV from your spreadsheet program, or upload it with its real extension (.xlsx)."
            : `upload a .${format} text file.`),
      ),
    );
  }
  const decoded = decodeText(input.data);
  if (!decoded.ok) {
    return refuse(
      fileProblem(
        "content_mismatch",
        `The file's name ends in .${format} but it is a binary file, not text; upload a .csv, .txt or .xlsx file.`,
      ),
    );
  }
  if (format === "txt") {
    const result = readTxt(decoded.text, limits);
    if (result.ok) return { ok: true, list: { format, ...result.table, encoding: decoded.encoding } };
    if (result.problem.code === "no_valid_emails" && /[,;\t]/.test(decoded.text.slice(0, 4096))) {
      const hint =
        " A .txt file has one address per line; a table with several columns must be uploaded as .csv.";
      return refuse({ ...result.problem, message: result.problem.message + hint });
    }
    return result;
  }
  const result = await readCsv(decoded.text, request, limits);
  return result.ok
    ? { ok: true, list: { format, ...result.table, encoding: decoded.encoding, delimiter: result.delimiter } }
    : { ok: false, problem: result.problem };
}
