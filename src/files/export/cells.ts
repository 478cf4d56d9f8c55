// Cell values of a result file and their neutralisation against formula injection.

/** A cell handed to a writer. Numbers and booleans stay typed in xlsx; csv/txt write their text. */
export type ExportCell = string | number | boolean | null | undefined | Date;

/** Header and rows of a result file. `rows` is consumed once, in order, as the output is read. */
export interface ExportInput {
  header: readonly string[];
  rows: AsyncIterable<readonly ExportCell[]> | Iterable<readonly ExportCell[]>;
  /** Prefix cells that a spreadsheet would run as a formula with `'` (off only for machine use). */
  escapeFormulas: boolean;
}

// OWASP "CSV Injection": = + - @ TAB CR start a formula (and NUL hides one in some parsers).
// The fullwidth ＝＋－＠ are included because Excel in East Asian locales converts them on entry.
const FORMULA_START = /^[=+\-@\t\r\0\uFF1D\uFF0B\uFF0D\uFF20]/u;

/** `'=1+1` for `=1+1`: the spreadsheet shows the text instead of computing it. */
export const neutraliseFormula = (text: string): string => (FORMULA_START.test(text) ? `'${text}` : text);

/** Plain text of a cell for csv/txt. */
export function cellToText(cell: ExportCell): string {
  if (cell === null || cell === undefined) return "";
  if (typeof cell === "string") return cell;
  if (typeof cell === "number") return Number.isFinite(cell) ? String(cell) : "";
  if (typeof cell === "boolean") return cell ? "true" : "false";
  return Number.isNaN(cell.getTime()) ? "" : cell.toISOString();
}

/** Text of a cell as written: typed values are never formulas, strings are escaped when asked. */
export function exportText(cell: ExportCell, escapeFormulas: boolean): string {
  const text = cellToText(cell);
  return escapeFormulas && typeof cell === "string" ? neutraliseFormula(text) : text;
}

/** Iterates sync and async row sources alike. */
export async function* eachRow(
  rows: AsyncIterable<readonly ExportCell[]> | Iterable<readonly ExportCell[]>,
): AsyncGenerator<readonly ExportCell[]> {
  for await (const row of rows) yield row;
}
