// Test helpers: hand-made zips (for bombs and damaged archives), test workbooks (xlsx-book.ts),
// stream sinks.
import type { Readable } from "node:stream";
import { constants, crc32, deflateRawSync } from "node:zlib";
import { readXlsxBook, type ValueType } from "./xlsx-book.ts";

export { readXlsxBook, streamedXlsxOf, ValueType, xlsxOf } from "./xlsx-book.ts";

export interface RawEntry {
  name: string;
  /** Compressed bytes as they go in the archive. */
  body: Buffer;
  method: 0 | 8;
  /** Uncompressed size written in both the local header and the central directory. */
  declaredSize: number;
  flags?: number;
  /** Write the sizes as 0xFFFFFFFF with the real values in a zip64 extra field (APPNOTE 4.5.3). */
  zip64?: boolean;
  /** The content's CRC-32 (0 when not given: only the backup reader checks it). */
  crc32?: number;
}

export const deflated = (name: string, content: string | Buffer): RawEntry => {
  const data = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  return { name, body: deflateRawSync(data), method: 8, declaredSize: data.length, crc32: crc32(data) };
};

export const stored = (name: string, content: string | Buffer): RawEntry => {
  const data = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  return { name, body: data, method: 0, declaredSize: data.length, crc32: crc32(data) };
};

/**
 * A deflate stream of `megabytes` MiB of zeros, built in ~1 KB per MiB: one MiB deflated with a
 * full flush is a self-contained run of non-final blocks, so it can be repeated, then closed
 * with an empty final block. Inflating it really produces all those zeros.
 */
export function zerosDeflated(megabytes: number): Buffer {
  const block = deflateRawSync(Buffer.alloc(1024 * 1024), { finishFlush: constants.Z_FULL_FLUSH });
  return Buffer.concat([...Array.from({ length: megabytes }, () => block), deflateRawSync(Buffer.alloc(0))]);
}

/** Writes a zip by hand, trusting every field it is given (a CRC not given is 0). */
export function buildZip(entries: readonly RawEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, "utf8");
    const extra = Buffer.alloc(e.zip64 ? 20 : 0);
    if (e.zip64) {
      extra.writeUInt16LE(0x0001, 0);
      extra.writeUInt16LE(16, 2);
      extra.writeBigUInt64LE(BigInt(e.declaredSize), 4);
      extra.writeBigUInt64LE(BigInt(e.body.length), 12);
    }
    const csize = e.zip64 ? 0xffffffff : e.body.length;
    const usize = e.zip64 ? 0xffffffff : e.declaredSize;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE((e.flags ?? 0) | 0x800, 6);
    local.writeUInt16LE(e.method, 8);
    local.writeUInt32LE(e.crc32 ?? 0, 14);
    local.writeUInt32LE(csize, 18);
    local.writeUInt32LE(usize, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(extra.length, 28);
    locals.push(local, name, extra, e.body);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE((e.flags ?? 0) | 0x800, 8);
    central.writeUInt16LE(e.method, 10);
    central.writeUInt32LE(e.crc32 ?? 0, 16);
    central.writeUInt32LE(csize, 20);
    central.writeUInt32LE(usize, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt16LE(extra.length, 30);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name, extra);
    offset += 30 + name.length + extra.length + e.body.length;
  }
  const cd = Buffer.concat(centrals);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(Math.min(entries.length, 0xffff), 8);
  eocd.writeUInt16LE(Math.min(entries.length, 0xffff), 10);
  eocd.writeUInt32LE(cd.length, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, eocd]);
}

const NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"';
const NS_R = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';

/** The parts around worksheets of a minimal workbook whose sheets are sheet1.xml, sheet2.xml… */
export function workbookParts(sheetNames: readonly string[]): RawEntry[] {
  const rels = sheetNames
    .map(
      (_, i) =>
        `<Relationship Id="rId${String(i + 1)}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet${String(i + 1)}.xml"/>`,
    )
    .join("");
  const sheets = sheetNames
    .map((n, i) => `<sheet name="${n}" sheetId="${String(i + 1)}" r:id="rId${String(i + 1)}"/>`)
    .join("");
  return [
    deflated(
      "_rels/.rels",
      '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>',
    ),
    deflated(
      "xl/workbook.xml",
      `<?xml version="1.0"?><workbook ${NS} ${NS_R}><sheets>${sheets}</sheets></workbook>`,
    ),
    deflated(
      "xl/_rels/workbook.xml.rels",
      `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rels}</Relationships>`,
    ),
  ];
}

/** Worksheet XML with inline-string cells. */
export function sheetXml(rows: readonly (readonly string[])[]): string {
  const col = (i: number): string => String.fromCharCode(65 + i);
  const body = rows
    .map((cells, r) => {
      const cs = cells
        .map((c, i) => `<c r="${col(i)}${String(r + 1)}" t="inlineStr"><is><t>${c}</t></is></c>`)
        .join("");
      return `<row r="${String(r + 1)}">${cs}</row>`;
    })
    .join("");
  return `<?xml version="1.0"?><worksheet ${NS}><sheetData>${body}</sheetData></worksheet>`;
}

export async function collect(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream)
    parts.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(parts);
}

/** First sheet of an xlsx: every row holding a cell, as values and types up to its last cell. */
export async function readXlsxCells(
  data: Buffer,
): Promise<{ values: unknown[][]; types: (ValueType | null)[][] }> {
  await Promise.resolve();
  const rows = readXlsxBook(data)[0]!.rows.filter((r) => r.some((c) => c !== undefined));
  return {
    values: rows.map((r) => Array.from(r, (c) => c?.value ?? null)),
    types: rows.map((r) => Array.from(r, (c) => c?.type ?? null)),
  };
}

export const addresses = (n: number, domain = "example.com"): string[] =>
  Array.from({ length: n }, (_, i) => `user${String(i)}@${domain}`);

export const elapsedMs = async <T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> => {
  const started = performance.now();
  const result = await fn();
  return { result, ms: performance.now() - started };
};

/**
 * A workbook whose one sheet has `rows` rows of `refsPerRow` cells that all refer to shared
 * string 0, `longChars` characters long (the shape of the attack that expanded a 330 KB file to
 * 2.1 billion characters); with `addresses`, each row starts with an address cell in A.
 */
export function sharedStringBomb(opts: {
  rows: number;
  refsPerRow: number;
  longChars: number;
  addresses?: boolean;
}): Buffer {
  const col = (i: number): string =>
    i < 26 ? String.fromCharCode(65 + i) : String.fromCharCode(64 + Math.floor(i / 26), 65 + (i % 26));
  const first = opts.addresses ? 1 : 0;
  const rows: string[] = [];
  for (let r = 1; r <= opts.rows; r++) {
    let row = `<row r="${r}">`;
    if (opts.addresses) row += `<c r="A${r}" t="inlineStr"><is><t>u${r}@example.com</t></is></c>`;
    for (let c = first; c < first + opts.refsPerRow; c++) row += `<c r="${col(c)}${r}" t="s"><v>0</v></c>`;
    rows.push(`${row}</row>`);
  }
  return sharedStringsBook(["x".repeat(opts.longChars)], rows, opts.rows * opts.refsPerRow);
}

/**
 * A one-sheet workbook with a shared-strings part: `strings` (plain text, no markup) and the
 * sheet's `<row>` elements, which refer to the strings by index; `refs` is the sst's count.
 */
export function sharedStringsBook(strings: readonly string[], rows: readonly string[], refs: number): Buffer {
  const rels = workbookParts(["Sheet1"]).map((e) =>
    e.name === "xl/_rels/workbook.xml.rels"
      ? deflated(
          e.name,
          '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>' +
            '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>' +
            "</Relationships>",
        )
      : e,
  );
  const items = strings.map((t) => `<si><t>${t}</t></si>`).join("");
  return buildZip([
    ...rels,
    deflated(
      "xl/sharedStrings.xml",
      `<?xml version="1.0"?><sst ${NS} count="${refs}" uniqueCount="${strings.length}">${items}</sst>`,
    ),
    deflated(
      "xl/worksheets/sheet1.xml",
      `<?xml version="1.0"?><worksheet ${NS}><sheetData>${rows.join("")}</sheetData></worksheet>`,
    ),
  ]);
}
