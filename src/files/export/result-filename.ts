// The name of a results file, one rule for every way results are saved (DESIGN §5 Download): the
// API's Content-Disposition (the dashboard saves under it), `mailprobe client upload --wait`,
// `mailprobe client download` and `mailprobe verify --file`: `<list stem>-results.<format>`, or
// `task-<id>-results.<format>` when there is no usable list name; a download kept to some
// statuses names them (`<stem>-results-valid-catchall.csv`), so a clean list is never saved
// under the name of the whole one. Free of imports so the CLI's client commands can use it
// without loading the engine.

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
function safeStem(originalName: string): string {
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

/**
 * `"<original stem>-results.<ext>"`, or `"<fallbackStem>-results.<ext>"` when there is no usable
 * name; with `kept` statuses, `"<stem>-results-valid-catchall.<ext>"`.
 */
export function resultFilename(
  originalName: string | null,
  fallbackStem: string,
  format: string,
  kept: readonly string[] = [],
): string {
  const stem = originalName ? safeStem(originalName) : "";
  const statuses = kept.map((s) => s.replace(/[^a-z_]/g, "")).filter((s) => s !== "");
  return `${stem || fallbackStem}-results${statuses.map((s) => `-${s}`).join("")}.${format}`;
}

/**
 * A task's results file: `"<upload stem>-results.<ext>"`, or `"task-<id>-results.<ext>"`; with
 * `statuses` (the filter, in the API's order of statuses) `"<stem>-results-valid-catchall.<ext>"`.
 */
export function downloadFilename(
  originalName: string | null,
  taskId: string,
  format: string,
  statuses: readonly string[] = [],
): string {
  const id = taskId.replace(/[^A-Za-z0-9-]/g, "").slice(0, 64);
  return resultFilename(originalName, `task-${id}`, format, statuses);
}
