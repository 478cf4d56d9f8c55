// Browser-side preview of the first rows of every sheet of an .xlsx workbook (up to
// MAX_PREVIEW_SHEETS): the zip's central directory read by hand, members inflated with the
// browser's DecompressionStream("deflate-raw") (no zip library in the bundle), the XML read with
// DOMParser. Bounded: a sheet is inflated only until it holds `maxRows` rows, shared strings up
// to MAX_SHARED_STRINGS_BYTES.

import type { SheetRows } from "./sheet-choice.ts";

const MAX_SHARED_STRINGS_BYTES = 32 * 1024 * 1024;
const MAX_SHEET_BYTES = 64 * 1024 * 1024;
const MAX_PREVIEW_SHEETS = 20;

interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  localHeaderOffset: number;
}

class PreviewError extends Error {}

function centralDirectory(buf: Uint8Array<ArrayBuffer>): Map<string, ZipEntry> {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  // End of central directory: 22 bytes plus a comment of up to 65,535 bytes, at the end.
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i -= 1) {
    if (view.getUint32(i, true) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new PreviewError("the file is not a zip archive, so not an .xlsx workbook");
  const count = view.getUint16(eocd + 10, true);
  let at = view.getUint32(eocd + 16, true);
  const entries = new Map<string, ZipEntry>();
  const names = new TextDecoder();
  for (let n = 0; n < count; n += 1) {
    if (at + 46 > buf.length || view.getUint32(at, true) !== 0x02014b50)
      throw new PreviewError("the workbook's zip directory is damaged");
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    const name = names.decode(buf.subarray(at + 46, at + 46 + nameLength));
    entries.set(name, {
      name,
      method: view.getUint16(at + 10, true),
      compressedSize: view.getUint32(at + 20, true),
      localHeaderOffset: view.getUint32(at + 42, true),
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/**
 * The member's text, inflated until `stop(textSoFar)` says enough or `maxBytes` is reached
 * (then the text so far is returned and `complete` is false).
 */
async function readMember(
  buf: Uint8Array<ArrayBuffer>,
  entry: ZipEntry,
  maxBytes: number,
  stop: (text: string) => boolean = () => false,
): Promise<{ text: string; complete: boolean }> {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const at = entry.localHeaderOffset;
  if (view.getUint32(at, true) !== 0x04034b50)
    throw new PreviewError("the workbook's zip entries are damaged");
  const start = at + 30 + view.getUint16(at + 26, true) + view.getUint16(at + 28, true);
  const data = buf.subarray(start, start + entry.compressedSize);
  if (entry.method === 0)
    return { text: new TextDecoder().decode(data.subarray(0, maxBytes)), complete: true };
  if (entry.method !== 8) throw new PreviewError("the workbook uses a zip compression browsers cannot read");
  if (typeof DecompressionStream === "undefined")
    throw new PreviewError("this browser cannot unzip files (no DecompressionStream)");
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text: text + decoder.decode(), complete: true };
      bytes += value.byteLength;
      text += decoder.decode(value, { stream: true });
      if (stop(text) || bytes >= maxBytes) return { text, complete: false };
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

const parseXml = (text: string): Document => {
  const doc = new DOMParser().parseFromString(text, "application/xml");
  if (doc.getElementsByTagName("parsererror").length > 0)
    throw new PreviewError("the workbook's XML could not be read");
  return doc;
};

/** Elements by local name, whatever the namespace prefix (some writers use "x:"). */
const byLocalName = (root: Document | Element, name: string): Element[] =>
  Array.from(root.getElementsByTagNameNS("*", name));

/** Text of a shared string or inline string: its <t> runs, phonetic runs (<rPh>) left out. */
function stringItemText(si: Element): string {
  return byLocalName(si, "t")
    .filter((t) => t.parentElement?.localName !== "rPh")
    .map((t) => t.textContent ?? "")
    .join("");
}

/** "BC12" → 54 (0-based column of a cell reference). */
function columnOfRef(ref: string): number | null {
  const letters = /^([A-Z]+)/.exec(ref)?.[1];
  if (!letters) return null;
  let n = 0;
  for (const ch of letters) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

interface SheetRef {
  name: string;
  hidden: boolean;
  path: string;
}

const REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

/**
 * The workbook's sheets in the order the server reads them (src/files/parse/workbook-package.ts):
 * visible sheets in tab order, hidden ones last.
 */
async function sheetsOf(buf: Uint8Array<ArrayBuffer>, entries: Map<string, ZipEntry>): Promise<SheetRef[]> {
  const workbook = entries.get("xl/workbook.xml");
  const rels = entries.get("xl/_rels/workbook.xml.rels");
  if (!workbook || !rels) return [{ name: "Sheet1", hidden: false, path: "xl/worksheets/sheet1.xml" }];
  const targets = new Map(
    byLocalName(parseXml((await readMember(buf, rels, 4 << 20)).text), "Relationship").map((r) => [
      r.getAttribute("Id") ?? "",
      r.getAttribute("Target") ?? "",
    ]),
  );
  const sheets = byLocalName(parseXml((await readMember(buf, workbook, 4 << 20)).text), "sheet").map((el) => {
    const rid = el.getAttributeNS(REL_NS, "id") ?? el.getAttribute("r:id") ?? "";
    const target = targets.get(rid) ?? "";
    return {
      name: el.getAttribute("name") ?? "",
      hidden: (el.getAttribute("state") ?? "visible") !== "visible",
      path: target.startsWith("/") ? target.slice(1) : `xl/${target.replace(/^\.\//, "")}`,
    };
  });
  return [...sheets.filter((x) => !x.hidden), ...sheets.filter((x) => x.hidden)];
}

/** Text up to the end of the `n`-th </row>, closed so that it parses, or null while fewer. */
function firstRowsXml(text: string, n: number): string | null {
  let at = 0;
  for (let i = 0; i < n; i += 1) {
    const end = text.indexOf("</row>", at);
    if (end < 0) {
      const prefixed = /<\/[A-Za-z]+:row>/g;
      prefixed.lastIndex = at;
      const m = prefixed.exec(text);
      if (!m) return null;
      at = m.index + m[0].length;
      continue;
    }
    at = end + "</row>".length;
  }
  const prefix = /<([A-Za-z]+:)?sheetData[\s>]/.exec(text)?.[1] ?? "";
  return `${text.slice(0, at)}</${prefix}sheetData></${prefix}worksheet>`;
}

/** The first `maxRows` rows of each sheet, visible sheets first, at most MAX_PREVIEW_SHEETS. */
export async function previewWorkbook(file: Blob, maxRows: number): Promise<SheetRows[]> {
  const buf = new Uint8Array(await file.arrayBuffer());
  const entries = centralDirectory(buf);
  const sharedEntry = entries.get("xl/sharedStrings.xml");
  let shared: string[] = [];
  if (sharedEntry) {
    const s = await readMember(buf, sharedEntry, MAX_SHARED_STRINGS_BYTES);
    if (!s.complete) throw new PreviewError("the workbook's text table is too large to preview");
    shared = byLocalName(parseXml(s.text), "si").map(stringItemText);
  }
  const sheets: SheetRows[] = [];
  for (const sheet of (await sheetsOf(buf, entries)).slice(0, MAX_PREVIEW_SHEETS)) {
    const entry = entries.get(sheet.path);
    if (!entry) continue;
    sheets.push({
      name: sheet.name,
      hidden: sheet.hidden,
      rows: await sheetRows(buf, entry, shared, maxRows),
    });
  }
  if (sheets.length === 0) throw new PreviewError("the workbook has no sheet");
  return sheets;
}

/** "0.30000000000000004" → "0.3", as a spreadsheet shows it (15 significant digits). */
function numberText(v: string): string {
  const n = Number(v);
  return v.trim() === "" || !Number.isFinite(n) ? v : String(Number(n.toPrecision(15)));
}

async function sheetRows(
  buf: Uint8Array<ArrayBuffer>,
  sheetEntry: ZipEntry,
  shared: readonly string[],
  maxRows: number,
): Promise<string[][]> {
  const sheet = await readMember(buf, sheetEntry, MAX_SHEET_BYTES, (t) => firstRowsXml(t, maxRows) !== null);
  const xml = sheet.complete ? sheet.text : firstRowsXml(sheet.text, maxRows);
  if (xml === null) throw new PreviewError("a sheet is too large to preview");
  const rows: string[][] = [];
  for (const rowEl of byLocalName(parseXml(xml), "row").slice(0, maxRows)) {
    const row: string[] = [];
    let next = 0;
    for (const c of byLocalName(rowEl, "c")) {
      const col = columnOfRef(c.getAttribute("r") ?? "") ?? next;
      next = col + 1;
      if (col > 1000) break;
      const type = c.getAttribute("t");
      const v = byLocalName(c, "v")[0]?.textContent ?? "";
      let text: string;
      if (type === "s") text = shared[Number(v)] ?? "";
      else if (type === "inlineStr")
        text = byLocalName(c, "is")[0] ? stringItemText(byLocalName(c, "is")[0]!) : "";
      else if (type === "b") text = v === "1" ? "TRUE" : "FALSE";
      else text = type === null || type === "n" ? numberText(v) : v;
      while (row.length < col) row.push("");
      row[col] = text;
    }
    if (row.some((cell) => cell.trim() !== "")) rows.push(row);
  }
  return rows;
}
