// The list's worksheet with the result columns appended: the user's XML spliced, not rewritten,
// so every cell keeps its value, type, style and formula (docs/api.md, "An xlsx upload comes back as your workbook"). What changes:
// result cells at the end of each row, their <col> widths, the <dimension>, and cells that hold
// nothing (style only) at or past the first result column, which are dropped so cells stay in
// column order. A filtered download also takes rows out: the kept rows are renumbered 1, 2, 3 …,
// the references to rows (merged cells, links, validations, conditional formats, the filter)
// follow them, and formulas, whose references would now point at other rows, keep their last
// computed value only.
import { columnLetter, parseCellRef, RowRemap } from "./cell-refs.ts";
import type { ExportCell } from "./cells.ts";
import { cellTextXml } from "./write-xlsx.ts";
import { attributeOf, withAttribute, xmlTags, type XmlTag } from "./xml-tags.ts";

/** What one `<row>` of the sheet becomes. */
export type RowFate = { keep: false } | { keep: true; append: readonly ExportCell[] };

export interface SheetPatchPlan {
  /** One per `<row>` element of the sheet, in document order. */
  rows: readonly RowFate[];
  /** The first result column (1-based); cells at or past it that hold nothing are dropped. */
  firstResultColumn: number;
  /** Widths of the result columns, in characters. */
  resultWidths: readonly number[];
  /** Rows were taken out (a download of some statuses only). */
  filtered: boolean;
}

/** What the patch needs to know of a sheet before rewriting it. */
export interface SheetSurvey {
  /** Each `<row>` element's number (its `r`, or one past the row before). */
  rowNumbers: number[];
  /** The rightmost column (1-based) of a cell holding a value or a formula; 0 when none. */
  lastValueColumn: number;
  /** The rightmost column a merged range reaches; 0 when none (result cells may not land in one). */
  lastMergedColumn: number;
}

const VALUE_CHILDREN = new Set(["v", "is", "f"]);

/** The last column (1-based) of a range such as "B2:D4"; 0 when it names none. */
export function lastColumnOf(ref: string | undefined): number {
  const end = (ref ?? "").split(":").pop() ?? "";
  return parseCellRef(end)?.column ?? 0;
}

export function surveySheet(xml: string): SheetSurvey {
  const rowNumbers: number[] = [];
  let lastValueColumn = 0;
  let lastMergedColumn = 0;
  let nextColumn = 1;
  let cellColumn = 0;
  for (const tag of xmlTags(xml)) {
    if (tag.kind === "close" || tag.kind === "other") continue;
    if (tag.name === "row") {
      const r = Number(attributeOf(xml.slice(tag.start, tag.end), "r"));
      rowNumbers.push(Number.isInteger(r) && r > 0 ? r : (rowNumbers.at(-1) ?? 0) + 1);
      nextColumn = 1;
    } else if (tag.name === "c") {
      cellColumn = parseCellRef(attributeOf(xml.slice(tag.start, tag.end), "r") ?? "")?.column ?? nextColumn;
      nextColumn = cellColumn + 1;
    } else if (VALUE_CHILDREN.has(tag.name) && cellColumn > lastValueColumn) lastValueColumn = cellColumn;
    else if (tag.name === "mergeCell")
      lastMergedColumn = Math.max(
        lastMergedColumn,
        lastColumnOf(attributeOf(xml.slice(tag.start, tag.end), "ref")),
      );
  }
  return { rowNumbers, lastValueColumn, lastMergedColumn };
}

/** One result cell; text as an inline string, which no spreadsheet evaluates. */
function resultCellXml(prefix: string, ref: string, cell: ExportCell): string {
  if (cell === null || cell === undefined || cell === "") return "";
  if (typeof cell === "number")
    return Number.isFinite(cell)
      ? `<${prefix}c r="${ref}"><${prefix}v>${String(cell)}</${prefix}v></${prefix}c>`
      : "";
  if (typeof cell === "boolean")
    return `<${prefix}c r="${ref}" t="b"><${prefix}v>${cell ? "1" : "0"}</${prefix}v></${prefix}c>`;
  const text = cellTextXml(typeof cell === "string" ? cell : cell.toISOString());
  return `<${prefix}c r="${ref}" t="inlineStr"><${prefix}is><${prefix}t xml:space="preserve">${text}</${prefix}t></${prefix}is></${prefix}c>`;
}

// Elements after sheetData that refer to rows, in a filtered download: remapped, or dropped with
// their wrapper when none of their rows is left (an empty <mergeCells> is invalid).
const WRAPPERS = new Set(["mergeCells", "hyperlinks", "dataValidations", "ignoredErrors", "protectedRanges"]);
const REF_ELEMENTS = new Set(["mergeCell", "hyperlink", "autoFilter"]);
const DROPPED_WHEN_FILTERED = new Set(["rowBreaks", "selection"]);

/** The tags whose text a download without filtering rewrites or reads. */
const REWRITTEN = new Set(["dimension", "cols", "col", "sheetData", "row", "c"]);

/** Rewrites one worksheet part by splicing between its tags. */
class SheetSplicer {
  private readonly out: string[] = [];
  private copied = 0;
  private skipping: { name: string; depth: number } | null = null;
  private inSheetData = false;
  private rowOrdinal = -1;
  private row: { number: number; append: readonly ExportCell[]; prefix: string } | null = null;
  private nextColumn = 1;
  private inCell = false;
  private wrapper: { at: number; kept: number } | null = null;
  private sawCols = false;

  constructor(
    private readonly xml: string,
    private readonly plan: SheetPatchPlan,
    private readonly survey: SheetSurvey,
    private readonly remap: RowRemap | null,
  ) {}

  run(): string {
    for (const tag of xmlTags(this.xml)) {
      if (this.skipping) this.skipTag(tag);
      // Most tags of a sheet are <v>, <is> and <t>: their text is needed only to remap rows.
      else if (this.remap || REWRITTEN.has(tag.name)) this.visit(tag, this.xml.slice(tag.start, tag.end));
    }
    this.out.push(this.xml.slice(this.copied));
    return this.out.join("");
  }

  private replace(tag: XmlTag, text: string): void {
    this.out.push(this.xml.slice(this.copied, tag.start), text);
    this.copied = tag.end;
  }

  /** Drops the element this tag opens (with its content), or the empty tag itself. */
  private drop(tag: XmlTag): void {
    this.replace(tag, "");
    if (tag.kind === "open") this.skipping = { name: tag.name, depth: 1 };
  }

  private skipTag(tag: XmlTag): void {
    const s = this.skipping!;
    if (tag.name === s.name && tag.kind === "open") s.depth += 1;
    if (tag.name === s.name && tag.kind === "close") s.depth -= 1;
    if (s.depth === 0) this.skipping = null;
    this.copied = tag.end;
  }

  private visit(tag: XmlTag, text: string): void {
    if (tag.kind === "other") return;
    if (this.inSheetData) return this.visitSheetData(tag, text);
    if (tag.name === "dimension" && tag.kind !== "close") return this.replace(tag, this.dimension(text));
    if (tag.name === "cols") return this.visitCols(tag, text);
    if (tag.name === "col" && tag.kind !== "close") return this.visitCol(tag, text);
    if (tag.name === "sheetData" && tag.kind !== "close") {
      if (!this.sawCols)
        this.replace(tag, `<${tag.prefix}cols>${this.resultCols(tag.prefix)}</${tag.prefix}cols>${text}`);
      this.inSheetData = tag.kind === "open";
      return;
    }
    if (this.remap) this.visitRowReference(tag, text, this.remap);
  }

  private dimension(text: string): string {
    const ref = attributeOf(text, "ref") ?? "";
    const [from = "", to = from] = ref.split(":");
    const start = parseCellRef(from);
    const end = parseCellRef(to);
    if (!start || !end || end.row === null) return text;
    const lastColumn = this.plan.firstResultColumn + this.plan.resultWidths.length - 1;
    const lastRow = this.remap ? Math.max(1, this.remap.lastRow) : end.row;
    return withAttribute(text, "ref", `${from}:${columnLetter(lastColumn)}${String(lastRow)}`);
  }

  private resultCols(prefix: string): string {
    return this.plan.resultWidths
      .map((width, i) => {
        const n = String(this.plan.firstResultColumn + i);
        return `<${prefix}col min="${n}" max="${n}" width="${width.toFixed(1)}" customWidth="1"/>`;
      })
      .join("");
  }

  private visitCols(tag: XmlTag, text: string): void {
    this.sawCols = true;
    if (tag.kind === "close") this.replace(tag, this.resultCols(tag.prefix) + text);
    else if (tag.kind === "empty")
      this.replace(tag, `${text.slice(0, -2).trimEnd()}>${this.resultCols(tag.prefix)}</${tag.prefix}cols>`);
  }

  /** A column range reaching into the result columns is cut short of them (ranges may not overlap). */
  private visitCol(tag: XmlTag, text: string): void {
    const first = this.plan.firstResultColumn;
    const min = Number(attributeOf(text, "min"));
    const max = Number(attributeOf(text, "max"));
    if (min >= first) this.drop(tag);
    else if (max >= first) this.replace(tag, withAttribute(text, "max", String(first - 1)));
  }

  private visitSheetData(tag: XmlTag, text: string): void {
    if (tag.name === "sheetData" && tag.kind === "close") {
      this.inSheetData = false;
    } else if (tag.name === "row") {
      if (tag.kind === "close") this.closeRow(tag);
      else this.openRow(tag, text);
    } else if (tag.name === "c" && tag.kind !== "close") this.openCell(tag, text);
    else if (tag.name === "c") this.inCell = false;
    else if (tag.name === "f" && this.inCell && this.remap && tag.kind !== "close") this.drop(tag);
  }

  private openRow(tag: XmlTag, text: string): void {
    this.rowOrdinal += 1;
    const fate = this.plan.rows[this.rowOrdinal] ?? { keep: true, append: [] };
    const old = this.survey.rowNumbers[this.rowOrdinal] ?? this.rowOrdinal + 1;
    const number = this.remap?.rowOf(old) ?? old;
    if (!fate.keep || number === null) return this.drop(tag);
    this.nextColumn = 1;
    let rewritten = withAttribute(withAttribute(text, "spans", null), "r", String(number));
    const row = { number, append: fate.append, prefix: tag.prefix };
    const cells = tag.kind === "empty" ? this.appendedCells(row) : "";
    if (cells !== "") rewritten = `${rewritten.slice(0, -2).trimEnd()}>${cells}</${tag.prefix}row>`;
    if (tag.kind === "open") this.row = row;
    this.replace(tag, rewritten);
  }

  private closeRow(tag: XmlTag): void {
    if (this.row) this.replace(tag, this.appendedCells(this.row) + this.xml.slice(tag.start, tag.end));
    this.row = null;
  }

  private appendedCells(row: { number: number; append: readonly ExportCell[]; prefix: string }): string {
    return row.append
      .map((cell, i) =>
        resultCellXml(
          row.prefix,
          `${columnLetter(this.plan.firstResultColumn + i)}${String(row.number)}`,
          cell,
        ),
      )
      .join("");
  }

  private openCell(tag: XmlTag, text: string): void {
    const ref = attributeOf(text, "r");
    const column = parseCellRef(ref ?? "")?.column ?? this.nextColumn;
    this.nextColumn = column + 1;
    if (column >= this.plan.firstResultColumn) return this.drop(tag); // style only (surveySheet)
    this.inCell = tag.kind === "open";
    if (this.remap && ref !== undefined && this.row)
      this.replace(tag, withAttribute(text, "r", `${columnLetter(column)}${String(this.row.number)}`));
  }

  /** After sheetData, in a filtered download: references to rows follow the kept rows. */
  private visitRowReference(tag: XmlTag, text: string, remap: RowRemap): void {
    if (DROPPED_WHEN_FILTERED.has(tag.name) && tag.kind !== "close") return this.drop(tag);
    if (WRAPPERS.has(tag.name)) return this.visitWrapper(tag, text);
    const attribute = REF_ELEMENTS.has(tag.name)
      ? "ref"
      : attributeOf(text, "sqref") !== undefined
        ? "sqref"
        : null;
    if (tag.kind === "close" || attribute === null) return;
    const value = attributeOf(text, attribute) ?? "";
    const moved = attribute === "ref" ? remap.range(value) : remap.sqref(value);
    if (moved === null) return this.drop(tag);
    this.replace(tag, withAttribute(text, attribute, moved));
    if (this.wrapper) this.wrapper.kept += 1;
  }

  private visitWrapper(tag: XmlTag, text: string): void {
    if (tag.kind === "empty") return this.drop(tag);
    if (tag.kind === "open") {
      this.replace(tag, "");
      this.wrapper = { at: this.out.length, kept: 0 };
      this.out.push(text);
      return;
    }
    const wrapper = this.wrapper;
    this.wrapper = null;
    if (!wrapper) return;
    this.out.push(this.xml.slice(this.copied, tag.start));
    this.copied = tag.start;
    if (wrapper.kept === 0) {
      this.out.length = wrapper.at;
      this.copied = tag.end;
    } else if (attributeOf(this.out[wrapper.at]!, "count") !== undefined) {
      this.out[wrapper.at] = withAttribute(this.out[wrapper.at]!, "count", String(wrapper.kept));
    }
  }
}

/** Where the kept rows go in a filtered download; null when no row is taken out. */
export function rowRemapOf(plan: SheetPatchPlan, survey: SheetSurvey): RowRemap | null {
  if (!plan.filtered) return null;
  const kept = survey.rowNumbers.filter((_, i) => plan.rows[i]?.keep !== false);
  return new RowRemap([...new Set(kept)].sort((a, b) => a - b));
}

/** The worksheet with the plan applied. `survey` is surveySheet of the same text. */
export function patchSheet(xml: string, plan: SheetPatchPlan, survey: SheetSurvey): string {
  return new SheetSplicer(xml, plan, survey, rowRemapOf(plan, survey)).run();
}
