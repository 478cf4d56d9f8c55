// The xlsx download of an xlsx upload: the user's own workbook, every part as it was, with the
// result columns appended to the sheet the list was read from (sheet-patch.ts). Typed cells,
// number formats, formulas, styles, widths and the other sheets come back as the user saved
// them; a csv-shaped rewrite would have turned them all into text (docs/api.md, "An xlsx upload comes back as your workbook").
import type { Readable } from "node:stream";
import yazl from "yazl";
import { cellContextOf } from "../parse/read-xlsx.ts";
import { ReadBudget } from "../parse/read-budget.ts";
import { readSheetRows } from "../parse/sheet-reader.ts";
import {
  dirOf,
  planWorkbook,
  readRels,
  relsPathOf,
  type SheetPart,
  type WorkbookPlan,
} from "../parse/workbook-package.ts";
import { DEFAULT_ZIP_LIMITS, ZipArchive, type ZipPart } from "../parse/zip-guard.ts";
import type { RowRemap } from "./cell-refs.ts";
import type { ExportCell } from "./cells.ts";
import {
  lastColumnOf,
  patchSheet,
  rowRemapOf,
  surveySheet,
  type RowFate,
  type SheetPatchPlan,
} from "./sheet-patch.ts";
import { attributeOf, withAttribute, xmlTags } from "./xml-tags.ts";

export interface WorkbookPatchInput {
  /** The workbook as uploaded. */
  original: Buffer;
  /** The sheet the list was read from. */
  sheetName: string;
  /** The names of the result columns, written on the header row; null when the list had no header row. */
  resultHeader: readonly string[] | null;
  /** Columns of the result cells (the header's or the rows'). */
  resultWidth: number;
  /** Columns of the list (its widest real header or cell): result columns start after them. */
  listWidth: number;
  /** One per data row of the list, in order: its result cells, or null when the download leaves it out. */
  dataRows: ReadonlyArray<readonly ExportCell[] | null>;
  /** Only some rows are wanted: the others, and blank rows, are taken out. */
  filtered: boolean;
}

/** The stored workbook and the stored rows disagree: the caller writes a plain workbook instead. */
class WorkbookMismatch extends Error {}

// Reading back a workbook the upload already read under the same limits; the time limit is the
// only one that depends on the machine's load, so it gets room.
const LIMITS = { ...DEFAULT_ZIP_LIMITS, maxReadMs: 60_000 };
const MAX_WIDTH = 60;

/** What each `<row>` becomes: the header gets the column names, data rows their results. */
async function rowFates(zip: ZipArchive, plan: WorkbookPlan, sheet: SheetPart, input: WorkbookPatchInput) {
  const budget = new ReadBudget(
    {
      maxSheets: 1,
      maxRows: Number.MAX_SAFE_INTEGER,
      maxCells: LIMITS.maxCells,
      maxElements: LIMITS.maxElements,
    },
    plan.sheets.length,
  );
  const ctx = await cellContextOf(zip, plan, budget);
  const fates: RowFate[] = [];
  let headerPending = input.resultHeader !== null;
  let next = 0;
  for await (const cells of readSheetRows(zip, sheet.part, sheet.name, ctx, budget)) {
    if (cells.length === 0) fates.push(input.filtered ? { keep: false } : { keep: true, append: [] });
    else if (headerPending) {
      headerPending = false;
      fates.push({ keep: true, append: input.resultHeader ?? [] });
    } else {
      const result = input.dataRows[next];
      next += 1;
      fates.push(result ? { keep: true, append: result } : { keep: false });
    }
  }
  if (next !== input.dataRows.length)
    throw new WorkbookMismatch(
      `the sheet has ${String(next)} data rows, the upload ${String(input.dataRows.length)}`,
    );
  return fates;
}

/** Widths of the result columns: their longest text, within 8 to 60 characters. */
function resultWidths(input: WorkbookPatchInput): number[] {
  const widths = Array.from({ length: input.resultWidth }, (_, i) => input.resultHeader?.[i]?.length ?? 0);
  for (const row of input.dataRows)
    row?.forEach((cell, i) => {
      const length = cell === null || cell === undefined ? 0 : String(cell).length;
      if (length > (widths[i] ?? 0)) widths[i] = length;
    });
  return widths.map((w) => Math.min(MAX_WIDTH, Math.max(8, w + 2)));
}

const text = async (zip: ZipArchive, part: ZipPart): Promise<string> =>
  (await zip.read(part, LIMITS.maxTotalUncompressedBytes)).toString("utf8");

/** A part's text with the ref-bearing tags of a table (table, autoFilter, sortState) following the kept rows. */
function remapTable(xml: string, remap: RowRemap): string {
  let out = "";
  let copied = 0;
  for (const tag of xmlTags(xml)) {
    if (tag.kind === "close" || tag.kind === "other") continue;
    const source = xml.slice(tag.start, tag.end);
    const ref = attributeOf(source, "ref");
    const moved = ref === undefined ? null : remap.range(ref);
    if (moved === null) continue;
    out += xml.slice(copied, tag.start) + withAttribute(source, "ref", moved);
    copied = tag.end;
  }
  return out + xml.slice(copied);
}

/** `xml` without the empty elements (`<Relationship …/>`, `<Override …/>`) for which `drop` holds. */
function withoutElements(xml: string, name: string, drop: (tag: string) => boolean): string {
  let out = "";
  let copied = 0;
  for (const tag of xmlTags(xml)) {
    if (tag.kind !== "empty" || tag.name !== name || !drop(xml.slice(tag.start, tag.end))) continue;
    out += xml.slice(copied, tag.start);
    copied = tag.end;
  }
  return out + xml.slice(copied);
}

/**
 * Parts whose text changes besides the sheet when rows are taken out: the sheet's tables follow
 * the kept rows, and the calculation chain, which lists formula cells that no longer have one, is
 * dropped with its relationship and content type (Excel rebuilds it).
 */
async function filteredParts(
  zip: ZipArchive,
  plan: WorkbookPlan,
  tables: ReadonlyArray<{ name: string; xml: string }>,
  remap: RowRemap,
): Promise<{ changed: Map<string, string>; dropped: Set<string> }> {
  const changed = new Map<string, string>();
  const dropped = new Set<string>();
  for (const table of tables) changed.set(table.name, remapTable(table.xml, remap));
  const bookRelsPath = relsPathOf(plan.workbookPath);
  const calcChain = [...(await readRels(zip, bookRelsPath, dirOf(plan.workbookPath))).values()].find((r) =>
    r.type.endsWith("/calcChain"),
  );
  const calcPart = calcChain ? zip.part(calcChain.target) : undefined;
  const bookRels = zip.part(bookRelsPath);
  const types = zip.part("[Content_Types].xml");
  if (calcPart && bookRels && types) {
    dropped.add(calcPart.name);
    changed.set(
      bookRels.name,
      withoutElements(await text(zip, bookRels), "Relationship", (t) => /\/calcChain["']/.test(t)),
    );
    changed.set(
      types.name,
      withoutElements(
        await text(zip, types),
        "Override",
        (t) => attributeOf(t, "PartName")?.replace(/^\//, "").toLowerCase() === calcPart.name.toLowerCase(),
      ),
    );
  }
  return { changed, dropped };
}

/** The sheet's tables (ListObjects): their parts' names and text. */
async function tablesOf(zip: ZipArchive, sheet: SheetPart): Promise<Array<{ name: string; xml: string }>> {
  const rels = await readRels(zip, relsPathOf(sheet.part.name), dirOf(sheet.part.name));
  const tables: Array<{ name: string; xml: string }> = [];
  for (const rel of rels.values()) {
    const part = rel.type.endsWith("/table") ? zip.part(rel.target) : undefined;
    if (part) tables.push({ name: part.name, xml: await text(zip, part) });
  }
  return tables;
}

/** The rightmost column a table of the sheet covers: a result cell there would break the table. */
function lastTableColumn(tables: ReadonlyArray<{ xml: string }>): number {
  let last = 0;
  for (const { xml } of tables) {
    const tag = [...xmlTags(xml)].find((t) => t.name === "table" && t.kind !== "close");
    if (tag) last = Math.max(last, lastColumnOf(attributeOf(xml.slice(tag.start, tag.end), "ref")));
  }
  return last;
}

/** The sheet, patched, and the other parts that change with it. */
async function patchedParts(zip: ZipArchive, input: WorkbookPatchInput) {
  const plan = await planWorkbook(zip, LIMITS);
  const sheet = plan.sheets.find((s) => s.name === input.sheetName);
  if (!sheet) throw new WorkbookMismatch(`the workbook has no sheet named "${input.sheetName}"`);
  const rows = await rowFates(zip, plan, sheet, input);
  const xml = await text(zip, sheet.part);
  const survey = surveySheet(xml);
  if (survey.rowNumbers.length !== rows.length)
    throw new WorkbookMismatch("the sheet's rows were not read as the upload read them");
  const tables = await tablesOf(zip, sheet);
  const sheetPlan: SheetPatchPlan = {
    rows,
    // After every value, merged range and table of the sheet: the result cells overlap none.
    firstResultColumn:
      Math.max(input.listWidth, survey.lastValueColumn, survey.lastMergedColumn, lastTableColumn(tables)) + 1,
    resultWidths: resultWidths(input),
    filtered: input.filtered,
  };
  const patched = patchSheet(xml, sheetPlan, survey);
  const remap = rowRemapOf(sheetPlan, survey);
  if (!remap) return { changed: new Map([[sheet.part.name, patched]]), dropped: new Set<string>() };
  const parts = await filteredParts(zip, plan, tables, remap);
  parts.changed.set(sheet.part.name, patched);
  return parts;
}

/**
 * patchWorkbook, or null when the stored workbook does not match the rows (WorkbookMismatch):
 * the callers (the API's download, `mailprobe verify --file`) then write a plain workbook.
 */
export async function patchWorkbookOrNull(input: WorkbookPatchInput): Promise<Readable | null> {
  try {
    return await patchWorkbook(input);
  } catch (error) {
    if (error instanceof WorkbookMismatch) return null;
    throw error;
  }
}

/**
 * The patched workbook as a zip stream. Everything is read and patched before it is returned,
 * so a failure is an error of this call, not a broken download; throws WorkbookMismatch when the
 * stored file is not the one the rows were read from.
 */
export async function patchWorkbook(input: WorkbookPatchInput): Promise<Readable> {
  const zip = await ZipArchive.open(input.original, LIMITS);
  try {
    const { changed, dropped } = await patchedParts(zip, input);
    const out = new yazl.ZipFile();
    for (const key of zip.names()) {
      const part = zip.part(key)!;
      if (dropped.has(part.name) || part.name.endsWith("/")) continue;
      const patched = changed.get(part.name);
      const data =
        patched === undefined
          ? await zip.read(part, LIMITS.maxTotalUncompressedBytes)
          : Buffer.from(patched, "utf8");
      out.addBuffer(data, part.name);
    }
    out.end();
    return out.outputStream as Readable;
  } finally {
    zip.close();
  }
}
