// Which sheet of a previewed workbook the dashboard offers first, by the server's rule
// (src/files/parse/sheet-choice.ts, on the first rows of each sheet): the sheet whose email
// column's header says so, else the one sheet with addresses; with two such sheets none is
// chosen and the user picks. The upload then names the sheet shown, so what is verified is what
// the preview showed.
import { chooseSheet, type SheetPreview } from "../../../src/files/parse/sheet-choice.ts";
import { guessEmailColumn, isEmailHeaderName, looksLikeAddress, type ColumnGuess } from "./email-column.ts";
import { plural } from "./format.ts";

/** One sheet's first rows, as the preview shows them (lib/xlsx.ts). */
export interface SheetRows {
  name: string;
  hidden: boolean;
  rows: string[][];
}

/** A previewed sheet with its guessed email column and the addresses in it. */
export interface SheetView extends SheetRows {
  guess: ColumnGuess;
  addresses: number;
}

export function sheetViewOf(sheet: SheetRows): SheetView {
  const guess = guessEmailColumn(sheet.rows);
  const body = guess.hasHeader ? sheet.rows.slice(1) : sheet.rows;
  const addresses = guess.column < 0 ? 0 : body.filter((r) => looksLikeAddress(r[guess.column])).length;
  return { ...sheet, guess, addresses };
}

const headerOf = (v: SheetView): string | undefined =>
  v.guess.hasHeader ? v.rows[0]?.[v.guess.column]?.trim() || undefined : undefined;

const previewOf = (v: SheetView): SheetPreview => {
  const header = headerOf(v);
  return {
    name: v.name,
    hidden: v.hidden,
    addresses: v.addresses,
    labelled: header !== undefined && isEmailHeaderName(header),
    column: header ?? String(v.guess.column + 1),
  };
};

/** The sheet to show first, and why; `name` is null when the user must choose. */
export interface FirstSheet {
  name: string | null;
  reason: string;
}

export function firstSheetOf(views: readonly SheetView[]): FirstSheet {
  if (views.length === 1) return { name: views[0]!.name, reason: "the workbook has one sheet" };
  const choice = chooseSheet(views.map(previewOf));
  if (choice.kind === "ambiguous") {
    const names = choice.sheets.map((s) => `“${s.name}”`).join(", ");
    return { name: null, reason: `addresses are on ${String(choice.sheets.length)} sheets, ${names}` };
  }
  if (choice.kind === "none")
    return { name: views[0]!.name, reason: "no sheet shows an address in its first rows" };
  const chosen = views.find((v) => v.name === choice.name)!;
  const header = headerOf(chosen);
  return {
    name: chosen.name,
    reason:
      header !== undefined && isEmailHeaderName(header)
        ? `its column “${header}” names the addresses`
        : "it is the only sheet with addresses",
  };
}

/** "Contacts: 20 addresses in the first rows" for the sheet picker. */
export const sheetOptionLabel = (v: SheetView): string =>
  `${v.name}${v.hidden ? " (hidden)" : ""}: ${v.addresses > 0 ? `${plural(v.addresses, "address", "addresses")} in the first rows` : "no addresses in the first rows"}`;
