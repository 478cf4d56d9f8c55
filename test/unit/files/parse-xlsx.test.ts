import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { deflateRawSync } from "node:zlib";
import {
  DEFAULT_ZIP_LIMITS,
  parseListFile,
  writeXlsx,
  type ParseListInput,
  type ParseListResult,
  type ParsedList,
} from "../../../src/files/index.ts";
import { ZipArchive } from "../../../src/files/parse/zip-guard.ts";
import {
  addresses,
  buildZip,
  collect,
  deflated,
  elapsedMs,
  sheetXml,
  stored,
  streamedXlsxOf,
  workbookParts,
  xlsxOf,
  zerosDeflated,
  type RawEntry,
} from "./helpers.ts";

const parse = (data: Buffer, extra: Partial<ParseListInput> = {}): Promise<ParseListResult> =>
  parseListFile({ filename: "list.xlsx", data, maxEmails: 10_000, ...extra });

function ok(result: ParseListResult): ParsedList {
  if (!result.ok) assert.fail(`expected a list, got ${result.problem.code}: ${result.problem.message}`);
  return result.list;
}

function problem(
  result: ParseListResult,
  code: string,
  field: "file" | "email_column" | "sheet" = "file",
): string {
  if (result.ok) assert.fail(`expected ${code}, got a list`);
  assert.equal(result.problem.code, code, result.problem.message);
  assert.equal(result.problem.field, field);
  return result.problem.message;
}

void test("xlsx as Excel saves it: rich text, hyperlinks, formulas, numbers, dates and booleans become text", async () => {
  const data = await xlsxOf((wb) => {
    const ws = wb.addWorksheet("Contacts");
    ws.addRow(["Name", "Email", "Joined", "Score", "Active", "Total"]);
    ws.addRow([
      "Ann",
      "ann@example.com",
      new Date(Date.UTC(2024, 2, 1)),
      0.1 + 0.2,
      true,
      { formula: "D2*2", result: 0.6 },
    ]);
    ws.addRow([
      { richText: [{ text: "B", font: { bold: true } }, { text: "ob" }] },
      { richText: [{ text: "bob@" }, { text: "Example.com", font: { italic: true } }] },
      new Date(Date.UTC(2024, 2, 1, 10, 30)),
      42,
      false,
      { formula: 'CONCAT("x","y")', result: "xy" },
    ]);
    ws.addRow([
      "Cy",
      { text: "cy@example.com", hyperlink: "mailto:cy@example.com" },
      null,
      1234567890123,
      null,
      null,
    ]);
  });
  const list = ok(await parse(data));
  assert.equal(list.format, "xlsx");
  assert.equal(list.sheetName, "Contacts");
  assert.deepEqual(list.header, ["Name", "Email", "Joined", "Score", "Active", "Total"]);
  assert.deepEqual(list.rows, [
    ["Ann", "ann@example.com", "2024-03-01", "0.3", "TRUE", "0.6"],
    ["Bob", "bob@Example.com", "2024-03-01T10:30:00.000Z", "42", "FALSE", "xy"],
    ["Cy", "cy@example.com", "", "1234567890123"],
  ]);
  assert.deepEqual(list.emails, ["ann@example.com", "bob@example.com", "cy@example.com"]);
});

void test("xlsx sheets: two lists are not guessed between; the sheet field or email_column decides", async () => {
  const data = await xlsxOf((wb) => {
    wb.addWorksheet("Empty");
    const a = wb.addWorksheet("Customers");
    a.addRow(["Name", "Email"]);
    a.addRow(["A", "a@customers.example"]);
    const b = wb.addWorksheet("Partners");
    b.addRow(["Partner", "Contact mail", "Email"]);
    b.addRow(["P", "p@partners.example", "q@partners.example"]);
  });
  assert.equal(
    problem(await parse(data), "ambiguous_sheet", "sheet"),
    'The workbook has addresses on 2 sheets: "Customers" (column Email), "Partners" (column Email). ' +
      "Choose one with the sheet field (sheet=Customers), or save the list on a sheet of its own.",
  );
  const customers = ok(await parse(data, { sheet: "Customers" }));
  assert.equal(customers.sheetName, "Customers");
  assert.deepEqual(customers.emails, ["a@customers.example"]);
  const chosen = ok(await parse(data, { sheet: " partners " }));
  assert.equal(chosen.sheetName, "Partners");
  assert.deepEqual(chosen.emails, ["q@partners.example"]);
  assert.equal(
    problem(await parse(data, { sheet: "Leads" }), "sheet_not_found", "sheet"),
    'The workbook has no sheet named "Leads"; its sheets are "Empty", "Customers", "Partners".',
  );

  // Only one sheet has the column asked for by name: it is the list.
  const partners = ok(await parse(data, { emailColumn: "contact MAIL" }));
  assert.equal(partners.sheetName, "Partners");
  assert.equal(partners.emailColumn, 1);
  assert.deepEqual(partners.emails, ["p@partners.example"]);

  const missing = problem(await parse(data, { emailColumn: "Correo" }), "column_not_found", "email_column");
  assert.equal(
    missing,
    'No sheet has a column named "Correo"; the first sheet\'s header row has: Name, Email.',
  );

  // A column number holding addresses on both sheets is as ambiguous; on one sheet only, it is that one.
  problem(await parse(data, { emailColumn: "2" }), "ambiguous_sheet", "sheet");
  assert.equal(ok(await parse(data, { emailColumn: "2", sheet: "Customers" })).sheetName, "Customers");
  assert.equal(ok(await parse(data, { emailColumn: "3" })).sheetName, "Partners");
  problem(await parse(data, { emailColumn: "3", sheet: "Customers" }), "column_not_found", "email_column");
});

void test("xlsx sheets: the sheet whose header says email wins over a stray address on a notes sheet", async () => {
  const data = await xlsxOf((wb) => {
    const notes = wb.addWorksheet("Read me");
    notes.addRow(["Questions to help@crm.example"]);
    notes.addRow(["Exported 2024-12-01"]);
    const list = wb.addWorksheet("Contacts");
    list.addRow(["Name", "Email"]);
    list.addRow(["Ann", "ann@example.com"]);
    list.addRow(["Ben", "ben@example.com"]);
  });
  const list = ok(await parse(data));
  assert.equal(list.sheetName, "Contacts");
  assert.deepEqual(list.emails, ["ann@example.com", "ben@example.com"]);
  // Two sheets of bare addresses, neither labelled: refused, naming them.
  const bare = await xlsxOf((wb) => {
    wb.addWorksheet("A").addRow(["a@example.com"]);
    wb.addWorksheet("B").addRow(["b@example.com"]);
  });
  assert.match(problem(await parse(bare), "ambiguous_sheet", "sheet"), /"A" \(column 1\), "B" \(column 1\)/);
  // csv and txt have no sheets.
  assert.equal(
    problem(
      await parseListFile({
        filename: "l.csv",
        data: Buffer.from("a@example.com\n"),
        maxEmails: 10,
        sheet: "x",
      }),
      "sheet_not_supported",
      "sheet",
    ),
    "sheet applies to .xlsx workbooks; a .csv file has no sheets, so leave it empty.",
  );
});

void test("xlsx sheets: a cover sheet without addresses is passed over; hidden sheets come last", async () => {
  const data = await xlsxOf((wb) => {
    const secret = wb.addWorksheet("Secret");
    secret.state = "hidden";
    secret.addRow(["s@hidden.example"]);
    wb.addWorksheet("Read me").addRow(["This workbook lists our customers."]);
    const list = wb.addWorksheet("List");
    list.addRow(["l@list.example"]);
  });
  const list = ok(await parse(data));
  assert.equal(list.sheetName, "List");
  assert.deepEqual(list.emails, ["l@list.example"]);

  const none = await xlsxOf((wb) => {
    wb.addWorksheet("One").addRow(["nothing here"]);
    wb.addWorksheet("Two").addRow(["nor here"]);
  });
  assert.match(problem(await parse(none), "no_valid_emails"), /None of the workbook's 2 sheets/);
  assert.match(problem(await parse(await xlsxOf((wb) => wb.addWorksheet("E"))), "no_valid_emails"), /empty/);
});

void test("xlsx from a streaming writer (inline strings, no sharedStrings part)", async () => {
  const data = await streamedXlsxOf([
    ["email", "n"],
    ["a@example.com", 1],
    ["b@example.com", 2],
  ]);
  const list = ok(await parse(data));
  assert.deepEqual(list.emails, ["a@example.com", "b@example.com"]);
  assert.deepEqual(list.rows[1], ["b@example.com", "2"]);
});

void test("xlsx made by LibreOffice (committed fixture; worksheet stored before sharedStrings)", async () => {
  const data = readFileSync(new URL("../../fixtures/files/contacts-libreoffice.xlsx", import.meta.url));
  const list = ok(await parseListFile({ filename: "contacts-libreoffice.xlsx", data, maxEmails: 10_000 }));
  assert.equal(list.sheetName, "contacts-libreoffice");
  assert.deepEqual(list.header, ["Name", "E-mail", "Company", "Signed up", "Score"]);
  assert.equal(list.emailColumn, 1);
  assert.deepEqual(list.rows[0], [
    "José Álvarez",
    "jose.alvarez@example.com",
    "Acme Ibérica",
    "2024-03-01",
    "12.5",
  ]);
  assert.deepEqual(list.emails, [
    "jose.alvarez@example.com",
    "zoe.muller@example.org",
    "user@xn--bcher-kva.example",
  ]);
  assert.deepEqual(list.skipped, { blank: 0, invalid: 1, duplicates: 1 });
  // The csv it was converted from gives the same rows (its empty line is counted as blank).
  const csv = ok(
    await parseListFile({
      filename: "contacts-libreoffice.csv",
      data: readFileSync(new URL("../../fixtures/files/contacts-libreoffice.csv", import.meta.url)),
      maxEmails: 10_000,
    }),
  );
  assert.deepEqual(csv.rows, list.rows);
  assert.deepEqual(csv.emails, list.emails);
});

void test("xlsx saved by exceljs 4.4 (committed fixture): hidden sheet last, cover passed over, typed cells", async () => {
  const data = readFileSync(new URL("../../fixtures/files/contacts-exceljs.xlsx", import.meta.url));
  const list = ok(await parseListFile({ filename: "contacts-exceljs.xlsx", data, maxEmails: 10_000 }));
  assert.equal(list.sheetName, "Contacts");
  assert.deepEqual(list.header, ["Name", "Email", "Joined", "Score", "Active", "Total"]);
  // The same texts exceljs' own streaming reader gave before it was replaced.
  assert.deepEqual(list.rows, [
    ["Ann", "ann@example.com", "2024-03-01", "0.3", "TRUE", "0.6"],
    ["Bob", "bob@Example.com", "2024-03-01T10:30:00.000Z", "42", "FALSE", "xy"],
    ["Cy", "cy@example.com", "", "1234567890123", "", "0"],
    ["Dee & <Co>", "  dee@example.com ", "", "-3.5", "", "#DIV/0!"],
  ]);
  assert.deepEqual(list.emails, ["ann@example.com", "bob@example.com", "cy@example.com", "dee@example.com"]);
});

const NS_MAIN = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"';
const sheetOfRows = (rows: string): string =>
  `<?xml version="1.0" encoding="UTF-8"?><worksheet ${NS_MAIN}><sheetData>${rows}</sheetData></worksheet>`;
const oneSheet = (sheet: string, extra: RawEntry[] = []): Buffer =>
  buildZip([...workbookParts(["S"]), ...extra, deflated("xl/worksheets/sheet1.xml", sheet)]);

void test("xlsx cells: formula results by type, date styles, phonetic runs, _xHHHH_ escapes, prefixes, missing r", async () => {
  const styles = deflated(
    "xl/styles.xml",
    `<styleSheet ${NS_MAIN}><numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/>` +
      '<numFmt numFmtId="165" formatCode="0.00&quot; days&quot;"/></numFmts>' +
      '<cellStyleXfs count="1"><xf numFmtId="22"/></cellStyleXfs>' +
      '<cellXfs count="4"><xf numFmtId="0"/><xf numFmtId="164"/><xf numFmtId="165"/><xf numFmtId="14"/></cellXfs>' +
      '<dxfs count="1"><dxf><numFmt numFmtId="166" formatCode="yyyy"/></dxf></dxfs></styleSheet>',
  );
  const sst = deflated(
    "xl/sharedStrings.xml",
    `<sst ${NS_MAIN}><si><r><t>漢字</t></r><rPh sb="0" eb="2"><t>カンジ</t></rPh></si><si><t>line_x000D_\nnext _x005F_x0041_</t></si></sst>`,
  );
  const rows =
    '<row r="1"><c r="A1" t="inlineStr"><is><t>Email</t></is></c><c r="B1" t="inlineStr"><is><t>Info</t></is></c></row>' +
    '<row r="2"><c r="A2" t="inlineStr"><is><t>a@example.com</t></is></c>' +
    '<c t="b"><f>1=1</f><v>1</v></c><c t="e"><f>1/0</f><v>#DIV/0!</v></c><c s="1"><f>TODAY()</f><v>45352</v></c>' +
    '<c s="2"><v>1.5</v></c><c s="3"><v>45352.5</v></c><c t="s"><v>0</v></c><c t="s"><v>1</v></c>' +
    '<c t="s"><v>7</v></c><c t="d"><v>2024-03-01T10:30:00Z</v></c><c><f>A1</f></c><c t="str"><v>x &amp; y</v></c></row>';
  const list = ok(await parse(oneSheet(sheetOfRows(rows), [styles, sst])));
  assert.deepEqual(list.rows[0], [
    "a@example.com",
    "TRUE",
    "#DIV/0!",
    "2024-03-01",
    "1.5",
    "2024-03-01T12:00:00.000Z",
    "漢字",
    "line\r\nnext _x0041_",
    "",
    "2024-03-01T10:30:00.000Z",
    "",
    "x & y",
  ]);

  // Prefixed element names, cells without a reference, the 1904 date system.
  const prefixed =
    '<x:worksheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><x:sheetData>' +
    '<x:row><x:c t="inlineStr"><x:is><x:t>b@example.com</x:t></x:is></x:c><x:c s="1"><x:v>0</x:v></x:c></x:row>' +
    "</x:sheetData></x:worksheet>";
  const book1904 = buildZip([
    ...workbookParts(["S"]).map((e) =>
      e.name === "xl/workbook.xml"
        ? deflated(
            e.name,
            `<workbook ${NS_MAIN} xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` +
              '<workbookPr date1904="1"/><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>',
          )
        : e,
    ),
    styles,
    deflated("xl/worksheets/sheet1.xml", prefixed),
  ]);
  assert.deepEqual(ok(await parse(book1904)).rows, [["b@example.com", "1904-01-01"]]);
});

void test("xlsx bounds: a cell past XFD, 100-deep nesting, a 5 MB text node, 1 million cells, the time budget", async (t) => {
  const cell = (ref: string): string => `<row><c r="${ref}"><v>1</v></c></row>`;
  assert.match(
    problem(await parse(oneSheet(sheetOfRows(cell("XFE1")))), "invalid_file"),
    /beyond column XFD/,
  );
  const deep = `<worksheet ${NS_MAIN}>${"<a>".repeat(101)}${"</a>".repeat(101)}<sheetData/></worksheet>`;
  assert.match(problem(await parse(oneSheet(deep)), "invalid_file"), /nests elements more than 100 deep/);
  // 5 MB of text in one cell: zeros compress too well for the ratio check, so it is relaxed here.
  const huge = sheetOfRows(`<row><c t="inlineStr"><is><t>${"x".repeat(5 * 1024 * 1024)}</t></is></c></row>`);
  assert.match(
    problem(await parse(oneSheet(huge), { zipLimits: { maxCompressionRatio: 10_000 } }), "invalid_file"),
    /single XML node larger than 4 MB/,
  );
  // Rows that each fill only column XFD would otherwise cost 16,384 cells apiece.
  const wide = sheetOfRows(Array.from({ length: 400 }, (_, i) => cell(`XFD${String(i + 1)}`)).join(""));
  const { result, ms } = await elapsedMs(() => parse(oneSheet(wide)));
  assert.match(problem(result, "invalid_file"), /more than 1,000,000 cells/);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
  const fine = oneSheet(sheetOfRows('<row><c t="inlineStr"><is><t>a@example.com</t></is></c></row>'));
  ok(await parse(fine));
  assert.match(
    problem(await parse(fine, { zipLimits: { maxReadMs: -1 } }), "invalid_file"),
    /took longer than .+ s, the limit for one file/,
  );
});

void test("our own xlsx writer's output reads back: typed cells, dates, escapes, 10,000 streamed rows", async () => {
  const when = new Date(Date.UTC(2024, 2, 1, 10, 30));
  const data = await collect(
    writeXlsx({
      header: ["email", "n", "flag", "when", "note"],
      rows: [
        ["a@example.com", 1.5, true, when, " spaced & <b> _x0041_ "],
        ["b@example.com", null, false, new Date(Date.UTC(2024, 2, 1)), "=1+1"],
        ...addresses(10_000, "bulk.example").map((a, i) => [a, i, null, null, ""]),
      ],
      escapeFormulas: true,
    }),
  );
  const list = ok(await parse(data, { maxEmails: 10_002 }));
  assert.equal(list.sheetName, "Results");
  assert.deepEqual(list.header, ["email", "n", "flag", "when", "note"]);
  assert.deepEqual(list.rows.slice(0, 3), [
    ["a@example.com", "1.5", "TRUE", "2024-03-01T10:30:00.000Z", " spaced & <b> _x0041_ "],
    // xlsx text is an inline string, never evaluated: written as it is, no apostrophe.
    ["b@example.com", "", "FALSE", "2024-03-01", "=1+1"],
    ["user0@bulk.example", "0"],
  ]);
  assert.equal(list.emails.length, 10_002);
});

void test("a minimal hand-made workbook with non-standard part names is read through its relationships", async () => {
  const parts: RawEntry[] = [
    deflated(
      "_rels/.rels",
      '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="/book/main.xml"/></Relationships>',
    ),
    deflated(
      "book/main.xml",
      '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Data &amp; more" sheetId="7" r:id="x"/></sheets></workbook>',
    ),
    deflated(
      "book/_rels/main.xml.rels",
      '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="x" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="data/list.xml"/></Relationships>',
    ),
    stored("book/data/list.xml", sheetXml([["Email"], ["a@example.com"], ["b@example.com"]])),
  ];
  const list = ok(await parse(buildZip(parts)));
  assert.equal(list.sheetName, "Data & more");
  assert.deepEqual(list.emails, ["a@example.com", "b@example.com"]);
});

void test("xlsx that is not a usable workbook: encrypted, old .xls, corrupt, a plain zip, text, bad XML", async (t) => {
  const cfb = (extra: Buffer): Buffer =>
    Buffer.concat([Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]), Buffer.alloc(1024), extra]);
  assert.match(
    problem(await parse(cfb(Buffer.from("EncryptionInfo\0EncryptedPackage", "utf16le"))), "invalid_file"),
    /Password-protected workbooks are not supported/,
  );
  assert.match(
    problem(await parse(cfb(Buffer.from("Workbook", "utf16le"))), "invalid_file"),
    /old Excel \.xls/,
  );

  const good = await xlsxOf((wb) => wb.addWorksheet("S").addRow(["a@example.com"]));
  assert.match(
    problem(await parse(good.subarray(0, Math.floor(good.length / 2))), "invalid_file"),
    /damaged/,
  );
  const flipped = Buffer.from(good);
  flipped.fill(0x55, 200, 600); // garbage inside the compressed parts
  problem(await parse(flipped), "invalid_file");

  assert.match(
    problem(await parse(buildZip([deflated("hello.txt", "hi")])), "invalid_file"),
    /not an Excel workbook/,
  );
  assert.match(problem(await parse(buildZip(workbookParts([]))), "invalid_file"), /no worksheet/);
  assert.match(
    problem(await parse(Buffer.from("email\na@example.com\n")), "content_mismatch"),
    /rename it to \.csv/,
  );
  problem(await parse(Buffer.from("%PDF-1.4 ...")), "content_mismatch");
  problem(await parse(Buffer.alloc(0)), "invalid_file");

  const badXml = buildZip([
    ...workbookParts(["S"]),
    deflated("xl/worksheets/sheet1.xml", "<worksheet><sheetData><row></c></sheetData>"),
  ]);
  problem(await parse(badXml), "invalid_file");
  // A DTD with entity definitions (billion laughs) is not expanded: the sheet is refused.
  const laughs =
    '<?xml version="1.0"?><!DOCTYPE w [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">' +
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>' +
    '<worksheet><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>&d;&d;&d;&d;</t></is></c></row></sheetData></worksheet>';
  const { result, ms } = await elapsedMs(() =>
    parse(buildZip([...workbookParts(["S"]), deflated("xl/worksheets/sheet1.xml", laughs)])),
  );
  assert.equal(result.ok, false);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);

  const encryptedEntry = buildZip([
    ...workbookParts(["S"]),
    { ...stored("xl/worksheets/sheet1.xml", "x"), flags: 1 },
  ]);
  assert.match(problem(await parse(encryptedEntry), "invalid_file"), /Password-protected/);
});

void test("zip bomb: 500 MB of zeros declared in the central directory is refused before inflating", async (t) => {
  const bomb = buildZip([
    ...workbookParts(["S"]),
    {
      name: "xl/worksheets/sheet1.xml",
      body: zerosDeflated(500),
      method: 8,
      declaredSize: 500 * 1024 * 1024,
    },
  ]);
  assert.ok(bomb.length < 1024 * 1024, `bomb is ${String(bomb.length)} bytes`);
  const { result, ms } = await elapsedMs(() => parse(bomb));
  assert.match(problem(result, "invalid_file"), /expands to more than 200 MB/);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
});

void test("zip bomb: an entry compressed beyond 100:1 is refused even under the total cap", async (t) => {
  const bomb = buildZip([
    ...workbookParts(["S"]),
    { name: "xl/worksheets/sheet1.xml", body: zerosDeflated(50), method: 8, declaredSize: 50 * 1024 * 1024 },
  ]);
  const { result, ms } = await elapsedMs(() => parse(bomb));
  assert.match(problem(result, "invalid_file"), /compressed more than 100:1/);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
});

void test("zip bomb that lies: declares 2 KB, inflates to 500 MB; cut off at the declared size", async (t) => {
  const liar = buildZip([
    ...workbookParts(["S"]),
    { name: "xl/worksheets/sheet1.xml", body: zerosDeflated(500), method: 8, declaredSize: 2048 },
  ]);
  const { result, ms } = await elapsedMs(() => parse(liar));
  assert.match(problem(result, "invalid_file"), /beyond its declared size/);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);

  // The same lie in sharedStrings, which is read before any sheet.
  const sst = buildZip([
    ...workbookParts(["S"]),
    { name: "xl/sharedStrings.xml", body: zerosDeflated(300), method: 8, declaredSize: 100 },
    deflated("xl/worksheets/sheet1.xml", sheetXml([["a@example.com"]])),
  ]);
  problem(await parse(sst), "invalid_file");
  // And a short one: declared larger than what it inflates to.
  const short = buildZip([
    ...workbookParts(["S"]),
    { ...deflated("xl/worksheets/sheet1.xml", sheetXml([["a@b.example"]])), declaredSize: 5000 },
  ]);
  problem(await parse(short), "invalid_file");
});

void test("sharedStrings (read whole into memory) has its own cap", async () => {
  const text = `<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">${"<si><t>x</t></si>".repeat(20_000)}</sst>`;
  const zip = buildZip([
    ...workbookParts(["S"]),
    deflated("xl/sharedStrings.xml", text),
    deflated("xl/worksheets/sheet1.xml", sheetXml([["a@example.com"]])),
  ]);
  ok(await parse(zip));
  assert.match(
    problem(await parse(zip, { zipLimits: { maxSharedStringsBytes: 100_000 } }), "invalid_file"),
    /of text/,
  );
});

void test("zip64 size fields are read: honest ones pass, a 5 GB declaration is refused", async () => {
  const sheet = deflated("xl/worksheets/sheet1.xml", sheetXml([["Email"], ["z@example.com"]]));
  const list = ok(await parse(buildZip([...workbookParts(["S"]), { ...sheet, zip64: true }])));
  assert.deepEqual(list.emails, ["z@example.com"]);
  const huge = buildZip([
    ...workbookParts(["S"]),
    {
      name: "xl/worksheets/sheet1.xml",
      body: zerosDeflated(1),
      method: 8,
      declaredSize: 5 * 1024 ** 3,
      zip64: true,
    },
  ]);
  assert.match(problem(await parse(huge), "invalid_file"), /200 MB/);
});

void test("a million tiny entries (or just too many) are refused from the central directory", async (t) => {
  const many = buildZip([
    ...workbookParts(["S"]),
    deflated("xl/worksheets/sheet1.xml", sheetXml([["a@example.com"]])),
    ...Array.from({ length: 10_001 }, (_, i) => stored(`junk/${String(i)}`, "")),
  ]);
  const { result, ms } = await elapsedMs(() => parse(many));
  assert.match(problem(result, "invalid_file"), /parts/);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
});

void test("a sheet with 200,000 rows stops at the row limit; 150,000 empty rows at the blank limit", async (t) => {
  const sheetOf = (rows: string[]): string =>
    `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${rows.join("")}</sheetData></worksheet>`;
  const text = sheetOf(
    Array.from(
      { length: 200_000 },
      (_, i) => `<row r="${String(i + 1)}"><c r="A${String(i + 1)}"><v>${String(i)}</v></c></row>`,
    ),
  );
  const big = buildZip([...workbookParts(["S"]), deflated("xl/worksheets/sheet1.xml", text)]);
  // Reading all 200,000 rows takes ~0.6 s (exceljs: ~1.4 s); the limit stops it after 5,000.
  const { result, ms } = await elapsedMs(() => parse(big, { maxRows: 5_000 }));
  assert.match(problem(result, "too_many_rows"), /more than 5,000 rows/);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);

  const blankXml = sheetOf(
    Array.from({ length: 150_000 }, (_, i) => `<row r="${String(i + 1)}" ht="20" customHeight="1"/>`),
  );
  const blanks = buildZip([
    ...workbookParts(["S"]),
    {
      name: "xl/worksheets/sheet1.xml",
      body: deflateRawSync(blankXml),
      method: 8,
      declaredSize: Buffer.byteLength(blankXml),
    },
  ]);
  const b = await elapsedMs(() => parse(blanks, { maxRows: 5_000 }));
  assert.match(problem(b.result, "too_many_rows"), /more than 5,000 empty rows/);
  t.diagnostic(`blank rows refused in ${b.ms.toFixed(0)} ms`);
});

void test("10,000 addresses in xlsx pass; 10,001 are refused quickly", async (t) => {
  const rowsOf = (n: number): (string | number)[][] => [
    ["Name", "Email", "Id"],
    ...addresses(n).map((a, i) => [`Person ${String(i)}`, a, i]),
  ];
  const tenK = await streamedXlsxOf(rowsOf(10_000), { useSharedStrings: true });
  const { result: passed, ms: passMs } = await elapsedMs(() => parse(tenK));
  assert.equal(ok(passed).emails.length, 10_000);
  t.diagnostic(`10,000 passed in ${passMs.toFixed(0)} ms`);

  const over = await streamedXlsxOf(rowsOf(10_001), { useSharedStrings: true });
  const { result, ms } = await elapsedMs(() => parse(over));
  assert.match(problem(result, "too_many_emails"), /more than 10,000 addresses/);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
});

// Every budget of an xlsx read is per FILE. A sheet that alone passes a limit
// does not get the limit again for every further sheet of the workbook.
void test("per-file budgets: sheets read, rows and cells of all sheets together, XML elements, inflated bytes", async () => {
  const noteRow = (r: number): string =>
    `<row r="${String(r)}"><c r="A${String(r)}" t="inlineStr"><is><t>note</t></is></c></row>`;
  // Half note rows, half blank rows: within both per-sheet limits of the rows test below.
  const sheetWith = (rows: number): string =>
    sheetOfRows(
      Array.from({ length: rows }, (_, i) =>
        i % 2 === 0 ? noteRow(i + 1) : `<row r="${String(i + 1)}"/>`,
      ).join(""),
    );
  const book = (sheets: readonly string[]): Buffer => {
    const names = sheets.map((_, i) => `S${String(i + 1)}`);
    return buildZip([
      ...workbookParts(names),
      ...sheets.map((xml, i) => deflated(`xl/worksheets/sheet${String(i + 1)}.xml`, xml)),
    ]);
  };
  const listSheet = sheetOfRows('<row><c t="inlineStr"><is><t>a@example.com</t></is></c></row>');

  // Sheets: address-less sheets are passed over, but only so many of them.
  const covers = (n: number): string[] => Array.from({ length: n }, () => sheetWith(1));
  ok(await parse(book([...covers(3), listSheet]), { zipLimits: { maxSheets: 4 } }));
  assert.match(
    problem(await parse(book([...covers(4), listSheet]), { zipLimits: { maxSheets: 4 } }), "invalid_file"),
    /has 5 sheets and no list was found in the first 4, the most read from one file/,
  );

  // Rows: each sheet of 30 address-less rows (15 blank) passes the per-sheet limits (20 non-blank,
  // 20 blank); two of them spend the file's 40, so the third is never read.
  const limits = { maxRows: 20, maxBlankRows: 20 };
  ok(await parse(book([sheetWith(30), listSheet]), limits));
  assert.match(
    problem(await parse(book([sheetWith(30), sheetWith(30), listSheet]), limits), "too_many_rows"),
    /more than 40 rows \(blank ones included\) in its sheets, the most read from one file \(stopped in sheet 2 of 3\)/,
  );

  // Cells: 600 in each of two sheets; the file may hold 1,000.
  const wideRows = (rows: number): string =>
    sheetOfRows(
      Array.from({ length: rows }, (_, r) => `<row><c r="F${String(r + 1)}"><v>1</v></c></row>`).join(""),
    );
  ok(await parse(book([wideRows(100), listSheet]), { zipLimits: { maxCells: 1_000 } }));
  assert.match(
    problem(
      await parse(book([wideRows(100), wideRows(100), listSheet]), { zipLimits: { maxCells: 1_000 } }),
      "invalid_file",
    ),
    /more than 1,000 cells in its sheets, the most read from one file/,
  );

  // XML elements, whatever they are (here: junk outside the rows), in all parts together.
  const junk = `<worksheet ${NS_MAIN}>${"<x/>".repeat(600)}<sheetData/></worksheet>`;
  ok(await parse(book([junk, listSheet]), { zipLimits: { maxElements: 1_000 } }));
  assert.match(
    problem(
      await parse(book([junk, junk, listSheet]), { zipLimits: { maxElements: 1_000 } }),
      "invalid_file",
    ),
    /more than 1,000 XML elements in its parts, the most read from one file/,
  );

  // Inflated bytes: the sum of the parts really inflated, not only of what the parts declare.
  const parts = book([junk, junk, listSheet]);
  const declared = Buffer.byteLength(junk) * 2 + Buffer.byteLength(listSheet) + 2_000;
  ok(await parse(parts, { zipLimits: { maxTotalUncompressedBytes: declared } }));
  const zip = await ZipArchive.open(parts, { ...DEFAULT_ZIP_LIMITS, maxTotalUncompressedBytes: declared });
  const sheet1 = zip.part("xl/worksheets/sheet1.xml")!;
  await assert.rejects(async () => {
    for (let i = 0; i < 3; i += 1) for await (const chunk of zip.inflate(sheet1)) void chunk;
  }, /The workbook expands to more than 0 MB/);
  zip.close();
});
