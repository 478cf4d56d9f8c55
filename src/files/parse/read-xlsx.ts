// xlsx: the checked zip (zip-guard.ts), its structure (workbook-package.ts), then one sheet at a
// time streamed through saxes (sheet-reader.ts), rows pushed into a TableBuilder that stops
// everything at the first crossed limit. The TableBuilder's limits are per sheet (they describe
// the list); what reading costs is bounded per file: sheets, rows, cells and XML elements
// (read-budget.ts), inflated bytes and wall time (zip-guard.ts), address checks (table.ts).
import { fileProblem, type ListFileProblem } from "./problems.ts";
import { ReadBudget } from "./read-budget.ts";
import { readDateStyles, readSharedStrings, readSheetRows, type CellContext } from "./sheet-reader.ts";
import {
  describeCells,
  TableBuilder,
  newFileSpend,
  type ColumnRequest,
  type ParsedTable,
  type TableLimits,
} from "./table.ts";
import { planWorkbook } from "./workbook-package.ts";
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
): Promise<XlsxResult> {
  let zip: ZipArchive | null = null;
  try {
    zip = await ZipArchive.open(data, zipLimits);
    return await readSheets(zip, request, limits, zipLimits);
  } catch (error) {
    return { ok: false, problem: asInvalid(error) };
  } finally {
    zip?.close();
  }
}

async function readSheets(
  zip: ZipArchive,
  request: ColumnRequest,
  limits: TableLimits,
  zipLimits: ZipLimits,
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
  const ctx: CellContext = {
    dateStyles: plan.styles ? await readDateStyles(zip, plan.styles, budget) : [],
    sharedStrings: plan.sharedStrings ? await readSharedStrings(zip, plan.sharedStrings, budget) : [],
    date1904: plan.date1904,
  };
  let firstHeader: string[] | null = null;
  let firstProblem: ListFileProblem | null = null;
  let sheetsWithoutAddresses = 0;
  const spent = newFileSpend();
  for (const sheet of plan.sheets) {
    const builder = new TableBuilder(request, limits, "full", spent);
    let problem: ListFileProblem | null = null;
    for await (const cells of readSheetRows(zip, sheet.part, sheet.name, ctx, budget)) {
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
