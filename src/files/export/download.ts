// Download metadata: result columns, content types, file names and Content-Disposition.
import { FILE_FIELDS, type ResultFieldName } from "../../verify/index.ts";

/** Download formats of a task's results. */
export const EXPORT_FORMATS = ["csv", "txt", "xlsx"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Result columns of a download, in order (DESIGN §5), from the result fields table. */
export const RESULT_COLUMNS: readonly ResultFieldName[] = FILE_FIELDS.map((f) => f.name);
export type ResultColumn = ResultFieldName;

/** The real width of a row: its cells up to the last one that is not blank. */
export function filledWidth(cells: readonly string[] | null | undefined): number {
  if (!cells) return 0;
  let end = cells.length;
  while (end > 0 && (cells[end - 1] ?? "").trim() === "") end -= 1;
  return end;
}

/** Columns of a txt download: `email,status` (DESIGN §5). */
export const TXT_RESULT_COLUMNS = ["email", "status"] as const satisfies readonly ResultFieldName[];

const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: "text/csv; charset=utf-8",
  txt: "text/plain; charset=utf-8",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
};

export const contentTypeFor = (format: ExportFormat): string => CONTENT_TYPES[format];

/**
 * Header of a file-backed download: `columnCount` original columns (named `column_N` where the
 * upload had no header or a shorter header row), then RESULT_COLUMNS. `columnCount` is the width
 * of the widest real header or cell; nothing is padded or kept past it.
 */
export function buildResultHeader(originalHeader: readonly string[] | null, columnCount: number): string[] {
  const original = Array.from({ length: columnCount }, (_, i) => {
    const name = originalHeader?.[i]?.trim();
    return name ? name : `column_${String(i + 1)}`;
  });
  return [...original, ...RESULT_COLUMNS];
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

// Characters that break a header, a path or a shell: quotes, slashes, Windows-reserved
// punctuation, "%" (some clients percent-decode filename=), ";" and "," (header syntax).
const UNSAFE_PUNCTUATION = /["'`/\\:*?<>|%;,]/gu;
// Control, format (bidi overrides such as U+202E that disguise "txt.exe" as "exe.txt",
// zero-width characters), line/paragraph separators, unassigned and private-use code points.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cn}\p{Co}\p{Cs}]/gu;
const MAX_STEM_BYTES = 150;

function cutToBytes(s: string, maxBytes: number): string {
  let out = "";
  let bytes = 0;
  for (const ch of s) {
    bytes += Buffer.byteLength(ch, "utf8");
    if (bytes > maxBytes) break;
    out += ch;
  }
  return out;
}

/** The upload's name without directories and extension, made safe for a download name; may be "". */
export function safeStem(originalName: string): string {
  const base = originalName.split(/[/\\]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  const stem = dot > 0 ? base.slice(0, dot) : base;
  const cleaned = stem
    .normalize("NFC")
    .replace(INVISIBLE, "")
    .replace(UNSAFE_PUNCTUATION, "_")
    .replace(/\s+/gu, " ")
    .replace(/_+/g, "_")
    .replace(/^[\s._-]+|[\s._-]+$/gu, "");
  return cutToBytes(cleaned, MAX_STEM_BYTES).trim();
}

/** `"<original stem>-results.<ext>"`, or `"task-<id>-results.<ext>"` when there is no usable name. */
export function downloadFilename(originalName: string | null, taskId: string, format: ExportFormat): string {
  const stem = originalName ? safeStem(originalName) : "";
  const id = taskId.replace(/[^A-Za-z0-9-]/g, "").slice(0, 64);
  return `${stem || `task-${id}`}-results.${format}`;
}

/** ASCII stand-in for the plain `filename=` parameter: accents dropped, other characters → "_". */
export function asciiFilename(filename: string): string {
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
