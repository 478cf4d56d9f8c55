// The structure of an uploaded xlsx: which parts hold the worksheets (in tab order, visible ones
// first), the shared strings and the styles, found through the package relationships, so that
// writers using other part names than Excel's (xl/worksheets/sheetN.xml) are read too.
import { elementsOf } from "./xml-reader.ts";
import { ZipRefusal, type ZipArchive, type ZipLimits, type ZipPart } from "./zip-guard.ts";

/** One worksheet of the upload, in the order it will be read. */
export interface SheetPart {
  name: string;
  hidden: boolean;
  part: ZipPart;
}

export interface WorkbookPlan {
  /** The workbook part (xl/workbook.xml in Excel's files). */
  workbookPath: string;
  sheets: SheetPart[];
  sharedStrings: ZipPart | null;
  styles: ZipPart | null;
  /** Serial dates count from 1904-01-01 (old Mac Excel) instead of 1899-12-30. */
  date1904: boolean;
}

const MAX_METADATA_BYTES = 8 * 1024 * 1024;

const megabytes = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

function notAWorkbook(zip: ZipArchive): string {
  const what = zip.part("content.xml")
    ? "an OpenDocument file (.ods); save it as .xlsx or .csv"
    : zip.part("word/document.xml")
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

export const dirOf = (path: string): string => path.slice(0, path.lastIndexOf("/") + 1);
export const relsPathOf = (path: string): string =>
  `${dirOf(path)}_rels/${path.slice(path.lastIndexOf("/") + 1)}.rels`;

export interface Relationship {
  type: string;
  target: string;
}

/** The relationships in `relsPath` by id, targets resolved against `ownerDir`; external ones left out. */
export async function readRels(
  zip: ZipArchive,
  relsPath: string,
  ownerDir: string,
): Promise<Map<string, Relationship>> {
  const rels = new Map<string, Relationship>();
  const part = zip.part(relsPath);
  if (!part) return rels;
  const xml = await zip.read(part, MAX_METADATA_BYTES);
  for (const { attributes: a } of elementsOf(part.name, xml, new Set(["Relationship"]))) {
    if (a.Id && a.Target && a.TargetMode !== "External") {
      rels.set(a.Id, { type: a.Type ?? "", target: resolveTarget(ownerDir, a.Target) });
    }
  }
  return rels;
}

const sheetNumber = (name: string): number =>
  Number(/(\d+)\.xml$/i.exec(name)?.[1] ?? Number.MAX_SAFE_INTEGER);

/** Reads the package structure (rels, workbook.xml) and checks the in-memory parts. Throws ZipRefusal. */
export async function planWorkbook(zip: ZipArchive, limits: ZipLimits): Promise<WorkbookPlan> {
  const rootRels = await readRels(zip, "_rels/.rels", "");
  const office = [...rootRels.values()].find((r) => r.type.endsWith(REL_TYPE_SUFFIX.officeDocument));
  const workbookPath = office?.target ?? "xl/workbook.xml";
  const workbookPart = zip.part(workbookPath);
  if (!workbookPart) throw new ZipRefusal(notAWorkbook(zip));
  const workbook = elementsOf(
    workbookPart.name,
    await zip.read(workbookPart, MAX_METADATA_BYTES),
    new Set(["sheet", "workbookPr"]),
  );
  const rels = await readRels(zip, relsPathOf(workbookPath), dirOf(workbookPath));

  const relPart = (suffix: string, fallback: string): ZipPart | null => {
    const rel = [...rels.values()].find((r) => r.type.endsWith(suffix));
    return zip.part(rel?.target ?? fallback) ?? null;
  };

  const sheets: SheetPart[] = [];
  const used = new Set<ZipPart>();
  for (const { name, attributes: a } of workbook) {
    if (name !== "sheet") continue;
    const rid = Object.entries(a).find(([k]) => /^[A-Za-z_][\w.-]*:id$/.test(k))?.[1];
    const rel = rid ? rels.get(rid) : undefined;
    if (!rel || !rel.type.endsWith(REL_TYPE_SUFFIX.worksheet)) continue; // chart sheets, dialog sheets
    const part = zip.part(rel.target);
    if (!part || used.has(part)) continue;
    used.add(part);
    sheets.push({
      name: a.name ?? `Sheet${String(sheets.length + 1)}`,
      hidden: (a.state ?? "visible") !== "visible",
      part,
    });
  }
  if (sheets.length === 0) {
    // No usable relationships: fall back on the conventional part names, in numeric order.
    const fallback = [...zip.names()]
      .filter((n) => /^xl\/worksheets\/[^/]+\.xml$/.test(n))
      .sort((x, y) => sheetNumber(x) - sheetNumber(y));
    fallback.forEach((n, i) =>
      sheets.push({ name: `Sheet${String(i + 1)}`, hidden: false, part: zip.part(n)! }),
    );
  }
  if (sheets.length === 0)
    throw new ZipRefusal("The workbook has no worksheet; add the addresses to a sheet and save it again.");
  sheets.sort((x, y) => Number(x.hidden) - Number(y.hidden)); // stable: tab order within each group

  const pr = workbook.find((e) => e.name === "workbookPr")?.attributes;
  const date1904 = pr?.date1904 === "1" || pr?.date1904 === "true";
  const sharedStrings = relPart(REL_TYPE_SUFFIX.sharedStrings, "xl/sharedStrings.xml");
  const styles = relPart(REL_TYPE_SUFFIX.styles, "xl/styles.xml");
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
  return { workbookPath: workbookPart.name, sheets, sharedStrings, styles, date1904 };
}
