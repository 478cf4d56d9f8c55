// xlsx: the checked zip (zip-guard.ts), its structure (workbook-package.ts), then one sheet at a
// time streamed through saxes (sheet-reader.ts), rows pushed into a TableBuilder that stops
// everything at the first crossed limit. The TableBuilder's limits are per sheet (they describe
// the list); what reading costs is bounded per file: sheets, rows, cells and XML elements
// (read-budget.ts), inflated bytes and wall time (zip-guard.ts), address checks (table.ts).
import { isEmailHeaderName } from "./email-header-names.ts";
import { fileProblem, sheetProblem, type ListFileProblem } from "./problems.ts";
import { ReadBudget, type BudgetSpend } from "./read-budget.ts";
import { readDateStyles, readSharedStrings, readSheetRows, type CellContext } from "./sheet-reader.ts";
import {
  ambiguousSheetMessage,
  chooseSheet,
  sheetNotFoundMessage,
  type SheetPreview,
} from "./sheet-choice.ts";
import {
  describeCells,
  TableBuilder,
  newFileSpend,
  type ColumnRequest,
  type FileSpend,
  type ParsedTable,
  type TableLimits,
} from "./table.ts";
import { planWorkbook, type SheetPart, type WorkbookPlan } from "./workbook-package.ts";
import { ZipArchive, ZipRefusal, type ZipLimits } from "./zip-guard.ts";

export type XlsxResult =
  { ok: true; table: ParsedTable; sheetName: string } | { ok: false; problem: ListFileProblem };

function asInvalid(error: unknown): ListFileProblem {
  if (error instanceof ZipRefusal) return fileProblem(error.code, error.message);
  const detail = error instanceof Error ? ` (${error.message.split("\n")[0]!.slice(0, 120)})` : "";
  return fileProblem(
    "invalid_file",
    `The workbook could not be read${detail}; open it in Excel and save it again as .xlsx, or upload a CSV.`,
  );
}

export async function readXlsx(
  data: Buffer,
  request: ColumnRequest,
  limits: TableLimits,
  zipLimits: ZipLimits,
  sheetName: string | null = null,
): Promise<XlsxResult> {
  let zip: ZipArchive | null = null;
  try {
    zip = await ZipArchive.open(data, zipLimits);
    return await readSheets(zip, request, limits, zipLimits, sheetName);
  } catch (error) {
    return { ok: false, problem: asInvalid(error) };
  } finally {
    zip?.close();
  }
}

/** What the workbook's cells refer to: its shared strings, date styles and date system. */
export async function cellContextOf(
  zip: ZipArchive,
  plan: WorkbookPlan,
  budget: ReadBudget,
): Promise<CellContext> {
  return {
    dateStyles: plan.styles ? await readDateStyles(zip, plan.styles, budget) : [],
    sharedStrings: plan.sharedStrings ? await readSharedStrings(zip, plan.sharedStrings, budget) : [],
    date1904: plan.date1904,
  };
}

// A sheet's first rows tell whether it holds a list (sheet-choice.ts): enough for a header and
// addresses below it, little next to the file's row budget even for 100 sheets.
const PREVIEW_ROWS = 50;
const PREVIEW_ROWS_READ = 1_000;

interface WorkbookReading {
  zip: ZipArchive;
  plan: WorkbookPlan;
  ctx: CellContext;
  budget: ReadBudget;
  spent: FileSpend;
  request: ColumnRequest;
  limits: TableLimits;
}

/** What a sheet's preview spent of the file's budgets, given back when the sheet is read whole. */
interface PreviewSpend {
  from: BudgetSpend;
  to: BudgetSpend;
  file: FileSpend;
}

function giveBack(r: WorkbookReading, spend: PreviewSpend | undefined): void {
  if (!spend) return;
  r.budget.refund(spend.from, spend.to);
  r.spent.addressChecks -= spend.file.addressChecks;
  r.spent.textChars -= spend.file.textChars;
}

/** previewSheet, and what it spent. */
async function previewWithSpend(r: WorkbookReading, sheet: SheetPart) {
  const from = r.budget.spentSoFar();
  const file = { ...r.spent };
  const preview = await previewSheet(r, sheet);
  const spend: PreviewSpend = {
    from,
    to: r.budget.spentSoFar(),
    file: {
      addressChecks: r.spent.addressChecks - file.addressChecks,
      textChars: r.spent.textChars - file.textChars,
    },
  };
  return { preview, spend };
}

/** What the first rows of a sheet show: its addresses and whether its email column says so. */
async function previewSheet(r: WorkbookReading, sheet: SheetPart): Promise<SheetPreview | ListFileProblem> {
  const builder = new TableBuilder(r.request, r.limits, "full", r.spent);
  let nonBlank = 0;
  let read = 0;
  for await (const cells of readSheetRows(r.zip, sheet.part, sheet.name, r.ctx, r.budget)) {
    read += 1;
    if (cells.length > 0) nonBlank += 1;
    const problem = builder.push(cells);
    if (problem && !builder.missingNamedColumn && problem.code !== "no_valid_emails") return problem;
    if (problem || nonBlank >= PREVIEW_ROWS || read >= PREVIEW_ROWS_READ) break;
  }
  const table = builder.missingNamedColumn || builder.rowCount === 0 ? null : builder.finish();
  const list = table && !("code" in table) ? table : null;
  const header = list?.header?.[list.emailColumn]?.trim();
  return {
    name: sheet.name,
    hidden: sheet.hidden,
    addresses: list?.emails.length ?? 0,
    labelled: r.request.kind === "named" || (header !== undefined && isEmailHeaderName(header)),
    column: header || `${String((list?.emailColumn ?? 0) + 1)}`,
  };
}

/** The whole list of one sheet, or why it is refused. */
async function readListSheet(r: WorkbookReading, sheet: SheetPart): Promise<XlsxResult> {
  const builder = new TableBuilder(r.request, r.limits, "full", r.spent);
  for await (const cells of readSheetRows(r.zip, sheet.part, sheet.name, r.ctx, r.budget)) {
    const problem = builder.push(cells);
    if (problem) return { ok: false, problem };
  }
  const table = builder.finish();
  return "code" in table ? { ok: false, problem: table } : { ok: true, table, sheetName: sheet.name };
}

/** The sheet the upload named: by its name, else by its name in any case. */
function namedSheet(plan: WorkbookPlan, asked: string): SheetPart | ListFileProblem {
  const sheet =
    plan.sheets.find((s) => s.name === asked) ??
    plan.sheets.find((s) => s.name.trim().toLowerCase() === asked.trim().toLowerCase());
  return (
    sheet ??
    sheetProblem(
      "sheet_not_found",
      sheetNotFoundMessage(
        asked,
        plan.sheets.map((s) => s.name),
      ),
    )
  );
}

async function readSheets(
  zip: ZipArchive,
  request: ColumnRequest,
  limits: TableLimits,
  zipLimits: ZipLimits,
  sheetName: string | null,
): Promise<XlsxResult> {
  const plan = await planWorkbook(zip, zipLimits);
  // A sheet may use up the list limits (non-blank and blank rows) once; the file not much more.
  const budget = new ReadBudget(
    {
      maxSheets: zipLimits.maxSheets,
      maxRows: limits.maxRows + limits.maxBlankRows,
      maxCells: zipLimits.maxCells,
      maxElements: zipLimits.maxElements,
    },
    plan.sheets.length,
  );
  const r: WorkbookReading = {
    zip,
    plan,
    ctx: await cellContextOf(zip, plan, budget),
    budget,
    spent: newFileSpend(),
    request,
    limits,
  };
  if (sheetName !== null) {
    const sheet = namedSheet(plan, sheetName);
    return "code" in sheet ? { ok: false, problem: sheet } : readListSheet(r, sheet);
  }
  const previews: SheetPreview[] = [];
  const spends = new Map<string, PreviewSpend>();
  // Past the sheet budget a workbook is refused when read whole (read-budget.ts); its previews
  // stop there too.
  for (const sheet of plan.sheets.slice(0, zipLimits.maxSheets)) {
    const { preview, spend } = await previewWithSpend(r, sheet);
    if ("code" in preview) return { ok: false, problem: preview };
    previews.push(preview);
    spends.set(sheet.name, spend);
  }
  const choice = chooseSheet(previews);
  if (choice.kind === "ambiguous")
    return { ok: false, problem: sheetProblem("ambiguous_sheet", ambiguousSheetMessage(choice.sheets)) };
  if (choice.kind === "sheet") {
    giveBack(r, spends.get(choice.name));
    return readListSheet(
      r,
      plan.sheets.find((s) => s.name === choice.name)!,
    );
  }
  // Nothing found in the first rows: what the previews spent is given back, and every sheet is
  // read whole as before.
  for (const spend of spends.values()) giveBack(r, spend);
  return readFirstList(r);
}

/**
 * No sheet showed addresses in its first rows: each sheet is read whole, in order, and the first
 * that holds a list is it (a list whose addresses start further down).
 */
async function readFirstList(r: WorkbookReading): Promise<XlsxResult> {
  const { request } = r;
  let firstHeader: string[] | null = null;
  let firstProblem: ListFileProblem | null = null;
  let sheetsWithoutAddresses = 0;
  for (const sheet of r.plan.sheets) {
    const builder = new TableBuilder(request, r.limits, "full", r.spent);
    let problem: ListFileProblem | null = null;
    for await (const cells of readSheetRows(r.zip, sheet.part, sheet.name, r.ctx, r.budget)) {
      problem = builder.push(cells);
      if (problem) break;
    }
    if (problem && builder.missingNamedColumn) {
      // email_column names a header this sheet lacks: the first sheet holding it is the list.
      firstHeader ??= builder.firstRow;
      continue;
    }
    if (problem) return { ok: false, problem };
    if (builder.rowCount === 0) continue; // an empty leftover "Sheet1"
    const table = builder.finish();
    if (!("code" in table)) return { ok: true, table, sheetName: sheet.name };
    // Without email_column, a sheet without any address (a cover or notes sheet) is passed over.
    if (table.code !== "no_valid_emails" || request.kind === "named") return { ok: false, problem: table };
    firstProblem ??= table;
    sheetsWithoutAddresses += 1;
  }

  if (request.kind === "named" && firstHeader) {
    return {
      ok: false,
      problem: {
        code: "column_not_found",
        field: "email_column",
        message: `No sheet has a column named "${request.name}"; the first sheet's header row has: ${describeCells(firstHeader)}.`,
      },
    };
  }
  if (firstProblem && sheetsWithoutAddresses > 1) {
    return {
      ok: false,
      problem: fileProblem(
        "no_valid_emails",
        `None of the workbook's ${String(sheetsWithoutAddresses)} sheets holds a valid email address (first sheet: ${firstProblem.message})`,
      ),
    };
  }
  return {
    ok: false,
    problem:
      firstProblem ??
      fileProblem("no_valid_emails", "The workbook's sheets are empty; it needs one email address per row."),
  };
}
