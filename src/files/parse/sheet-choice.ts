// Which sheet of a workbook holds the list when the upload does not name one: the sheet whose
// email column's header says so ("Email", "E-mail", or the email_column asked for), else the one
// sheet holding addresses at all; visible sheets before hidden ones. Two candidates of the same
// standing are not guessed between: the upload is refused naming them, and the caller chooses
// with the `sheet` field (docs/api.md, "Files in, files out").
import { formatCount } from "./problems.ts";

/** What the first rows of one sheet show. */
export interface SheetPreview {
  name: string;
  hidden: boolean;
  /** Distinct addresses in the sheet's first rows. */
  addresses: number;
  /** The email column's header names it as one (or it is the column asked for by name). */
  labelled: boolean;
  /** The email column, for messages: its header, or "column 3". */
  column: string;
}

export type SheetChoice =
  { kind: "sheet"; name: string } | { kind: "ambiguous"; sheets: SheetPreview[] } | { kind: "none" };

export function chooseSheet(previews: readonly SheetPreview[]): SheetChoice {
  for (const hidden of [false, true]) {
    const lists = previews.filter((p) => p.hidden === hidden && p.addresses > 0);
    const labelled = lists.filter((p) => p.labelled);
    const candidates = labelled.length > 0 ? labelled : lists;
    if (candidates.length === 1) return { kind: "sheet", name: candidates[0]!.name };
    if (candidates.length > 1) return { kind: "ambiguous", sheets: candidates };
  }
  return { kind: "none" };
}

const MAX_NAMED = 5;

/** `"Contacts" (column Email)`, for messages. */
const describe = (p: SheetPreview): string => `"${p.name}" (column ${p.column})`;

export function ambiguousSheetMessage(sheets: readonly SheetPreview[]): string {
  const named = sheets.slice(0, MAX_NAMED).map(describe);
  const more = sheets.length > MAX_NAMED ? ` and ${formatCount(sheets.length - MAX_NAMED)} more` : "";
  return (
    `The workbook has addresses on ${formatCount(sheets.length)} sheets: ${named.join(", ")}${more}. ` +
    `Choose one with the sheet field (sheet=${sheets[0]!.name}), or save the list on a sheet of its own.`
  );
}

export function sheetNotFoundMessage(asked: string, names: readonly string[]): string {
  const shown = names.slice(0, 20).map((n) => `"${n}"`);
  const more = names.length > 20 ? `, … (${formatCount(names.length)} sheets)` : "";
  return `The workbook has no sheet named "${asked}"; its sheets are ${shown.join(", ")}${more}.`;
}
