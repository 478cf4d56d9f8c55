// Download metadata: result columns, content types, file names and Content-Disposition.
import { FILE_COLUMNS, type ResultColumnName } from "../../verify/index.ts";

export { downloadFilename, resultFilename } from "./result-filename.ts";

/** Download formats of a task's results. */
export const EXPORT_FORMATS = ["csv", "txt", "xlsx"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Result columns of a download, in order (DESIGN §5), from the result fields table. */
export const RESULT_COLUMNS: readonly ResultColumnName[] = FILE_COLUMNS.map((c) => c.name);

/** The real width of a row: its cells up to the last one that is not blank. */
export function filledWidth(cells: readonly string[] | null | undefined): number {
  if (!cells) return 0;
  let end = cells.length;
  while (end > 0 && (cells[end - 1] ?? "").trim() === "") end -= 1;
  return end;
}

/** Columns of a txt download: `email,status` (DESIGN §5). */
export const TXT_RESULT_COLUMNS = ["email", "status"] as const satisfies readonly ResultColumnName[];

const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: "text/csv; charset=utf-8",
  txt: "text/plain; charset=utf-8",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
};

export const contentTypeFor = (format: ExportFormat): string => CONTENT_TYPES[format];

/**
 * Prefix of the result columns when an original column already bears one of their names, so no
 * file has two columns of one name (a list with its own `email` or `status` column).
 */
export const RESULT_COLUMN_PREFIX = "mailprobe_";

const nameKey = (name: string): string => name.trim().toLowerCase();

/**
 * The names the result columns get beside these original columns: RESULT_COLUMNS as they are,
 * or, when any original name matches one of them (trimmed, case-insensitive), every one of them
 * prefixed with RESULT_COLUMN_PREFIX (`mailprobe2_`, `mailprobe3_`, … in the unlikely case the
 * list has those too). All or none: a reader finds the result columns under one rule.
 */
export function resultColumnNames(
  originalNames: readonly string[],
  columns: readonly string[] = RESULT_COLUMNS,
): string[] {
  const taken = new Set(originalNames.map(nameKey));
  const collides = (prefix: string): boolean => columns.some((c) => taken.has(nameKey(prefix + c)));
  if (!collides("")) return [...columns];
  // Each extra prefix needs one more taken name to collide: the loop ends within taken.size + 1.
  for (let n = 1; ; n += 1) {
    const prefix = n === 1 ? RESULT_COLUMN_PREFIX : `mailprobe${String(n)}_`;
    if (!collides(prefix)) return columns.map((c) => prefix + c);
  }
}

/**
 * Header of a file-backed download: `columnCount` original columns as the upload wrote them
 * (named `column_N` where the upload had no header or a blank or shorter header row), then the
 * result columns (resultColumnNames). `columnCount` is the width of the widest real header or
 * cell; nothing is padded or kept past it.
 */
export function buildResultHeader(originalHeader: readonly string[] | null, columnCount: number): string[] {
  const original = Array.from({ length: columnCount }, (_, i) => {
    const name = originalHeader?.[i];
    return name?.trim() ? name : `column_${String(i + 1)}`;
  });
  return [...original, ...resultColumnNames(original)];
}

/**
 * A ragged original row padded (or cut) to `columnCount`, followed by its result cells, so columns
 * line up under buildResultHeader's header and no row is wider than it.
 */
export function joinResultRow<T>(
  original: readonly string[],
  columnCount: number,
  result: readonly T[],
): (string | T)[] {
  const padded: (string | T)[] = original.slice(0, columnCount);
  while (padded.length < columnCount) padded.push("");
  return [...padded, ...result];
}

/** ASCII stand-in for the plain `filename=` parameter: accents dropped, other characters → "_". */
function asciiFilename(filename: string): string {
  return filename
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .replace(/[^\x20-\x7E]/g, "_")
    .replace(/["\\]/g, "_");
}

/** RFC 5987 ext-value for `filename*`: `UTF-8''` + percent-encoded UTF-8 (attr-chars kept). */
export function rfc5987Value(filename: string): string {
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `UTF-8''${encoded}`;
}

/** `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266 §4.3: both, for old and new clients). */
export function contentDisposition(filename: string): string {
  return `attachment; filename="${asciiFilename(filename)}"; filename*=${rfc5987Value(filename)}`;
}
