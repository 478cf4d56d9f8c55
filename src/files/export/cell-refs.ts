// A1-style cell references (ECMA-376 §18.18.62 ST_Ref, §18.18.76 ST_Sqref): column letters,
// rows, and the rows of a range after some rows of the sheet were taken out.

/** "A" for 1, "AB" for 28 (1-based column numbers, as Excel counts them). */
export function columnLetter(n: number): string {
  let s = "";
  for (let x = n; x > 0; x = Math.floor((x - 1) / 26)) s = String.fromCharCode(65 + ((x - 1) % 26)) + s;
  return s;
}

/** A reference's column (1-based) and row; either is null when the reference lacks it ("A:A", "3:3"). */
export interface CellRef {
  column: number | null;
  row: number | null;
}

export function parseCellRef(ref: string): CellRef | null {
  const m = /^\$?([A-Za-z]{0,3})\$?(\d{0,7})$/.exec(ref);
  if (!m || (m[1] === "" && m[2] === "")) return null;
  let column = 0;
  for (const c of m[1]!.toUpperCase()) column = column * 26 + (c.charCodeAt(0) - 64);
  return { column: m[1] === "" ? null : column, row: m[2] === "" ? null : Number(m[2]) };
}

const refText = (r: CellRef): string =>
  `${r.column === null ? "" : columnLetter(r.column)}${r.row === null ? "" : String(r.row)}`;

/**
 * Where the rows of a sheet go when some are taken out: kept rows in order, renumbered 1, 2, 3 …
 * (the rows between them are gone). `oldRows` are the kept rows' original numbers, ascending.
 */
export class RowRemap {
  constructor(private readonly oldRows: readonly number[]) {}

  get lastRow(): number {
    return this.oldRows.length;
  }

  /** The new number of a kept row; null for a row taken out. */
  rowOf(old: number): number | null {
    const i = this.lowerBound(old);
    return this.oldRows[i] === old ? i + 1 : null;
  }

  /**
   * A range's rows after the removal: from the first kept row at or after its top to the last
   * kept row at or before its bottom; null when no kept row lies in it. Whole columns ("A:C")
   * are unchanged.
   */
  range(text: string): string | null {
    const [a, b = a] = text.split(":");
    const from = parseCellRef(a ?? "");
    const to = parseCellRef(b ?? "");
    if (!from || !to) return text;
    if (from.row === null || to.row === null) return text;
    const top = this.lowerBound(from.row);
    const bottom = this.lowerBound(to.row + 1) - 1;
    if (top > bottom) return null;
    const start = refText({ column: from.column, row: top + 1 });
    const end = refText({ column: to.column, row: bottom + 1 });
    return text.includes(":") ? `${start}:${end}` : start;
  }

  /** An ST_Sqref (ranges separated by spaces) with each range remapped; null when none is left. */
  sqref(text: string): string | null {
    const kept = text
      .split(/\s+/)
      .filter(Boolean)
      .map((r) => this.range(r))
      .filter((r): r is string => r !== null);
    return kept.length === 0 ? null : kept.join(" ");
  }

  private lowerBound(row: number): number {
    let lo = 0;
    let hi = this.oldRows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.oldRows[mid]! < row) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
