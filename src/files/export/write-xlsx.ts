// xlsx result writer: the five fixed SpreadsheetML parts a one-sheet workbook needs, written
// here, and the worksheet streamed row by row through yazl's deflating zip writer. Rows are
// serialised in ~64 KiB batches and nothing else is kept, so memory stays flat whatever the
// task size; backpressure reaches the row source through the zip stream.
// Why not a library: the streaming xlsx writers on npm either take all rows as one array
// (write-excel-file) or pull in archiver and ~40 packages (xlsx-write-stream); exceljs, which
// did stream, brought ~100. The parts below are what Excel itself needs to open a sheet.
import { PassThrough, type Readable } from "node:stream";
import yazl from "yazl";
import { eachRow, type ExportCell, type ExportInput } from "./cells.ts";
import { columnLetter } from "./cell-refs.ts";

// Excel refuses (with a "repair" prompt) cells over 32,767 characters and XML-illegal characters,
// and has 16,384 columns (A…XFD).
const MAX_CELL_CHARS = 32_767;
const MAX_XLSX_COLUMNS = 16_384;
// XML 1.0 §2.2 Char excludes C0 controls other than TAB, LF, CR; U+FFFE/U+FFFF; lone surrogates.
const XML_ILLEGAL =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const BATCH_CHARS = 64 * 1024;
const NS_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
const NS_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const XML_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

// Text goes into inline-string cells (t="inlineStr"), which Excel, LibreOffice and Google Sheets
// show as text and never evaluate, so nothing is escaped: "=SUM(A1)" and "+1 555 6330" come
// back as the user wrote them. XML parsers turn a raw CR into LF anyway (XML 1.0 §2.11); doing
// it here makes that explicit.
function xlsxString(text: string): string {
  const safe = text.replace(XML_ILLEGAL, "\uFFFD").replace(/\r\n?/g, "\n");
  return safe.length > MAX_CELL_CHARS ? safe.slice(0, MAX_CELL_CHARS) : safe;
}

const escapeXml = (s: string): string =>
  s.replace(/[<>&"]/g, (c) => (c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === "&" ? "&amp;" : "&quot;"));

// ST_Xstring: Excel reads `_xHHHH_` in text as an escaped character, so a literal one keeps its
// underscore as `_x005F_`.
const escapeText = (s: string): string => escapeXml(s).replace(/_(?=x[0-9A-Fa-f]{4}_)/g, "_x005F_");

/** Text as the content of a `<t>` element: illegal characters replaced, cut to Excel's cell size, escaped. */
export const cellTextXml = (text: string): string => escapeText(xlsxString(text));

const DATE_STYLE = 1;
const excelSerial = (d: Date): number => d.getTime() / 86_400_000 + 25569;

/** One cell as XML; cells are written as values, never as formulas. Empty cells are left out. */
function cellXml(ref: string, cell: ExportCell): string {
  if (cell === null || cell === undefined) return "";
  if (typeof cell === "string") {
    if (cell === "") return "";
    const text = cellTextXml(cell);
    return `<c r="${ref}" t="inlineStr"><is><t xml:space="preserve">${text}</t></is></c>`;
  }
  if (typeof cell === "number")
    return Number.isFinite(cell) ? `<c r="${ref}"><v>${String(cell)}</v></c>` : "";
  if (typeof cell === "boolean") return `<c r="${ref}" t="b"><v>${cell ? "1" : "0"}</v></c>`;
  if (Number.isNaN(cell.getTime())) return "";
  return `<c r="${ref}" s="${String(DATE_STYLE)}"><v>${String(excelSerial(cell))}</v></c>`;
}

function rowXml(r: number, cells: readonly ExportCell[], letters: string[]): string {
  let xml = `<row r="${String(r)}">`;
  for (let i = 0; i < cells.length; i += 1) {
    letters[i] ??= columnLetter(i + 1);
    xml += cellXml(`${letters[i]}${String(r)}`, cells[i]);
  }
  return `${xml}</row>`;
}

// Sheet names: at most 31 characters, none of []:*?/\ (Excel's rule).
const sheetNameOf = (name: string): string => name.replace(/[[\]:*?/\\]/g, "_").slice(0, 31) || "Results";

/** The fixed parts: content types, relationships, workbook, styles (one date format). */
function packageParts(sheetName: string): [string, string][] {
  return [
    [
      "[Content_Types].xml",
      `${XML_DECL}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
        '<Default Extension="xml" ContentType="application/xml"/>' +
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' +
        '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' +
        "</Types>",
    ],
    [
      "_rels/.rels",
      `${XML_DECL}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
        `<Relationship Id="rId1" Type="${NS_REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
    ],
    [
      "xl/workbook.xml",
      `${XML_DECL}<workbook xmlns="${NS_MAIN}" xmlns:r="${NS_REL}"><bookViews><workbookView/></bookViews>` +
        `<sheets><sheet name="${escapeXml(sheetName)}" sheetId="1" r:id="rId1"/></sheets></workbook>`,
    ],
    [
      "xl/_rels/workbook.xml.rels",
      `${XML_DECL}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
        `<Relationship Id="rId1" Type="${NS_REL}/worksheet" Target="worksheets/sheet1.xml"/>` +
        `<Relationship Id="rId2" Type="${NS_REL}/styles" Target="styles.xml"/></Relationships>`,
    ],
    [
      "xl/styles.xml",
      `${XML_DECL}<styleSheet xmlns="${NS_MAIN}">` +
        '<numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd hh:mm:ss"/></numFmts>' +
        '<fonts count="1"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>' +
        '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>' +
        '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
        '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
        '<cellXfs count="2"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>' +
        '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs>' +
        '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>' +
        "</styleSheet>",
    ],
  ];
}

/** Worksheet XML before the first row: a frozen header row, column widths from the header. */
function sheetHead(header: readonly string[]): string {
  const cols = header
    .map((h, i) => {
      const width = Math.min(50, Math.max(10, h.length + 2));
      return `<col min="${String(i + 1)}" max="${String(i + 1)}" width="${String(width)}" customWidth="1"/>`;
    })
    .join("");
  return (
    `${XML_DECL}<worksheet xmlns="${NS_MAIN}" xmlns:r="${NS_REL}">` +
    '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>' +
    '<selection pane="bottomLeft"/></sheetView></sheetViews><sheetFormatPr defaultRowHeight="15"/>' +
    (cols ? `<cols>${cols}</cols>` : "") +
    "<sheetData>"
  );
}

const sheetTail = (width: number): string =>
  `</sheetData>${width > 0 ? `<autoFilter ref="A1:${columnLetter(width)}1"/>` : ""}</worksheet>`;

const tooWide = (width: number): RangeError =>
  new RangeError(
    `An xlsx sheet has at most ${MAX_XLSX_COLUMNS.toString()} columns; this one would have ${width.toString()}`,
  );

/**
 * One-sheet workbook: a frozen header row with a filter, then the rows. A header wider than
 * Excel's 16,384 columns throws here, before any byte exists; a row wider than that fails the
 * stream (callers bound widths first: a download never gets here with such a row).
 */
export function writeXlsx(input: ExportInput & { sheetName?: string }): Readable {
  const { header, rows } = input;
  if (header.length > MAX_XLSX_COLUMNS) throw tooWide(header.length);
  const zip = new yazl.ZipFile();
  for (const [name, xml] of packageParts(sheetNameOf(input.sheetName ?? "Results"))) {
    zip.addBuffer(Buffer.from(xml, "utf8"), name);
  }
  const sheet = new PassThrough();
  zip.addReadStream(sheet, "xl/worksheets/sheet1.xml");
  zip.end();
  // yazl's outputStream is a PassThrough; typed as the old ReadableStream interface.
  const out = zip.outputStream as PassThrough;
  let stopped = false;
  zip.on("error", (error: Error) => out.destroy(error));
  out.once("close", () => {
    stopped = true;
    sheet.destroy();
  });

  const write = (xml: string): Promise<void> | undefined => {
    if (sheet.write(xml, "utf8") || stopped) return undefined;
    return new Promise<void>((resolve) => {
      const resume = (): void => {
        sheet.off("drain", resume);
        sheet.off("close", resume);
        resolve();
      };
      sheet.on("drain", resume);
      sheet.on("close", resume);
    });
  };
  const build = async (): Promise<void> => {
    const letters: string[] = [];
    let batch = sheetHead(header) + rowXml(1, header, letters);
    let r = 1;
    for await (const row of eachRow(rows)) {
      if (stopped) return;
      if (row.length > MAX_XLSX_COLUMNS) throw tooWide(row.length);
      r += 1;
      batch += rowXml(r, row, letters);
      if (batch.length >= BATCH_CHARS) {
        await write(batch);
        batch = "";
      }
    }
    await write(batch + sheetTail(header.length));
    sheet.end();
  };
  build().catch((error: unknown) => {
    // yazl does not listen for errors on the sheet stream: it is closed quietly, `out` fails.
    sheet.destroy();
    out.destroy(error instanceof Error ? error : new Error(String(error)));
  });
  return out;
}
