// csv and txt result writers: rows in, a byte stream out, with backpressure end to end (a slow
// client pauses the row source, e.g. a database cursor).
import { Readable, pipeline } from "node:stream";
import { stringify } from "csv-stringify";
import { eachRow, exportText, type ExportInput } from "./cells.ts";

export interface CsvExportOptions {
  /**
   * Start with a UTF-8 BOM (default true): Excel, which most list owners open results with,
   * reads a BOM-less csv in the ANSI code page and garbles every accented name.
   */
  bom?: boolean;
}

/** csv (RFC 4180: CRLF, quotes where needed) with a header row. */
export function writeCsv(input: ExportInput & CsvExportOptions): Readable {
  const { header, rows, escapeFormulas } = input;
  async function* records(): AsyncGenerator<string[]> {
    yield header.map((h) => exportText(h, escapeFormulas));
    for await (const row of eachRow(rows)) yield row.map((c) => exportText(c, escapeFormulas));
  }
  // csv-stringify only quotes fields holding its own record delimiter (CRLF); a bare LF or CR in
  // a cell must be quoted too or every reader splits the row there.
  const stringifier = stringify({
    bom: input.bom ?? true,
    record_delimiter: "windows",
    quoted_match: /[\r\n]/,
  });
  // pipeline() forwards a failing row source to the stringifier as an error (so the download
  // aborts instead of ending short), and a consumer that goes away stops the row source.
  pipeline(Readable.from(records()), stringifier, () => undefined);
  return stringifier;
}

/**
 * txt: one row per line, cells joined by "," (for results: `email,status`), no header line, as
 * DESIGN §5 says. Line breaks inside a cell become spaces so one line stays one row.
 */
export function writeTxt(input: ExportInput & { includeHeader?: boolean }): Readable {
  const { header, rows, escapeFormulas } = input;
  const line = (cells: readonly string[]): string =>
    `${cells.map((c) => c.replace(/[\r\n]+/g, " ")).join(",")}\n`;
  async function* lines(): AsyncGenerator<string> {
    if (input.includeHeader) yield line(header.map((h) => exportText(h, escapeFormulas)));
    for await (const row of eachRow(rows)) yield line(row.map((c) => exportText(c, escapeFormulas)));
  }
  return Readable.from(lines(), { objectMode: false, encoding: "utf8" });
}
