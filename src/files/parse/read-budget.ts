// The per-FILE budget of reading a workbook. Limits kept per sheet let a workbook multiply them
// by its sheet count: 92 sheets × 19,999 address-less rows each passed every per-sheet limit and
// cost 18 s of CPU. Here the sheets read, the rows scanned (blank or not), the cells and the XML
// elements of all parts together are counted against one budget; the inflated bytes and the wall
// clock are counted per file by the ZipArchive (zip-guard.ts), the addresses checked by the
// TableBuilders of the file's sheets together (table.ts).
import { formatCount } from "./problems.ts";
import type { ElementBudget } from "./xml-reader.ts";
import { ZipRefusal } from "./zip-guard.ts";

export interface ReadBudgetLimits {
  /** Worksheets streamed. */
  maxSheets: number;
  /** `<row>` elements read in all sheets, blank ones included. */
  maxRows: number;
  /** Cells in all sheets, counting the empty ones left of a filled cell. */
  maxCells: number;
  /** XML elements in all parts read (styles, shared strings, sheets): what parsing costs. */
  maxElements: number;
}

/** A snapshot of a ReadBudget's counters. */
export interface BudgetSpend {
  sheets: number;
  rows: number;
  cells: number;
  elements: number;
}

const SAVE_LESS = "save only the sheet with the addresses, or upload a CSV.";

export class ReadBudget implements ElementBudget {
  private sheets = 0;
  private rows = 0;
  private cells = 0;
  private elements = 0;

  constructor(
    private readonly limits: ReadBudgetLimits,
    /** Sheets the workbook has, for messages. */
    private readonly sheetCount: number,
  ) {}

  /** What has been spent so far; `refund` takes two of these. */
  spentSoFar(): BudgetSpend {
    return { sheets: this.sheets, rows: this.rows, cells: this.cells, elements: this.elements };
  }

  /**
   * Gives back what was spent between `from` and `to`: a sheet whose first rows were previewed
   * (read-xlsx.ts) is read again whole, and is charged once, not twice.
   */
  refund(from: BudgetSpend, to: BudgetSpend): void {
    this.sheets -= to.sheets - from.sheets;
    this.rows -= to.rows - from.rows;
    this.cells -= to.cells - from.cells;
    this.elements -= to.elements - from.elements;
  }

  /** Called before a sheet is streamed. Throws ZipRefusal past the sheet budget. */
  openSheet(): void {
    this.sheets += 1;
    if (this.sheets > this.limits.maxSheets) {
      throw new ZipRefusal(
        `The workbook has ${formatCount(this.sheetCount)} sheets and no list was found in the first ` +
          `${formatCount(this.limits.maxSheets)}, the most read from one file; ` +
          "move the sheet with the addresses to the front, or upload a CSV.",
      );
    }
  }

  openElement(): void {
    this.elements += 1;
    if (this.elements > this.limits.maxElements) {
      throw new ZipRefusal(
        `The workbook has more than ${formatCount(this.limits.maxElements)} XML elements in its parts, the most ` +
          "read from one file; save only the sheet with the addresses, or upload a CSV.",
      );
    }
  }

  /** Called for every row before its cells are allocated. Throws ZipRefusal past a budget. */
  addRow(width: number): void {
    this.rows += 1;
    this.cells += width;
    if (this.rows > this.limits.maxRows) {
      throw new ZipRefusal(
        `The workbook has more than ${formatCount(this.limits.maxRows)} rows (blank ones included) ` +
          `in its sheets, the most read from one file (stopped in sheet ${formatCount(this.sheets)} of ` +
          `${formatCount(this.sheetCount)}); ${SAVE_LESS}`,
        "too_many_rows",
      );
    }
    if (this.cells > this.limits.maxCells) {
      throw new ZipRefusal(
        `The workbook has more than ${formatCount(this.limits.maxCells)} cells in its sheets, the most ` +
          `read from one file; save only the columns and the sheet with the addresses, or upload a CSV.`,
      );
    }
  }
}
