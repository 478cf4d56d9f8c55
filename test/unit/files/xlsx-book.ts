// Test workbooks without a spreadsheet library. `xlsxOf` builds a workbook the way Excel saves
// one (shared strings with rich-text runs, a date style, formulas with cached results, hyperlinks
// in sheet relationships, hidden sheets), through a small builder shaped like exceljs' API so
// tests read as before. `readXlsxBook` is an independent reader for checking our writer's output:
// its own zip directory walk and inflateRawSync, regular expressions for the XML, cell types kept.
import { inflateRawSync } from "node:zlib";
import { buildZip, deflated, type RawEntry } from "./helpers.ts";

export type BookCell =
  | string
  | number
  | boolean
  | Date
  | null
  | undefined
  | { richText: readonly { text: string; font?: { bold?: boolean; italic?: boolean } }[] }
  | { text: string; hyperlink: string }
  | { formula: string; result?: string | number | boolean }
  | { error: string };

export interface BookSheet {
  readonly name: string;
  state: "visible" | "hidden";
  addRow(cells: readonly BookCell[]): BookSheet;
  addRows(rows: readonly (readonly BookCell[])[]): BookSheet;
}

export interface Book {
  addWorksheet(name: string): BookSheet;
}

const NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
const NS_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const NS_PKG = "http://schemas.openxmlformats.org/package/2006/relationships";
const DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

const esc = (s: string): string =>
  s.replace(/[<>&"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[c] ?? c);
const tXml = (s: string): string =>
  /^\s|\s$/.test(s) ? `<t xml:space="preserve">${esc(s)}</t>` : `<t>${esc(s)}</t>`;
const col = (i: number): string => {
  let s = "";
  for (let x = i + 1; x > 0; x = Math.floor((x - 1) / 26)) s = String.fromCharCode(65 + ((x - 1) % 26)) + s;
  return s;
};
const serial = (d: Date): number => d.getTime() / 86_400_000 + 25569;

class Strings {
  readonly items: string[] = [];
  private readonly index = new Map<string, number>();
  add(siXml: string): number {
    let i = this.index.get(siXml);
    if (i === undefined) {
      i = this.items.length;
      this.items.push(siXml);
      this.index.set(siXml, i);
    }
    return i;
  }
}

function stringCell(ref: string, text: string, strings: Strings | null): string {
  return strings
    ? `<c r="${ref}" t="s"><v>${String(strings.add(`<si>${tXml(text)}</si>`))}</v></c>`
    : `<c r="${ref}" t="inlineStr"><is>${tXml(text)}</is></c>`;
}

function cellXml(ref: string, v: BookCell, strings: Strings | null, links: string[]): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return stringCell(ref, v, strings);
  if (typeof v === "number") return `<c r="${ref}"><v>${String(v)}</v></c>`;
  if (typeof v === "boolean") return `<c r="${ref}" t="b"><v>${v ? 1 : 0}</v></c>`;
  if (v instanceof Date) return `<c r="${ref}" s="1"><v>${String(serial(v))}</v></c>`;
  if ("richText" in v) {
    const runs = v.richText
      .map((r) => {
        const pr = r.font ? `<rPr>${r.font.bold ? "<b/>" : ""}${r.font.italic ? "<i/>" : ""}</rPr>` : "";
        return `<r>${pr}${tXml(r.text)}</r>`;
      })
      .join("");
    const si = `<si>${runs}</si>`;
    return strings
      ? `<c r="${ref}" t="s"><v>${String(strings.add(si))}</v></c>`
      : `<c r="${ref}" t="inlineStr"><is>${runs}</is></c>`;
  }
  if ("hyperlink" in v) {
    links.push(`<hyperlink ref="${ref}" r:id="rIdLink${String(links.length + 1)}"/>`);
    return stringCell(ref, v.text, strings);
  }
  if ("formula" in v) {
    const r = v.result;
    const t = typeof r === "string" ? ' t="str"' : typeof r === "boolean" ? ' t="b"' : "";
    const cached =
      r === undefined ? "" : `<v>${typeof r === "boolean" ? (r ? "1" : "0") : esc(String(r))}</v>`;
    return `<c r="${ref}"${t}><f>${esc(v.formula)}</f>${cached}</c>`;
  }
  return `<c r="${ref}" t="e"><v>${esc(v.error)}</v></c>`;
}

interface SheetData {
  name: string;
  state: "visible" | "hidden";
  rows: (readonly BookCell[])[];
}

function sheetParts(index: number, sheet: SheetData, strings: Strings | null): RawEntry[] {
  const links: string[] = [];
  const rows = sheet.rows
    .map((cells, r) => {
      const xml = cells.map((v, c) => cellXml(`${col(c)}${String(r + 1)}`, v, strings, links)).join("");
      return `<row r="${String(r + 1)}">${xml}</row>`;
    })
    .join("");
  const path = `xl/worksheets/sheet${String(index + 1)}.xml`;
  const parts = [
    deflated(
      path,
      `${DECL}<worksheet xmlns="${NS}" xmlns:r="${NS_R}"><sheetData>${rows}</sheetData>` +
        `${links.length > 0 ? `<hyperlinks>${links.join("")}</hyperlinks>` : ""}</worksheet>`,
    ),
  ];
  if (links.length > 0) {
    const rels = links
      .map(
        (_, i) =>
          `<Relationship Id="rIdLink${String(i + 1)}" Type="${NS_R}/hyperlink" Target="mailto:x@example.com" TargetMode="External"/>`,
      )
      .join("");
    parts.push(
      deflated(
        `xl/worksheets/_rels/sheet${String(index + 1)}.xml.rels`,
        `${DECL}<Relationships xmlns="${NS_PKG}">${rels}</Relationships>`,
      ),
    );
  }
  return parts;
}

function bookZip(sheets: readonly SheetData[], sharedStrings: boolean): Buffer {
  const strings = sharedStrings ? new Strings() : null;
  const sheetEntries = sheets.flatMap((s, i) => sheetParts(i, s, strings));
  const sheetList = sheets
    .map(
      (s, i) =>
        `<sheet name="${esc(s.name)}" sheetId="${String(i + 1)}"${s.state === "hidden" ? ' state="hidden"' : ""} r:id="rId${String(i + 1)}"/>`,
    )
    .join("");
  const rels = sheets
    .map(
      (_, i) =>
        `<Relationship Id="rId${String(i + 1)}" Type="${NS_R}/worksheet" Target="worksheets/sheet${String(i + 1)}.xml"/>`,
    )
    .join("");
  const overrides = sheets
    .map(
      (_, i) =>
        `<Override PartName="/xl/worksheets/sheet${String(i + 1)}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`,
    )
    .join("");
  // The parts a reader needs come first, so damage early in the archive hits one of them.
  return buildZip([
    deflated(
      "_rels/.rels",
      `${DECL}<Relationships xmlns="${NS_PKG}"><Relationship Id="rId1" Type="${NS_R}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
    ),
    deflated(
      "xl/workbook.xml",
      `${DECL}<workbook xmlns="${NS}" xmlns:r="${NS_R}"><workbookPr/><sheets>${sheetList}</sheets></workbook>`,
    ),
    deflated(
      "xl/_rels/workbook.xml.rels",
      `${DECL}<Relationships xmlns="${NS_PKG}">${rels}` +
        `<Relationship Id="rIdStyles" Type="${NS_R}/styles" Target="styles.xml"/>` +
        (strings
          ? `<Relationship Id="rIdStrings" Type="${NS_R}/sharedStrings" Target="sharedStrings.xml"/>`
          : "") +
        "</Relationships>",
    ),
    deflated(
      "xl/styles.xml",
      `${DECL}<styleSheet xmlns="${NS}"><fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>` +
        '<fills count="1"><fill><patternFill patternType="none"/></fill></fills><borders count="1"><border/></borders>' +
        '<cellStyleXfs count="1"><xf numFmtId="0"/></cellStyleXfs>' +
        '<cellXfs count="2"><xf numFmtId="0" xfId="0"/><xf numFmtId="14" xfId="0" applyNumberFormat="1"/></cellXfs></styleSheet>',
    ),
    ...(strings
      ? [
          deflated(
            "xl/sharedStrings.xml",
            `${DECL}<sst xmlns="${NS}" uniqueCount="${String(strings.items.length)}">${strings.items.join("")}</sst>`,
          ),
        ]
      : []),
    ...sheetEntries,
    deflated(
      "[Content_Types].xml",
      `${DECL}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
        '<Default Extension="xml" ContentType="application/xml"/>' +
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
        `${overrides}</Types>`,
    ),
  ]);
}

/** An xlsx as Excel saves it: shared strings, a date style, formulas with cached results. */
export async function xlsxOf(build: (wb: Book) => void): Promise<Buffer> {
  const sheets: SheetData[] = [];
  build({
    addWorksheet(name: string): BookSheet {
      const data: SheetData = { name, state: "visible", rows: [] };
      sheets.push(data);
      const sheet: BookSheet = {
        name,
        get state() {
          return data.state;
        },
        set state(s) {
          data.state = s;
        },
        addRow(cells) {
          data.rows.push(cells);
          return sheet;
        },
        addRows(rows) {
          for (const r of rows) data.rows.push(r);
          return sheet;
        },
      };
      return sheet;
    },
  });
  await Promise.resolve();
  return bookZip(sheets, true);
}

/** A one-sheet xlsx; by default with inline strings (no sharedStrings.xml), as streaming writers save it. */
export async function streamedXlsxOf(
  rows: readonly (readonly (string | number)[])[],
  { sheetName = "Sheet1", useSharedStrings = false }: { sheetName?: string; useSharedStrings?: boolean } = {},
): Promise<Buffer> {
  await Promise.resolve();
  return bookZip([{ name: sheetName, state: "visible", rows: [...rows] }], useSharedStrings);
}

// ---------------------------------------------------------------------------------------------
// Reading back, independently of src/files/parse.

/** Cell types as a spreadsheet program reports them. */
export const ValueType = {
  Null: "null",
  Number: "number",
  String: "string",
  Boolean: "boolean",
  Date: "date",
  Error: "error",
  Formula: "formula",
} as const;
export type ValueType = (typeof ValueType)[keyof typeof ValueType];

export type BookValue = string | number | boolean | Date;

export interface ReadCell {
  value: BookValue;
  type: ValueType;
}

export interface ReadSheet {
  name: string;
  /** Indexed by row number − 1 and column index; missing rows and cells are absent (sparse). */
  rows: (ReadCell | undefined)[][];
}

/** Every stored file of a zip, found through the central directory and inflated. */
function unzip(data: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  let eocd = data.length - 22;
  while (eocd >= 0 && data.readUInt32LE(eocd) !== 0x06054b50) eocd -= 1;
  if (eocd < 0) throw new Error("not a zip");
  let p = data.readUInt32LE(eocd + 16);
  for (let i = 0; i < data.readUInt16LE(eocd + 10); i += 1) {
    const method = data.readUInt16LE(p + 10);
    const size = data.readUInt32LE(p + 20);
    const nameLength = data.readUInt16LE(p + 28);
    const skip = nameLength + data.readUInt16LE(p + 30) + data.readUInt16LE(p + 32);
    const name = data.toString("utf8", p + 46, p + 46 + nameLength);
    const local = data.readUInt32LE(p + 42);
    const start = local + 30 + data.readUInt16LE(local + 26) + data.readUInt16LE(local + 28);
    const body = data.subarray(start, start + size);
    files.set(name, method === 8 ? inflateRawSync(body) : Buffer.from(body));
    p += 46 + skip;
  }
  return files;
}

const unescape = (s: string): string =>
  s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, e: string) => {
    const named: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
    if (e in named) return named[e]!;
    return String.fromCodePoint(e.startsWith("#x") ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
  });
const attr = (attrs: string, name: string): string | undefined =>
  new RegExp(`(?:^|\\s)${name}="([^"]*)"`).exec(attrs)?.[1];
/** ST_Xstring: `_x000D_` is a CR, `_x005F_` an underscore. */
const xstring = (s: string): string =>
  s.replace(/_x([0-9A-Fa-f]{4})_/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
/** Text of the `<t>` elements of a run list, phonetic runs left out. */
const runText = (xml: string): string =>
  xstring(
    [...xml.replace(/<rPh\b[\s\S]*?<\/rPh>/g, "").matchAll(/<t(?:\s[^>]*)?>([\s\S]*?)<\/t>/g)]
      .map((m) => unescape(m[1]!))
      .join(""),
  );
const columnIndex = (ref: string): number =>
  [.../^[A-Z]+/.exec(ref)![0]].reduce((n, ch) => n * 26 + ch.charCodeAt(0) - 64, 0) - 1;

/** Sheets in tab order with typed cells (dates by their style), read with regular expressions. */
export function readXlsxBook(data: Buffer): ReadSheet[] {
  const files = unzip(data);
  const text = (name: string): string => files.get(name)?.toString("utf8") ?? "";
  const strings = [...text("xl/sharedStrings.xml").matchAll(/<si>([\s\S]*?)<\/si>/g)].map((m) =>
    runText(m[1]!),
  );
  const customFormats = new Map(
    [...text("xl/styles.xml").matchAll(/<numFmt\s([^>]*)\/>/g)].map((m) => [
      attr(m[1]!, "numFmtId"),
      attr(m[1]!, "formatCode") ?? "",
    ]),
  );
  const cellXfs = /<cellXfs[^>]*>([\s\S]*?)<\/cellXfs>/.exec(text("xl/styles.xml"))?.[1] ?? "";
  const dateStyles = [...cellXfs.matchAll(/<xf\s([^>]*?)\/?>/g)].map((m) => {
    const id = attr(m[1]!, "numFmtId") ?? "0";
    const custom = customFormats.get(id);
    return custom !== undefined
      ? /[ymdhs]/.test(custom.replace(/"[^"]*"/g, ""))
      : /^(1[4-9]|2[0-2])$/.test(id);
  });
  const targets = new Map(
    [...text("xl/_rels/workbook.xml.rels").matchAll(/<Relationship\s([^>]*)\/>/g)].map((m) => [
      attr(m[1]!, "Id"),
      attr(m[1]!, "Target"),
    ]),
  );
  return [...text("xl/workbook.xml").matchAll(/<sheet\s([^>]*)\/>/g)].map((m) => {
    const xml = text(`xl/${targets.get(attr(m[1]!, "r:id")) ?? ""}`);
    const rows: (ReadCell | undefined)[][] = [];
    for (const row of xml.matchAll(/<row\s([^>]*?)(?:\/>|>([\s\S]*?)<\/row>)/g)) {
      const cells: (ReadCell | undefined)[] = [];
      for (const c of (row[2] ?? "").matchAll(/<c\s([^>]*?)(?:\/>|>([\s\S]*?)<\/c>)/g)) {
        const a = c[1]!;
        const inner = c[2] ?? "";
        const v = /<v>([\s\S]*?)<\/v>/.exec(inner)?.[1];
        const t = attr(a, "t") ?? "n";
        let cell: ReadCell | undefined;
        if (inner.includes("<f")) cell = { value: unescape(v ?? ""), type: ValueType.Formula };
        else if (t === "s") cell = { value: strings[Number(v)] ?? "", type: ValueType.String };
        else if (t === "inlineStr") cell = { value: runText(inner), type: ValueType.String };
        else if (t === "str") cell = { value: xstring(unescape(v ?? "")), type: ValueType.String };
        else if (t === "b") cell = { value: v === "1", type: ValueType.Boolean };
        else if (t === "e") cell = { value: unescape(v ?? ""), type: ValueType.Error };
        else if (v !== undefined && dateStyles[Number(attr(a, "s") ?? 0)])
          cell = { value: new Date(Math.round((Number(v) - 25569) * 86_400_000)), type: ValueType.Date };
        else if (v !== undefined) cell = { value: Number(v), type: ValueType.Number };
        cells[columnIndex(attr(a, "r")!)] = cell;
      }
      rows[Number(attr(row[1]!, "r")) - 1] = cells;
    }
    return { name: unescape(attr(m[1]!, "name") ?? ""), rows };
  });
}
