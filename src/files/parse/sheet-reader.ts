// SpreadsheetML cells → the text a person sees: shared strings, date styles and worksheet rows
// (ECMA-376 Part 1 §18.3 sheets, §18.4 shared strings, §18.8 styles), streamed row by row.
import { cellText } from "./cell-text.ts";
import type { ReadBudget } from "./read-budget.ts";
import { readXmlPart, XmlPartReader, type XmlHandler } from "./xml-reader.ts";
import { ZipRefusal, type ZipArchive, type ZipPart } from "./zip-guard.ts";

/** What a sheet's cells refer to: shared strings, which styles are dates, the date system. */
export interface CellContext {
  sharedStrings: readonly string[];
  /** Indexed by the cell's `s` (cellXfs index): true when its number format shows a date or time. */
  dateStyles: readonly boolean[];
  date1904: boolean;
}

// Excel's own limits: 32,767 characters in a cell, 16,384 columns (A…XFD). Rows and cells are
// counted against the file's ReadBudget (read-budget.ts), not per sheet.
const MAX_CELL_CHARS = 32_767;
const MAX_COLUMNS = 16_384;

// ECMA-376 §18.8.30: 14–22 and 45–47 are dates and times; 27–36 and 50–58 are the East Asian
// locales' date formats.
const BUILTIN_DATE_FORMATS = new Set([
  14, 15, 16, 17, 18, 19, 20, 21, 22, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 45, 46, 47, 50, 51, 52, 53, 54,
  55, 56, 57, 58,
]);

/** A custom number format shows a date when, outside [..] and "..", it has y m d h s or b (exceljs' rule). */
function isDateFormat(code: string): boolean {
  return /[ymdhMsb]/.test(code.replace(/\[[^\]]*]/g, "").replace(/"[^"]*"/g, ""));
}

/** ST_Xstring escapes: Excel writes a CR as `_x000D_` and a literal `_x` as `_x005F_x`. */
const decodeXstring = (s: string): string =>
  s.includes("_x")
    ? s.replace(/_x([0-9A-Fa-f]{4})_/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    : s;

const append = (to: string, text: string): string =>
  to.length >= MAX_CELL_CHARS ? to : (to + text).slice(0, MAX_CELL_CHARS);

/** Which cellXfs entries are dates. styles.xml is capped by maxStylesBytes before this reads it. */
export async function readDateStyles(zip: ZipArchive, part: ZipPart, budget: ReadBudget): Promise<boolean[]> {
  const formats = new Map<number, string>();
  const xfFormats: number[] = [];
  let inNumFmts = false;
  let inCellXfs = false;
  await readXmlPart(
    zip,
    part,
    {
      open(name, a) {
        if (name === "numFmts") inNumFmts = true;
        else if (name === "cellXfs") inCellXfs = true;
        else if (name === "numFmt" && inNumFmts) formats.set(Number(a.numFmtId), a.formatCode ?? "");
        else if (name === "xf" && inCellXfs) xfFormats.push(Number(a.numFmtId ?? 0));
      },
      close(name) {
        if (name === "numFmts") inNumFmts = false;
        else if (name === "cellXfs") inCellXfs = false;
      },
      text: () => undefined,
    },
    budget,
  );
  return xfFormats.map((id) => {
    const custom = formats.get(id);
    return custom === undefined ? BUILTIN_DATE_FORMATS.has(id) : isDateFormat(custom);
  });
}

/** Tracks `<t>` text inside `<si>` or `<is>`, leaving out phonetic runs (`<rPh>`). */
class RunText {
  value = "";
  private inT = false;
  private phonetic = 0;
  open(name: string): void {
    if (name === "t" && this.phonetic === 0) this.inT = true;
    else if (name === "rPh") this.phonetic += 1;
  }
  close(name: string): void {
    if (name === "t") this.inT = false;
    else if (name === "rPh") this.phonetic -= 1;
  }
  text(text: string): void {
    if (this.inT) this.value = append(this.value, text);
  }
}

/** All shared strings (rich text runs joined). sharedStrings.xml is capped by maxSharedStringsBytes. */
export async function readSharedStrings(
  zip: ZipArchive,
  part: ZipPart,
  budget: ReadBudget,
): Promise<string[]> {
  const strings: string[] = [];
  let item: RunText | null = null;
  await readXmlPart(
    zip,
    part,
    {
      open(name) {
        if (name === "si") item = new RunText();
        else item?.open(name);
      },
      close(name) {
        if (name === "si" && item) {
          strings.push(decodeXstring(item.value));
          item = null;
        } else item?.close(name);
      },
      text(text) {
        item?.text(text);
      },
    },
    budget,
  );
  return strings;
}

/** Column index (0-based) of a cell reference such as "B12"; null when there is none. */
function columnOf(ref: string | undefined): number | null {
  if (!ref) return null;
  let col = 0;
  let i = 0;
  for (; i < ref.length && i < 4; i += 1) {
    const c = ref.charCodeAt(i) | 0x20; // lower-case
    if (c < 0x61 || c > 0x7a) break;
    col = col * 26 + (c - 0x60);
  }
  return i === 0 ? null : col - 1;
}

const excelToDate = (serial: number, date1904: boolean): Date =>
  new Date(Math.round((serial - 25569 + (date1904 ? 1462 : 0)) * 86_400_000));

interface CellState {
  col: number;
  type: string;
  style: number;
  value: string | null;
  inline: RunText | null;
}

/**
 * The text of a cell from its type and cached value. A formula cell is shown by its cached
 * result like any other cell of its type (exceljs turned boolean and error results into
 * numbers); without a cached result it is empty.
 */
function cellValueText(cell: CellState, ctx: CellContext): string {
  const v = cell.value;
  switch (cell.type) {
    case "s":
      return v === null ? "" : (ctx.sharedStrings[Number.parseInt(v, 10)] ?? "");
    case "inlineStr":
      return decodeXstring(cell.inline?.value ?? v ?? "");
    case "str":
      return decodeXstring(v ?? "");
    case "b":
      return v === null ? "" : cellText(v.trim() !== "0" && v.trim().toLowerCase() !== "false");
    case "e":
      return v ?? "";
    case "d":
      return v === null ? "" : cellText(new Date(v));
    default: {
      if (v === null) return "";
      const n = Number.parseFloat(v);
      return cellText(ctx.dateStyles[cell.style] && Number.isFinite(n) ? excelToDate(n, ctx.date1904) : n);
    }
  }
}

/** Builds rows from a worksheet's events; finished rows wait in `ready` until they are taken. */
class RowCollector implements XmlHandler {
  readonly ready: string[][] = [];
  private inSheetData = false;
  private row: string[] | null = null;
  private nextCol = 0;
  private cell: CellState | null = null;
  private inValue = false;

  constructor(
    private readonly sheetName: string,
    private readonly ctx: CellContext,
    private readonly budget: ReadBudget,
  ) {}

  open(name: string, a: Readonly<Record<string, string>>): void {
    const cell = this.cell;
    if (cell) {
      if (name === "v") {
        this.inValue = true;
        cell.value = "";
      } else if (name === "is") cell.inline = new RunText();
      else cell.inline?.open(name);
    } else if (name === "c" && this.row) {
      const col = columnOf(a.r) ?? this.nextCol;
      if (col >= MAX_COLUMNS) {
        throw new ZipRefusal(
          `Sheet "${this.sheetName}" has a cell beyond column XFD, the last one Excel has; save the workbook again in Excel.`,
        );
      }
      this.cell = { col, type: a.t ?? "n", style: Number(a.s ?? 0), value: null, inline: null };
    } else if (name === "row" && this.inSheetData) {
      this.row = [];
      this.nextCol = 0;
    } else if (name === "sheetData") this.inSheetData = true;
  }

  close(name: string): void {
    const cell = this.cell;
    if (cell) {
      if (name === "v") this.inValue = false;
      else if (name === "c") this.finishCell(cell);
      else cell.inline?.close(name);
    } else if (name === "row" && this.row) {
      this.ready.push(this.finishRow(this.row));
      this.row = null;
    } else if (name === "sheetData") this.inSheetData = false;
  }

  text(text: string): void {
    if (!this.cell) return;
    if (this.inValue) this.cell.value = append(this.cell.value ?? "", text);
    else this.cell.inline?.text(text);
  }

  private finishCell(cell: CellState): void {
    this.cell = null;
    this.inValue = false;
    this.nextCol = cell.col + 1;
    const text = cellValueText(cell, this.ctx);
    if (text !== "" && this.row) this.row[cell.col] = text;
  }

  private finishRow(row: string[]): string[] {
    let end = row.length;
    while (end > 0 && (row[end - 1] ?? "").trim() === "") end -= 1; // styled but empty trailing cells
    this.budget.addRow(end);
    const cells = new Array<string>(end);
    for (let i = 0; i < end; i += 1) cells[i] = row[i] ?? "";
    return cells;
  }
}

/**
 * The rows of one worksheet, in document order, as cell texts with trailing blank cells cut.
 * Only `<row>` elements count (gaps in row numbers are not filled), as exceljs read them. Every
 * row is charged to the file's `budget` before its cells are allocated. Stopping the iteration
 * stops the inflation.
 */
export async function* readSheetRows(
  zip: ZipArchive,
  part: ZipPart,
  sheetName: string,
  ctx: CellContext,
  budget: ReadBudget,
): AsyncGenerator<string[]> {
  budget.openSheet();
  const rows = new RowCollector(sheetName, ctx, budget);
  const reader = new XmlPartReader(part.name, rows, budget);
  for await (const chunk of zip.inflate(part)) {
    reader.write(chunk);
    for (const row of rows.ready) yield row;
    rows.ready.length = 0;
  }
  reader.end();
  yield* rows.ready;
}
