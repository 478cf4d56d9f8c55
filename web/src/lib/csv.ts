// Browser-side reading of the head of a .csv or .txt list, for the upload preview only: the
// server parses the whole file again (src/files/parse/) and its answer is what counts.

/** A csv field delimiter, as the server accepts them. */
export type Delimiter = "," | ";" | "\t";

const CANDIDATES: readonly Delimiter[] = [",", ";", "\t"];

/** Bytes at the end of `b` that start a UTF-8 character the sample cut short (0 to 3). */
function cutCharacterBytes(b: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, b.length); back += 1) {
    const byte = b[b.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: keep looking for the lead
    const needs = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needs > back ? back : 0;
  }
  return 0;
}

/**
 * Text of the first bytes of a file: UTF-16 when it starts with a BOM, else UTF-8, else
 * Windows-1252 (what Excel writes in western locales). A UTF-8 BOM is dropped. `truncated`: the
 * bytes are a sample, which may end inside a character.
 */
export function decodeHead(bytes: Uint8Array, truncated = false): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder("utf-16le").decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder("utf-16be").decode(bytes.subarray(2));
  const body = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
  const end = truncated ? body.length - cutCharacterBytes(body) : body.length;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(body.subarray(0, end));
  } catch {
    return new TextDecoder("windows-1252").decode(body);
  }
}

/** Excel's "sep=;" first line, which names the delimiter. */
function explicitDelimiter(text: string): { delimiter: Delimiter; skip: number } | null {
  const match = /^sep=(,|;|\t)[ \t]*(\r\n|\n|\r|$)/i.exec(text);
  return match ? { delimiter: match[1] as Delimiter, skip: match[0].length } : null;
}

/** Counts of each candidate outside quotes, per logical line, for the first lines. */
function countsPerLine(text: string, maxLines: number): Array<Record<Delimiter, number>> {
  const lines: Array<Record<Delimiter, number>> = [];
  let counts: Record<Delimiter, number> = { ",": 0, ";": 0, "\t": 0 };
  let inQuotes = false;
  let blank = true;
  for (let i = 0; i < text.length && lines.length < maxLines; i += 1) {
    const ch = text[i];
    if (ch === '"') inQuotes = !inQuotes;
    else if (inQuotes) continue;
    else if (ch === "," || ch === ";" || ch === "\t") counts[ch] += 1;
    else if (ch === "\n" || ch === "\r") {
      if (!blank) lines.push(counts);
      counts = { ",": 0, ";": 0, "\t": 0 };
      blank = true;
      continue;
    }
    if (ch !== " ") blank = false;
  }
  if (!blank && lines.length < maxLines) lines.push(counts);
  return lines;
}

/** The delimiter that splits most lines into the same non-zero number of fields; "," if none. */
export function detectDelimiter(text: string): Delimiter {
  const lines = countsPerLine(text, 50);
  let best: { d: Delimiter; consistent: number; mode: number } = { d: ",", consistent: 0, mode: 0 };
  for (const d of CANDIDATES) {
    const freq = new Map<number, number>();
    for (const l of lines) if (l[d] > 0) freq.set(l[d], (freq.get(l[d]) ?? 0) + 1);
    for (const [mode, consistent] of freq) {
      if (consistent > best.consistent || (consistent === best.consistent && mode > best.mode)) {
        best = { d, consistent, mode };
      }
    }
  }
  return best.d;
}

/**
 * The first `maxRows` non-blank records of csv text (RFC 4180: quoted fields, "" inside quotes,
 * newlines inside quotes). A record cut by the end of the sample is dropped when `truncated`.
 */
export function parseCsvHead(
  text: string,
  maxRows: number,
  truncated = false,
): { delimiter: Delimiter; rows: string[][] } {
  const explicit = explicitDelimiter(text);
  const body = explicit ? text.slice(explicit.skip) : text;
  const delimiter = explicit?.delimiter ?? detectDelimiter(body);
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let inQuotes = false;
  let i = 0;
  const endRow = (): void => {
    row.push(field);
    field = "";
    if (row.some((c) => c.trim() !== "")) rows.push(row);
    row = [];
  };
  while (i < body.length && rows.length < maxRows) {
    const ch = body[i]!;
    if (inQuotes) {
      if (ch === '"') {
        if (body[i + 1] === '"') {
          field += '"';
          i += 1;
        } else inQuotes = false;
      } else field += ch;
    } else if (ch === '"' && field.trim() === "") {
      field = "";
      inQuotes = true;
    } else if (ch === delimiter) {
      row.push(field);
      field = "";
    } else if (ch === "\r" || ch === "\n") {
      if (ch === "\r" && body[i + 1] === "\n") i += 1;
      endRow();
    } else field += ch;
    i += 1;
  }
  if (rows.length < maxRows && !truncated && (field !== "" || row.length > 0)) endRow();
  return { delimiter, rows };
}

/** The first `maxRows` non-blank lines of a .txt list (one address per line). */
export function parseTxtHead(text: string, maxRows: number, truncated = false): string[][] {
  const lines = text.split(/\r\n|\n|\r/);
  if (truncated) lines.pop();
  return lines
    .filter((l) => l.trim() !== "")
    .slice(0, maxRows)
    .map((l) => [l.trim()]);
}
