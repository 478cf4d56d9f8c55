import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  parseListFile,
  type ParseListInput,
  type ParseListResult,
  type ParsedList,
} from "../../../src/files/index.ts";
import { addresses, elapsedMs, xlsxOf } from "./helpers.ts";

const fixture = (name: string): Buffer =>
  readFileSync(new URL(`../../fixtures/files/${name}`, import.meta.url));

const parse = (
  filename: string,
  data: Buffer | string,
  extra: Partial<ParseListInput> = {},
): Promise<ParseListResult> =>
  parseListFile({
    filename,
    data: typeof data === "string" ? Buffer.from(data, "utf8") : data,
    maxEmails: 10_000,
    ...extra,
  });

function ok(result: ParseListResult): ParsedList {
  if (!result.ok) assert.fail(`expected a list, got ${result.problem.code}: ${result.problem.message}`);
  return result.list;
}

function problem(result: ParseListResult, code: string, field: "file" | "email_column" = "file"): string {
  if (result.ok) assert.fail(`expected ${code}, got a list`);
  assert.equal(result.problem.code, code, result.problem.message);
  assert.equal(result.problem.field, field);
  assert.ok(result.problem.message.length > 20);
  return result.problem.message;
}

const utf16 = (text: string, bigEndian: boolean, bom: boolean): Buffer => {
  const le = Buffer.from(text, "utf16le");
  const body = bigEndian ? Buffer.from(le).swap16() : le;
  return bom ? Buffer.concat([Buffer.from(bigEndian ? [0xfe, 0xff] : [0xff, 0xfe]), body]) : body;
};

// --- txt ---------------------------------------------------------------------------------------

void test("txt: one address per line, BOM stripped, CRLF, blanks/duplicates/invalid counted", async () => {
  const text =
    "\uFEFFalice@example.com\r\n\r\n  Bob@Example.COM  \r\nnot an address\r\nalice@example.com\r\n\r\ncarol@example.org";
  const list = ok(await parse("list.TXT", text));
  assert.equal(list.format, "txt");
  assert.equal(list.encoding, "utf-8");
  assert.equal(list.header, null);
  assert.equal(list.emailColumn, 0);
  assert.deepEqual(list.emails, ["alice@example.com", "bob@example.com", "carol@example.org"]);
  assert.deepEqual(list.skipped, { blank: 2, invalid: 1, duplicates: 1 });
  assert.deepEqual(list.rows, [
    ["alice@example.com"],
    ["Bob@Example.COM"],
    ["not an address"],
    ["alice@example.com"],
    ["carol@example.org"],
  ]);
  assert.deepEqual(list.entries[1], { rowIndex: 1, email: "bob@example.com", raw: "Bob@Example.COM" });
  assert.deepEqual(list.entries[2], { rowIndex: 2, email: null, raw: "not an address" });
});

void test("txt: a first line naming the column is a header, any other text line is invalid", async () => {
  const withHeader = ok(await parse("a.txt", "E-mail\na@example.com\n"));
  assert.deepEqual(withHeader.header, ["E-mail"]);
  assert.deepEqual(withHeader.skipped, { blank: 0, invalid: 0, duplicates: 0 });
  const withJunk = ok(await parse("a.txt", "my contacts\na@example.com\n"));
  assert.equal(withJunk.header, null);
  assert.equal(withJunk.skipped.invalid, 1);
});

void test("txt: email_column is refused with column_not_supported", async () => {
  const message = problem(
    await parse("a.txt", "a@example.com", { emailColumn: "1" }),
    "column_not_supported",
    "email_column",
  );
  assert.match(message, /\.txt/);
  // Blank values are "not given".
  ok(await parse("a.txt", "a@example.com", { emailColumn: "  " }));
  ok(await parse("a.txt", "a@example.com", { emailColumn: null }));
});

void test("txt: UTF-16LE with BOM (committed fixture, as Notepad's 'Unicode' saves it)", async () => {
  const list = ok(await parse("list-utf16le-bom.txt", fixture("list-utf16le-bom.txt")));
  assert.equal(list.encoding, "utf-16le");
  assert.deepEqual(list.header, ["email"]);
  assert.deepEqual(list.emails, ["alice@example.com", "bob@example.com"]);
  assert.deepEqual(list.skipped, { blank: 1, invalid: 0, duplicates: 1 });
});

void test("txt: empty, only invalid, and binary files", async () => {
  assert.match(problem(await parse("a.txt", ""), "no_valid_emails"), /empty/);
  assert.match(problem(await parse("a.txt", "\n\n  \n"), "no_valid_emails"), /empty/);
  problem(await parse("a.txt", "foo\nbar@\n@baz.com\n"), "no_valid_emails");
  assert.match(
    problem(await parse("a.txt", "Ann,ann@example.com\n"), "no_valid_emails"),
    /uploaded as \.csv/,
  );
  const binary = Buffer.concat([
    Buffer.from("a@example.com\n"),
    Buffer.from([0, 1, 2, 0, 0, 7, 0, 9, 0, 0, 0]),
  ]);
  problem(await parse("a.txt", binary), "content_mismatch");
});

// --- formats and content checks ----------------------------------------------------------------

void test("unsupported extensions are refused; extensions are case-insensitive", async () => {
  for (const name of ["list.pdf", "list.xls", "list.csv.exe", "list", "list.tsv", ".csv.json"]) {
    problem(await parse(name, "a@example.com"), "unsupported_format");
  }
  assert.match(
    problem(await parse("list.xls", "x"), "unsupported_format"),
    /"\.xls".*\.csv, \.txt or \.xlsx/,
  );
  ok(await parse("LIST.CSV", "a@example.com"));
  ok(await parse("list.Txt", "a@example.com"));
});

void test("content that does not match the extension: zip/xlsx, xls/encrypted, PDF, binary as csv/txt", async () => {
  const xlsx = await xlsxOf((wb) => wb.addWorksheet("S").addRow(["a@example.com"]));
  assert.match(problem(await parse("list.csv", xlsx), "content_mismatch"), /Excel workbook \(\.xlsx\)/);
  problem(await parse("list.txt", xlsx), "content_mismatch");
  const cfb = Buffer.concat([
    Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]),
    Buffer.alloc(512),
  ]);
  assert.match(problem(await parse("list.csv", cfb), "content_mismatch"), /\.xls/);
  assert.match(problem(await parse("list.csv", "%PDF-1.7\n..."), "content_mismatch"), /PDF/);
  const nul = Buffer.from(
    "email,name\na@example.com,\u0000\u0001\u0000x\u0000\u0000\u0000\u0000\u0000",
    "latin1",
  );
  assert.match(problem(await parse("list.csv", nul), "content_mismatch"), /binary/);
});

// --- csv: encodings ----------------------------------------------------------------------------

const SAMPLE = "Name,Email,City\r\nJosé Núñez,jose@example.com,Málaga\r\nZoë,zoe@example.com,Zürich\r\n";

void test("csv encodings: UTF-8 with/without BOM, UTF-16 LE/BE with BOM and LE/BE without BOM", async () => {
  const variants: [string, Buffer][] = [
    ["utf-8", Buffer.from(SAMPLE, "utf8")],
    ["utf-8", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(SAMPLE, "utf8")])],
    ["utf-16le", utf16(SAMPLE, false, true)],
    ["utf-16be", utf16(SAMPLE, true, true)],
    ["utf-16le", utf16(SAMPLE, false, false)],
    ["utf-16be", utf16(SAMPLE, true, false)],
  ];
  for (const [encoding, data] of variants) {
    const list = ok(await parse("c.csv", data));
    assert.equal(list.encoding, encoding);
    assert.deepEqual(list.header, ["Name", "Email", "City"], encoding);
    assert.deepEqual(list.rows[0], ["José Núñez", "jose@example.com", "Málaga"], encoding);
    assert.deepEqual(list.emails, ["jose@example.com", "zoe@example.com"]);
  }
});

void test("csv: invalid UTF-8 falls back to Windows-1252 (Excel's 'CSV' in western locales)", async () => {
  const list = ok(
    await parse("c.csv", Buffer.from("Nom;Email\nMüller;m@example.de\nGarçon;g@example.fr\n", "latin1")),
  );
  assert.equal(list.encoding, "windows-1252");
  assert.equal(list.delimiter, ";");
  assert.deepEqual(list.rows, [
    ["Müller", "m@example.de"],
    ["Garçon", "g@example.fr"],
  ]);
});

void test("csv fixture: Windows-1252, semicolons, CRLF, quoted delimiters and doubled quotes", async () => {
  const list = ok(
    await parse("contacts-windows1252-semicolon.csv", fixture("contacts-windows1252-semicolon.csv")),
  );
  assert.equal(list.encoding, "windows-1252");
  assert.equal(list.delimiter, ";");
  assert.deepEqual(list.header, ["Nom", "Courriel", "Société"]);
  assert.equal(list.emailColumn, 1); // "Courriel" is a known email header
  assert.deepEqual(list.rows[1], ["Dupont; Zoé", "zoe.dupont@example.fr", 'Société "Générale"']);
  assert.deepEqual(list.rows[2], ["René", "pas une adresse", "—"]); // 0x97 is an em dash in 1252
  assert.deepEqual(list.emails, ["francois.perez@example.fr", "zoe.dupont@example.fr"]);
  assert.deepEqual(list.skipped, { blank: 0, invalid: 1, duplicates: 0 });
});

// --- csv: delimiters, quoting, header ----------------------------------------------------------

void test("csv: tab delimiter; quoted fields with embedded delimiters, newlines and quotes; ragged rows", async () => {
  const tsv =
    'id\temail\tnote\n1\ta@example.com\t"line one\nline two"\n2\tb@example.com\n3\t"c@example.com"\t"tab\tinside"\textra\tcells\n';
  const list = ok(await parse("t.csv", tsv));
  assert.equal(list.delimiter, "\t");
  assert.equal(list.emailColumn, 1);
  assert.deepEqual(list.rows, [
    ["1", "a@example.com", "line one\nline two"],
    ["2", "b@example.com"],
    ["3", "c@example.com", "tab\tinside", "extra", "cells"],
  ]);
  assert.equal(list.columnCount, 5);

  const csv =
    'email,comment\r\n"x@example.com","says ""hi"", then, leaves"\r\n"y@example.com","multi\r\nline, with comma"\r\n';
  const l2 = ok(await parse("c.csv", csv));
  assert.equal(l2.delimiter, ",");
  assert.deepEqual(l2.rows, [
    ["x@example.com", 'says "hi", then, leaves'],
    ["y@example.com", "multi\r\nline, with comma"],
  ]);
});

void test("csv: delimiter detection counts outside quotes and breaks ties on where the addresses are", async () => {
  // One "," and one ";" per line: only ";" isolates an address.
  const tie = ok(await parse("c.csv", "john@example.com;Doe, John\nmary@example.com;Roe, Mary\n"));
  assert.equal(tie.delimiter, ";");
  assert.deepEqual(tie.rows[0], ["john@example.com", "Doe, John"]);
  // Commas inside quotes don't count: four ";" fields per line win over the quoted commas.
  const quoted = ok(
    await parse("c.csv", 'a;b;c;d\n"1,2,3,4,5";x@example.com;"6,7";8\n"9,9,9,9,9";y@example.com;"1,1";2\n'),
  );
  assert.equal(quoted.delimiter, ";");
  // A one-column file has no delimiter at all.
  const single = ok(await parse("c.csv", "email\na@example.com\nb@example.com\n"));
  assert.equal(single.delimiter, ",");
  assert.deepEqual(single.emails, ["a@example.com", "b@example.com"]);
  // Excel's explicit "sep=" line.
  const sep = ok(await parse("c.csv", "sep=;\r\nname;email\r\nA, B;a@example.com\r\n"));
  assert.equal(sep.delimiter, ";");
  assert.deepEqual(sep.header, ["name", "email"]);
});

void test("csv header detection: none, unusual names, known names, header only", async () => {
  const none = ok(await parse("c.csv", "Alice,alice@example.com\nBob,bob@example.com\n"));
  assert.equal(none.header, null);
  assert.equal(none.rows.length, 2);
  assert.equal(none.emailColumn, 1);

  // No address in the first row but addresses below: a header, whatever its names.
  const unusual = ok(await parse("c.csv", "Who,Contact,Since\nAlice,alice@example.com,2020\n"));
  assert.deepEqual(unusual.header, ["Who", "Contact", "Since"]);
  assert.equal(unusual.emailColumn, 1);

  // A known header name wins over the address-count rule.
  const both = ok(
    await parse(
      "c.csv",
      "backup,E_Mail\nb1@example.com,p1@example.com\nb2@example.com,p2@example.com\nb3@example.com,\n",
    ),
  );
  assert.equal(both.emailColumn, 1);
  assert.deepEqual(both.emails, ["p1@example.com", "p2@example.com"]);
  assert.equal(both.skipped.blank, 1);

  // …unless that column holds no address at all.
  const emptyNamed = ok(await parse("c.csv", "email,contact\n,a@example.com\n,b@example.com\n"));
  assert.equal(emptyNamed.emailColumn, 1);

  assert.match(problem(await parse("c.csv", "Name,Email\n"), "no_valid_emails"), /only a header row/);
});

void test("csv auto column: the column with most addresses, ties to the leftmost", async () => {
  const most = ok(await parse("c.csv", "a@example.com,x@example.com\nnope,y@example.com\n,z@example.com\n"));
  assert.equal(most.emailColumn, 1);
  const tie = ok(await parse("c.csv", "a@example.com,x@example.com\nb@example.com,y@example.com\n"));
  assert.equal(tie.emailColumn, 0);
  problem(await parse("c.csv", "name,city\nAlice,Paris\nBob,Rome\n"), "no_valid_emails");
});

void test("email_column by header name (case- and space-insensitive) and by 1-based index", async () => {
  const csv =
    "Name,E-mail,Company,Work email\nA,a@example.com,Acme,wa@acme.example\nB,b@example.com,Beta,wb@beta.example\n";
  assert.equal(ok(await parse("c.csv", csv)).emailColumn, 1);
  const byName = ok(await parse("c.csv", csv, { emailColumn: "  WORK EMAIL " }));
  assert.equal(byName.emailColumn, 3);
  assert.deepEqual(byName.emails, ["wa@acme.example", "wb@beta.example"]);
  const byIndex = ok(await parse("c.csv", csv, { emailColumn: "4" }));
  assert.equal(byIndex.emailColumn, 3);
  assert.deepEqual(byIndex.header, ["Name", "E-mail", "Company", "Work email"]);
  // An index works without a header row too.
  const noHeader = ok(await parse("c.csv", "x,a@example.com\ny,b@example.com\n", { emailColumn: "2" }));
  assert.equal(noHeader.header, null);
  assert.equal(noHeader.emailColumn, 1);
});

void test("email_column not found: unknown name, index 0, index out of range; wrong column → no_valid_emails", async () => {
  const csv = "Name,E-mail,Company\nA,a@example.com,Acme\n";
  const message = problem(
    await parse("c.csv", csv, { emailColumn: "mail" }),
    "column_not_found",
    "email_column",
  );
  assert.equal(message, 'No column named "mail"; the header row has: Name, E-mail, Company.');
  assert.match(
    problem(await parse("c.csv", csv, { emailColumn: "0" }), "column_not_found", "email_column"),
    /start at 1/,
  );
  assert.match(
    problem(await parse("c.csv", csv, { emailColumn: "9" }), "column_not_found", "email_column"),
    /Column 9 does not exist; the file has 3 columns/,
  );
  assert.match(
    problem(
      await parse("c.csv", "a@example.com,b\n", { emailColumn: "Email" }),
      "column_not_found",
      "email_column",
    ),
    /no header row/,
  );
  assert.match(problem(await parse("c.csv", csv, { emailColumn: "Company" }), "no_valid_emails"), /Company/);
});

void test("csv: an unclosed quote is invalid_file with the line", async () => {
  const message = problem(
    await parse("c.csv", 'email,name\na@example.com,"Alice\nb@example.com,Bob\n'),
    "invalid_file",
  );
  assert.match(message, /quote/);
});

// --- limits ------------------------------------------------------------------------------------

void test("10,000 addresses pass; 10,001 are refused quickly (csv and txt)", async (t) => {
  const tenK = ["email", ...addresses(10_000)].join("\n");
  const list = ok(await parse("c.csv", tenK));
  assert.equal(list.emails.length, 10_000);

  const over = ["name,email", ...addresses(10_001).map((a, i) => `Person ${String(i)},${a}`)].join("\n");
  const { result, ms } = await elapsedMs(() => parse("c.csv", over));
  assert.match(problem(result, "too_many_emails"), /more than 10,000 addresses/);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);

  // Duplicates do not count towards the limit.
  ok(await parse("c.txt", [...addresses(10_000), ...addresses(5_000)].join("\n")));
  problem(await parse("c.txt", addresses(10_001).join("\n")), "too_many_emails");
  // The limit is a parameter.
  problem(await parse("c.txt", addresses(3).join("\n"), { maxEmails: 2 }), "too_many_emails");
});

void test("rows without addresses are bounded too (too_many_rows)", async (t) => {
  const lines = ["name,email", ...Array.from({ length: 25_000 }, (_, i) => `Person ${String(i)},n/a`)].join(
    "\n",
  );
  const { result, ms } = await elapsedMs(() => parse("c.csv", lines));
  assert.match(problem(result, "too_many_rows"), /more than 20,000 rows/);
  t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
  problem(await parse("c.csv", lines, { maxRows: 100 }), "too_many_rows");
  problem(await parse("c.txt", "\n".repeat(200) + "a@example.com", { maxBlankRows: 100 }), "too_many_rows");
});

// The width of a list is that of its widest real header or cell, at most
// 1,000 columns; trailing empty fields are not columns.
void test("columns: trailing empty fields are cut; more than maxColumns real columns → too_many_columns", async () => {
  // One row of a million empty fields (1 MB) is a blank row, not a million columns.
  const wide = `email,name\nann@example.com,Ann\n${",".repeat(1_000_000)}\nbob@example.com,Bob,,,\n`;
  const list = ok(await parse("c.csv", wide));
  assert.equal(list.columnCount, 2);
  assert.deepEqual(list.header, ["email", "name"]);
  assert.deepEqual(list.rows, [
    ["ann@example.com", "Ann"],
    ["bob@example.com", "Bob"],
  ]);
  assert.equal(list.skipped.blank, 1);
  // A header name or a cell far to the right is real: it sets the width.
  assert.equal(ok(await parse("c.csv", `email,,,note\na@example.com\n`)).columnCount, 4);
  assert.equal(ok(await parse("c.csv", `email\na@example.com,,,,x\n`)).columnCount, 5);

  const cells = (n: number, last: string): string => `${",".repeat(n - 1)}${last}`;
  ok(await parse("c.csv", `email,${cells(999, "x")}\na@example.com\n`));
  assert.match(
    problem(
      await parse("c.csv", `email\na@example.com\nb@example.com,${cells(1_000, "x")}\n`),
      "too_many_columns",
    ),
    /Row 3 of the file has 1,001 columns; a list may have at most 1,000/,
  );
  problem(await parse("c.csv", "email,a,b,c\nx@example.com\n", { maxColumns: 3 }), "too_many_columns");
  // xlsx: the same bound, on the cells the sheet really fills.
  const sheet = await xlsxOf((wb) => {
    const ws = wb.addWorksheet("S");
    ws.addRow(["email"]);
    ws.addRow(["a@example.com", ...Array.from({ length: 1_000 }, () => null), "far right"]);
  });
  assert.match(problem(await parse("c.xlsx", sheet), "too_many_columns"), /has 1,002 columns/);
});

void test("address checks are counted per file: every column full of addresses needs email_column", async () => {
  // 40 columns × 100 rows of distinct addresses and no header: 4,000 cells to check.
  const rows = Array.from({ length: 100 }, (_, r) =>
    Array.from({ length: 40 }, (_, c) => `u${String(r)}c${String(c)}@example.com`).join(","),
  );
  const limits = { maxAddressChecks: 1_000 };
  assert.match(
    problem(await parse("c.csv", rows.join("\n"), limits), "too_many_emails"),
    /more than 1,000 cells holding an "@" in its columns, the most read from one file; name the email column/,
  );
  // Named by email_column, or by an "Email" header: only that column is checked.
  assert.equal(ok(await parse("c.csv", rows.join("\n"), { ...limits, emailColumn: "3" })).emails.length, 100);
  const header = ["Email", ...Array.from({ length: 39 }, (_, c) => `Other ${String(c)}`)].join(",");
  const named = ok(await parse("c.csv", [header, ...rows].join("\n"), limits));
  assert.equal(named.emailColumn, 0);
  assert.equal(named.emails.length, 100);
});
