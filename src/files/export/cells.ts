// Cell values of a result file and their neutralisation against formula injection.

/** A cell handed to a writer. Numbers and booleans stay typed in xlsx; csv/txt write their text. */
export type ExportCell = string | number | boolean | null | undefined | Date;

/** Header and rows of a result file. `rows` is consumed once, in order, as the output is read. */
export interface ExportInput {
  header: readonly string[];
  rows: AsyncIterable<readonly ExportCell[]> | Iterable<readonly ExportCell[]>;
  /**
   * csv/txt: prefix with `'` the text cells a spreadsheet would evaluate (isFormulaText). xlsx
   * ignores it: its text cells are inline strings, which no spreadsheet evaluates.
   */
  escapeFormulas: boolean;
}

// OWASP "CSV Injection": a cell starting with = @ TAB CR is read as a formula (NUL hides one in
// some parsers). The fullwidth ＝＠ are included because Excel in East Asian locales converts
// them on entry.
const ALWAYS_FORMULA = /^[=@\t\r\0\uFF1D\uFF20]/u;
const SIGN = /^[+\-\uFF0B\uFF0D]/u;
// After a leading + or -, what is only a number or a phone number: digits, signs and the
// separators phone numbers are written with (space, no-break space, . , / and parentheses), or
// a number in exponent notation. Without a letter, ':' or '!' there is no function, cell
// reference, DDE call or link, so at worst a spreadsheet does arithmetic on the user's own
// digits; escaping these put an apostrophe in front of every international phone number
// ("+1 555 6330", "+44 (0)20 7946 0958") and negative number ("-42") of a list.
const NUMBER_OR_PHONE = /^(?:[\d \u00A0.,()/+-]*|[\d.]*\d[eE][+-]?\d+)$/u;

/**
 * Whether a spreadsheet would run this text as a formula worth neutralising: it starts with
 * = @ TAB CR NUL, or with + or - followed by anything but a number or phone number.
 */
export function isFormulaText(text: string): boolean {
  if (ALWAYS_FORMULA.test(text)) return true;
  return SIGN.test(text) && !NUMBER_OR_PHONE.test(text.slice(1));
}

/** `'=1+1` for `=1+1`: the spreadsheet shows the text instead of computing it. */
export const neutraliseFormula = (text: string): string => (isFormulaText(text) ? `'${text}` : text);

/** Plain text of a cell for csv/txt. */
function cellToText(cell: ExportCell): string {
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

/**
 * The address cell of a list's row as the user wrote it (trimmed), for the downloads that give the
 * address back: the normalised form has its own column. Null when the row has no such cell.
 */
export function addressAsWritten(
  row: readonly string[] | null | undefined,
  emailColumn: number | null,
): string | null {
  if (!row || emailColumn === null) return null;
  return row[emailColumn]?.trim() || null;
}

/** Iterates sync and async row sources alike. */
export async function* eachRow(
  rows: AsyncIterable<readonly ExportCell[]> | Iterable<readonly ExportCell[]>,
): AsyncGenerator<readonly ExportCell[]> {
  for await (const row of rows) yield row;
}
