// xlsx: exceljs' streaming reader over the canonical package (workbook-package.ts), one sheet at
// a time, rows pushed into a TableBuilder that stops everything at the first crossed limit.
import { Readable } from "node:stream";
import ExcelJS from "exceljs";
import { cellText } from "./cell-text.ts";
import { fileProblem, type ListFileProblem } from "./problems.ts";
import {
  describeCells,
  TableBuilder,
  type ColumnRequest,
  type ParsedTable,
  type TableLimits,
} from "./table.ts";
import { canonicalPackage, planWorkbook } from "./workbook-package.ts";
import { ZipRefusal, type ZipLimits } from "./zip-guard.ts";

export type XlsxResult =
  { ok: true; table: ParsedTable; sheetName: string } | { ok: false; problem: ListFileProblem };

/** The parts of exceljs' WorksheetReader we use (its typings omit `name`). */
interface SheetReader extends AsyncIterable<ExcelJS.Row> {
  name?: string;
}

/** A promise that rejects when the package stream fails; raced against every exceljs await. */
class Tripwire {
  readonly fired: Promise<never>;
  private fire!: (error: unknown) => void;
  constructor() {
    this.fired = new Promise<never>((_, reject) => {
      this.fire = reject;
    });
    this.fired.catch(() => undefined);
  }
  trip(error: unknown): void {
    this.fire(error);
  }
}

// exceljs waits on the zip stream, and a failed source stream is not forwarded through
// `pipe()`: without the race a refused part would leave the read pending forever.
async function next<T>(it: AsyncIterator<T>, wire: Tripwire): Promise<IteratorResult<T>> {
  const step = it.next();
  step.catch(() => undefined); // if the wire wins, a later failure of this step is moot
  return Promise.race([step, wire.fired]);
}

function rowCells(row: ExcelJS.Row): string[] {
  const values = row.values as unknown[];
  const cells: string[] = [];
  for (let c = 1; c < values.length; c += 1) {
    const value = values[c];
    // row.values copies a formula cell without a falsy cached result (`=B2-3` showing 0 would
    // come out blank); the cell itself still holds it.
    const isFormula = typeof value === "object" && value !== null && "formula" in value;
    cells.push(cellText(isFormula ? { ...value, result: row.getCell(c).result } : value));
  }
  let end = cells.length;
  while (end > 0 && cells[end - 1]!.trim() === "") end -= 1; // styled but empty trailing cells
  cells.length = end;
  return cells;
}

function asInvalid(error: unknown): ListFileProblem {
  if (error instanceof ZipRefusal) return fileProblem("invalid_file", error.message);
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
  let plan;
  try {
    plan = await planWorkbook(data, zipLimits);
  } catch (error) {
    return { ok: false, problem: asInvalid(error) };
  }

  const wire = new Tripwire();
  const source = Readable.from(canonicalPackage(data, plan), { objectMode: false });
  source.on("error", (error) => wire.trip(error));
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(source, {
    worksheets: "emit",
    sharedStrings: "cache",
    hyperlinks: "ignore",
    // Styles are needed for dates: a date is a number whose cell style has a date format.
    styles: "cache",
    entries: "ignore",
  });
  const sheets = reader[Symbol.asyncIterator]() as AsyncIterator<SheetReader>;
  let firstHeader: string[] | null = null;
  let firstProblem: ListFileProblem | null = null;
  let sheetsWithoutAddresses = 0;
  try {
    for (let index = 0; ; index += 1) {
      const step = await next(sheets, wire);
      if (step.done) break;
      const sheetName = step.value.name ?? plan.sheets[index]?.name ?? `Sheet${String(index + 1)}`;
      const builder = new TableBuilder(request, limits);
      const rows = step.value[Symbol.asyncIterator]();
      let problem: ListFileProblem | null = null;
      for (;;) {
        const row = await next(rows, wire);
        if (row.done) break;
        problem = builder.push(rowCells(row.value));
        if (problem) break;
      }
      if (problem && builder.missingNamedColumn) {
        // email_column names a header this sheet lacks: the first sheet holding it is the list.
        firstHeader ??= builder.firstRow;
        if (rows.return) await Promise.race([rows.return(), wire.fired]);
        continue;
      }
      if (problem) return { ok: false, problem };
      if (builder.rowCount === 0) continue; // an empty leftover "Sheet1"
      const table = builder.finish();
      if (!("code" in table)) return { ok: true, table, sheetName };
      // Without email_column, a sheet without any address (a cover or notes sheet) is passed over.
      if (table.code !== "no_valid_emails" || request.kind === "named") return { ok: false, problem: table };
      firstProblem ??= table;
      sheetsWithoutAddresses += 1;
    }
  } catch (error) {
    return { ok: false, problem: asInvalid(error) };
  } finally {
    source.destroy();
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
