// Rebuilds an uploaded xlsx into the minimal, canonical package exceljs' streaming reader needs:
// workbook rels, workbook.xml, styles, shared strings, then the worksheets in tab order (visible
// ones first), every part STORED with its exact size and produced by our size-checked inflater.
// Why rebuild instead of handing over the original zip:
//  - exceljs reads parts in archive order and spools any worksheet that comes before
//    sharedStrings.xml (LibreOffice's order) to a temp file; here strings always come first;
//  - it only recognises the exact names xl/worksheets/sheetN.xml, xl/sharedStrings.xml; other
//    writers use other names, resolved here through the relationships;
//  - every byte it sees has passed the limits in zip-guard.ts.
import {
  emptyEocd,
  inflateEntry,
  inflateToBuffer,
  readCentralDirectory,
  storedLocalHeader,
  ZipRefusal,
  type ZipEntry,
  type ZipLimits,
} from "./zip-guard.ts";

/** One worksheet of the upload, in the order it will be read. */
export interface SheetPart {
  name: string;
  hidden: boolean;
  entry: ZipEntry;
}

export interface WorkbookPlan {
  sheets: SheetPart[];
  sharedStrings: ZipEntry | null;
  styles: ZipEntry | null;
  date1904: boolean;
}

const MAX_METADATA_BYTES = 8 * 1024 * 1024;

const megabytes = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

function notAWorkbook(byName: ReadonlyMap<string, ZipEntry>): string {
  const what = byName.has("content.xml")
    ? "an OpenDocument file (.ods); save it as .xlsx or .csv"
    : byName.has("word/document.xml")
      ? "a Word document; put the addresses in a spreadsheet or a .txt file"
      : "not an Excel workbook (it has no workbook part); upload an .xlsx saved by Excel, LibreOffice or Google Sheets, or a CSV";
  return `This zip archive is ${what}.`;
}

const REL_TYPE_SUFFIX = {
  officeDocument: "/officeDocument",
  worksheet: "/worksheet",
  sharedStrings: "/sharedStrings",
  styles: "/styles",
} as const;

function decodeXml(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, e: string) => {
    if (e === "amp") return "&";
    if (e === "lt") return "<";
    if (e === "gt") return ">";
    if (e === "quot") return '"';
    if (e === "apos") return "'";
    const code = e.startsWith("#x") ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : "";
  });
}

export const escapeXml = (s: string): string =>
  s.replace(
    /[<>&"']/g,
    (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[c] ?? c,
  );

/** Attributes of every `<prefix:tag …>` element, by attribute name (prefix kept). */
function elements(xml: string, tag: string): Map<string, string>[] {
  const found: Map<string, string>[] = [];
  const re = new RegExp(`<(?:[A-Za-z_][\\w.-]*:)?${tag}\\b([^>]*)>`, "g");
  for (const m of xml.matchAll(re)) {
    const attrs = new Map<string, string>();
    for (const a of (m[1] ?? "").matchAll(/([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
      attrs.set(a[1]!, decodeXml(a[2] ?? a[3] ?? ""));
    }
    found.push(attrs);
  }
  return found;
}

/** Resolves a relationship target against the directory of the part that owns the rels. */
function resolveTarget(baseDir: string, target: string): string {
  const parts = target.startsWith("/") ? [] : baseDir.split("/").filter(Boolean);
  for (const seg of target.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  return parts.join("/");
}

const dirOf = (path: string): string => path.slice(0, path.lastIndexOf("/") + 1);
const relsPathOf = (path: string): string =>
  `${dirOf(path)}_rels/${path.slice(path.lastIndexOf("/") + 1)}.rels`;

interface Relationship {
  type: string;
  target: string;
}

async function readRels(
  data: Buffer,
  byName: Map<string, ZipEntry>,
  relsPath: string,
  ownerDir: string,
): Promise<Map<string, Relationship>> {
  const rels = new Map<string, Relationship>();
  const entry = byName.get(relsPath.toLowerCase());
  if (!entry) return rels;
  const xml = (await inflateToBuffer(data, entry, MAX_METADATA_BYTES)).toString("utf8");
  for (const a of elements(xml, "Relationship")) {
    const id = a.get("Id");
    const target = a.get("Target");
    if (id && target && a.get("TargetMode") !== "External") {
      rels.set(id, { type: a.get("Type") ?? "", target: resolveTarget(ownerDir, target) });
    }
  }
  return rels;
}

const sheetNumber = (name: string): number =>
  Number(/(\d+)\.xml$/i.exec(name)?.[1] ?? Number.MAX_SAFE_INTEGER);

/** Reads the package structure (central directory, rels, workbook.xml). Throws ZipRefusal. */
export async function planWorkbook(data: Buffer, limits: ZipLimits): Promise<WorkbookPlan> {
  const entries = readCentralDirectory(data, limits);
  const byName = new Map<string, ZipEntry>();
  for (const e of entries) if (!byName.has(e.name.toLowerCase())) byName.set(e.name.toLowerCase(), e);

  const rootRels = await readRels(data, byName, "_rels/.rels", "");
  const office = [...rootRels.values()].find((r) => r.type.endsWith(REL_TYPE_SUFFIX.officeDocument));
  const workbookPath = office?.target ?? "xl/workbook.xml";
  const workbookEntry = byName.get(workbookPath.toLowerCase());
  if (!workbookEntry) throw new ZipRefusal(notAWorkbook(byName));
  const workbookXml = (await inflateToBuffer(data, workbookEntry, MAX_METADATA_BYTES)).toString("utf8");
  const rels = await readRels(data, byName, relsPathOf(workbookPath), dirOf(workbookPath));

  const relEntry = (suffix: string, fallback: string): ZipEntry | null => {
    const rel = [...rels.values()].find((r) => r.type.endsWith(suffix));
    return byName.get((rel?.target ?? fallback).toLowerCase()) ?? null;
  };

  const sheets: SheetPart[] = [];
  const used = new Set<ZipEntry>();
  for (const a of elements(workbookXml, "sheet")) {
    const rid = [...a.entries()].find(([k]) => /^[A-Za-z_][\w.-]*:id$/.test(k))?.[1];
    const rel = rid ? rels.get(rid) : undefined;
    if (!rel || !rel.type.endsWith(REL_TYPE_SUFFIX.worksheet)) continue; // chart sheets, dialog sheets
    const entry = byName.get(rel.target.toLowerCase());
    if (!entry || used.has(entry)) continue;
    used.add(entry);
    const state = a.get("state") ?? "visible";
    sheets.push({
      name: a.get("name") ?? `Sheet${String(sheets.length + 1)}`,
      hidden: state !== "visible",
      entry,
    });
  }
  if (sheets.length === 0) {
    // No usable relationships: fall back on the conventional part names, in numeric order.
    const fallback = entries
      .filter((e) => /^xl\/worksheets\/[^/]+\.xml$/i.test(e.name))
      .sort((x, y) => sheetNumber(x.name) - sheetNumber(y.name));
    fallback.forEach((entry, i) => sheets.push({ name: `Sheet${String(i + 1)}`, hidden: false, entry }));
  }
  if (sheets.length === 0)
    throw new ZipRefusal("The workbook has no worksheet; add the addresses to a sheet and save it again.");
  sheets.sort((x, y) => Number(x.hidden) - Number(y.hidden)); // stable: tab order within each group

  const pr = elements(workbookXml, "workbookPr")[0];
  const date1904 = pr?.get("date1904") === "1" || pr?.get("date1904") === "true";
  const sharedStrings = relEntry(REL_TYPE_SUFFIX.sharedStrings, "xl/sharedStrings.xml");
  const styles = relEntry(REL_TYPE_SUFFIX.styles, "xl/styles.xml");
  if (sharedStrings && sharedStrings.uncompressedSize > limits.maxSharedStringsBytes) {
    throw new ZipRefusal(
      `The workbook holds ${megabytes(sharedStrings.uncompressedSize)} of text, far more than a 10,000-address list; ` +
        "save only the sheet with the addresses, or upload a CSV.",
    );
  }
  if (styles && styles.uncompressedSize > limits.maxStylesBytes) {
    throw new ZipRefusal(
      `The workbook's formatting is ${megabytes(styles.uncompressedSize)}; save the addresses as CSV and upload that.`,
    );
  }
  return { sheets, sharedStrings, styles, date1904 };
}

const NS_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
const NS_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const NS_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships";

function* storedPart(name: string, content: string): Generator<Buffer> {
  const body = Buffer.from(content, "utf8");
  yield storedLocalHeader(name, body.length, 0);
  yield body;
}

async function* storedEntry(name: string, data: Buffer, entry: ZipEntry): AsyncGenerator<Buffer> {
  yield storedLocalHeader(name, entry.uncompressedSize, entry.crc32);
  yield* inflateEntry(data, entry);
}

/** The canonical package as a byte stream for `ExcelJS.stream.xlsx.WorkbookReader`. */
export async function* canonicalPackage(data: Buffer, plan: WorkbookPlan): AsyncGenerator<Buffer> {
  const rels = plan.sheets
    .map(
      (_, i) =>
        `<Relationship Id="rId${String(i + 1)}" Type="${NS_REL}/worksheet" Target="worksheets/sheet${String(i + 1)}.xml"/>`,
    )
    .join("");
  yield* storedPart(
    "xl/_rels/workbook.xml.rels",
    `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="${NS_PKG_REL}">${rels}</Relationships>`,
  );
  const sheets = plan.sheets
    .map(
      (s, i) => `<sheet name="${escapeXml(s.name)}" sheetId="${String(i + 1)}" r:id="rId${String(i + 1)}"/>`,
    )
    .join("");
  yield* storedPart(
    "xl/workbook.xml",
    `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="${NS_MAIN}" xmlns:r="${NS_REL}">` +
      `<workbookPr${plan.date1904 ? ' date1904="1"' : ""}/><sheets>${sheets}</sheets></workbook>`,
  );
  if (plan.styles) yield* storedEntry("xl/styles.xml", data, plan.styles);
  // Always present, so exceljs never spools a worksheet to a temp file while waiting for it.
  if (plan.sharedStrings) yield* storedEntry("xl/sharedStrings.xml", data, plan.sharedStrings);
  else
    yield* storedPart(
      "xl/sharedStrings.xml",
      `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="${NS_MAIN}"/>`,
    );
  for (const [i, sheet] of plan.sheets.entries()) {
    yield* storedEntry(`xl/worksheets/sheet${String(i + 1)}.xml`, data, sheet.entry);
  }
  yield emptyEocd();
}
