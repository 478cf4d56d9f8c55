// exceljs cell values → the text a person sees in the cell.

const two = (n: number): string => n.toString().padStart(2, "0");

/** Dates at midnight UTC are day dates (Excel has no time zones): "2024-03-01"; others full ISO. */
function dateText(d: Date): string {
  if (Number.isNaN(d.getTime())) return "";
  if (
    d.getUTCHours() === 0 &&
    d.getUTCMinutes() === 0 &&
    d.getUTCSeconds() === 0 &&
    d.getUTCMilliseconds() === 0
  ) {
    return `${d.getUTCFullYear().toString()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
  }
  return d.toISOString();
}

// Excel keeps 15 significant digits; this drops binary noise such as 0.30000000000000004.
const numberText = (n: number): string => (Number.isFinite(n) ? String(Number(n.toPrecision(15))) : "");

/** Text of an exceljs cell value: rich text joined, hyperlink text, formula result, numbers, dates. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number") return numberText(value);
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  if (value instanceof Date) return dateText(value);
  if (typeof value === "object") {
    const v = value as Record<string, unknown>;
    if (Array.isArray(v.richText))
      return v.richText.map((run: { text?: unknown }) => cellText(run.text)).join("");
    if ("formula" in v || "sharedFormula" in v) return cellText(v.result);
    if ("text" in v) return cellText(v.text);
    if (typeof v.error === "string") return v.error;
  }
  return "";
}
