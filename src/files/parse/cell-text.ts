// Typed cell values (numbers, booleans, dates) → the text a person sees in the cell.

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

/** Text of a typed cell value: numbers as Excel shows them, TRUE/FALSE, dates as ISO dates. */
export function cellText(value: string | number | boolean | Date): string {
  if (typeof value === "string") return value;
  if (typeof value === "number") return numberText(value);
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  return dateText(value);
}
