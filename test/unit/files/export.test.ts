import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { test } from "node:test";
import { parse as parseCsvSync } from "csv-parse/sync";
import {
  RESULT_COLUMNS,
  buildResultHeader,
  contentDisposition,
  contentTypeFor,
  downloadFilename,
  filledWidth,
  joinResultRow,
  isFormulaText,
  neutraliseFormula,
  parseListFile,
  RESULT_COLUMN_PREFIX,
  resultColumnNames,
  resultFilename,
  rfc5987Value,
  writeCsv,
  writeTxt,
  writeXlsx,
  type ExportCell,
  type ParsedList,
} from "../../../src/files/index.ts";
import { collect, readXlsxCells, ValueType } from "./helpers.ts";

const FORMULAS = ["=1+1", "+cmd", "-2+A3", "@SUM(A1)", "\tx", "\rx", "\u0000x", "＝1+1"];
const ESCAPED = FORMULAS.map((f) => `'${f}`);

async function* slowly<T>(items: readonly T[]): AsyncGenerator<T> {
  for (const item of items) {
    await new Promise((resolve) => setImmediate(resolve));
    yield item;
  }
}

void test("neutraliseFormula: = @ TAB CR NUL (and fullwidth ＝＠) get a leading quote, + and - unless a number follows", () => {
  FORMULAS.forEach((f, i) => assert.equal(neutraliseFormula(f), ESCAPED[i]));
  for (const plain of ["a@example.com", "valid", "1+1", " =x", "'=x", "", "é=", "x-y"]) {
    assert.equal(neutraliseFormula(plain), plain);
  }
});

void test("isFormulaText: phone numbers and numbers after + or - are data; anything with a name, reference or call is a formula", () => {
  const data = [
    "+1 555 6330",
    "+44 (0)20 7946 0958",
    "-42",
    "+33.1.23.45.67.89",
    "-1.5e3",
    "+1.5E+3",
    "+1-555-867-5309",
    "+49 30/1234567",
    "+1\u00A0555\u00A06330", // no-break spaces, as pasted from a web page
    "-1,234.50",
    "-",
    "--",
    "+",
    "-.5",
  ];
  for (const text of data) assert.equal(isFormulaText(text), false, text);
  const formulas = [
    "+SUM(A1)",
    "-cmd|' /C calc'!A0",
    "+A1",
    "-1+A1",
    "+1 555 6330 ext. 2", // letters: escaped, a false alarm that costs one apostrophe
    "+1e3e",
    "-2:3", // a row range
    "+1!A1",
    "=1+1",
    "=+1 555 6330",
    "@SUM(1)",
    "\t+1",
    "\r-1",
    "\u0000x",
    "＝1",
    "＠x",
    "＋SUM(A1)",
    "－A1",
    '+ HYPERLINK("http://evil")',
  ];
  for (const text of formulas) assert.equal(isFormulaText(text), true, JSON.stringify(text));
  assert.equal(neutraliseFormula("+1 555 6330"), "+1 555 6330");
  assert.equal(neutraliseFormula("+SUM(A1)"), "'+SUM(A1)");
});

void test("resultColumnNames: unchanged without a collision, all prefixed with one (trimmed, any case)", () => {
  assert.deepEqual(resultColumnNames(["Name", "Phone", "E-mail"]), [...RESULT_COLUMNS]);
  const prefixed = RESULT_COLUMNS.map((c) => `${RESULT_COLUMN_PREFIX}${c}`);
  assert.equal(RESULT_COLUMN_PREFIX, "mailprobe_");
  assert.deepEqual(resultColumnNames(["Name", " EMAIL "]), prefixed);
  assert.deepEqual(resultColumnNames(["Status"]), prefixed);
  assert.deepEqual(resultColumnNames(["x", "validated_at"]), prefixed);
  // A list that already holds prefixed names (a results file verified again) gets the next prefix.
  const again = resultColumnNames(["email", ...prefixed]);
  assert.deepEqual(
    again,
    RESULT_COLUMNS.map((c) => `mailprobe2_${c}`),
  );
  assert.deepEqual(
    resultColumnNames(["email", "mailprobe_status", "MAILPROBE2_EMAIL"]),
    RESULT_COLUMNS.map((c) => `mailprobe3_${c}`),
  );
  // No header name appears twice, whatever the list is called.
  for (const original of [["email", "status"], ["Email"], ["column_1", "Status "], []]) {
    const header = buildResultHeader(original, original.length);
    const keys = header.map((h) => h.trim().toLowerCase());
    assert.equal(new Set(keys).size, keys.length, header.join(","));
  }
  // The original names are written as the upload had them: spaces and case kept.
  assert.deepEqual(buildResultHeader([" Email ", "Status"], 2).slice(0, 3), [
    " Email ",
    "Status",
    "mailprobe_email",
  ]);
});

void test("writeCsv: BOM, CRLF, header, typed cells, quoting; formula cells neutralised", async () => {
  const rows: ExportCell[][] = [
    ["a@example.com", "valid", true, false, null, 3, undefined],
    ['q"uote, comma', "line\nbreak", -5, 0.5, "", "=1+1", new Date(Date.UTC(2024, 0, 2, 3, 4, 5))],
  ];
  const out = await collect(
    writeCsv({
      header: ["email", "status", "b1", "b2", "n", "x", "at"],
      rows: slowly(rows),
      escapeFormulas: true,
    }),
  );
  assert.deepEqual([...out.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
  const text = out.subarray(3).toString("utf8");
  assert.equal(
    text,
    "email,status,b1,b2,n,x,at\r\n" +
      "a@example.com,valid,true,false,,3,\r\n" +
      '"q""uote, comma","line\nbreak",-5,0.5,,\'=1+1,2024-01-02T03:04:05.000Z\r\n',
  );
  // Typed numbers are data, not text: -5 is written as is even with escaping on.
  const noBom = await collect(writeCsv({ header: ["a"], rows: [["x"]], escapeFormulas: false, bom: false }));
  assert.equal(noBom.toString("utf8"), "a\r\nx\r\n");
});

void test("writeCsv and writeTxt: escapeFormulas neutralises every formula start, false leaves them raw", async () => {
  const rows = FORMULAS.map((f) => [f, "valid"]);
  const escaped = parseCsvSync(
    await collect(writeCsv({ header: ["=HEADER", "status"], rows, escapeFormulas: true })),
    {
      bom: true,
    },
  );
  assert.deepEqual(escaped[0], ["'=HEADER", "status"]);
  const phones = parseCsvSync(
    await collect(
      writeCsv({ header: ["+phone"], rows: [["+1 555 6330"], ["-42"], ["+A1"]], escapeFormulas: true }),
    ),
    { bom: true },
  );
  assert.deepEqual(phones, [["'+phone"], ["+1 555 6330"], ["-42"], ["'+A1"]]);
  assert.deepEqual(
    escaped.slice(1).map((r) => r[0]),
    ESCAPED,
  );
  const raw = parseCsvSync(
    await collect(writeCsv({ header: ["=HEADER", "status"], rows, escapeFormulas: false })),
    {
      bom: true,
    },
  );
  assert.deepEqual(
    raw.slice(1).map((r) => r[0]),
    FORMULAS,
  );

  const txt = (await collect(writeTxt({ header: ["email", "status"], rows, escapeFormulas: true }))).toString(
    "utf8",
  );
  const lines = txt.split("\n");
  assert.equal(lines.length, FORMULAS.length + 1); // one line per row, then the final newline
  assert.equal(lines[0], "'=1+1,valid");
  assert.equal(lines[5], "' x,valid"); // a CR inside a cell became a space: one row, one line
  const rawTxt = (
    await collect(writeTxt({ header: ["email", "status"], rows: [["=1+1", "valid"]], escapeFormulas: false }))
  ).toString();
  assert.equal(rawTxt, "=1+1,valid\n");
});

void test("writeTxt: email,status per line, no header unless asked", async () => {
  const rows = [
    ["a@example.com", "valid"],
    ["b@example.com", "unknown"],
  ];
  assert.equal(
    (await collect(writeTxt({ header: ["email", "status"], rows, escapeFormulas: true }))).toString(),
    "a@example.com,valid\nb@example.com,unknown\n",
  );
  assert.equal(
    (
      await collect(
        writeTxt({ header: ["email", "status"], rows, escapeFormulas: true, includeHeader: true }),
      )
    ).toString(),
    "email,status\na@example.com,valid\nb@example.com,unknown\n",
  );
});

void test("writeXlsx: strings stay strings (never formulas, never escaped), typed cells stay typed", async () => {
  const rows: ExportCell[][] = [
    ...FORMULAS.map((f) => [f, "valid", 1, true]),
    ["bad\u0001control\uD800", "x".repeat(40_000), null, false],
  ];
  const data = await collect(
    writeXlsx({ header: ["email", "status", "n", "flag"], rows: slowly(rows), escapeFormulas: true }),
  );
  assert.deepEqual([...data.subarray(0, 4)], [0x50, 0x4b, 0x03, 0x04]);
  const { values, types } = await readXlsxCells(data);
  assert.deepEqual(values[0], ["email", "status", "n", "flag"]);
  assert.deepEqual(
    values.slice(1, 1 + FORMULAS.length).map((r) => r[0]),
    // Inline strings are never evaluated: no quote. NUL is not allowed in XML, and XML turns CR
    // into LF.
    FORMULAS.map((e) => e.replace("\u0000", "\uFFFD").replace("\r", "\n")),
  );
  assert.deepEqual(values[1], ["=1+1", "valid", 1, true]);
  for (const t of types.flat()) assert.notEqual(t, ValueType.Formula);
  const last = values[values.length - 1]!;
  assert.equal(last[0], "bad\uFFFDcontrol\uFFFD");
  assert.equal((last[1] as string).length, 32_767);

  const raw = await readXlsxCells(
    await collect(
      writeXlsx({ header: ["email"], rows: FORMULAS.slice(0, 5).map((f) => [f]), escapeFormulas: false }),
    ),
  );
  assert.deepEqual(
    raw.values.slice(1).map((r) => r[0]),
    FORMULAS.slice(0, 5),
  );
  for (const t of raw.types.flat()) assert.equal(t, ValueType.String);
});

void test("writers propagate a failing row source as a stream error (the download aborts, not truncates)", async () => {
  async function* failing(): AsyncGenerator<string[]> {
    yield ["a@example.com", "valid"];
    await Promise.resolve();
    throw new Error("db connection lost");
  }
  for (const write of [writeCsv, writeTxt, writeXlsx]) {
    await assert.rejects(
      collect(write({ header: ["email", "status"], rows: failing(), escapeFormulas: true })),
      /db connection lost/,
    );
  }
});

void test("writeXlsx streams 10,000 rows to a slow consumer, and stops its source when the consumer goes away", async () => {
  let produced = 0;
  async function* many(): AsyncGenerator<string[]> {
    for (let i = 0; i < 10_000; i += 1) {
      produced += 1;
      yield [`user${String(i)}@example.com`, "valid", "x".repeat(50)];
    }
  }
  let bytes = 0;
  const slowSink = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      setImmediate(done);
    },
  });
  await pipeline(
    writeXlsx({ header: ["email", "status", "pad"], rows: many(), escapeFormulas: true }),
    slowSink,
  );
  assert.equal(produced, 10_000);
  assert.ok(bytes > 10_000);

  let pulled = 0;
  async function* endless(): AsyncGenerator<string[]> {
    for (;;) {
      pulled += 1;
      yield [`u${String(pulled)}@example.com`, "valid"];
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  for (const write of [writeCsv, writeXlsx]) {
    pulled = 0;
    const stream = write({ header: ["email", "status"], rows: endless(), escapeFormulas: true });
    await new Promise((resolve) => stream.once("data", resolve));
    stream.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const after = pulled;
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(pulled, after, `${write.name} kept pulling rows after the consumer left`);
  }
});

void test("round trip: parse an upload, write results as csv/xlsx/txt, read them back with the parser", async () => {
  const upload =
    'Name,Email,Note\r\n"Doe, Jane",Jane@Example.com,=HYPERLINK("http://evil")\r\nBob,bob@example.com\r\nNobody,n/a,-\r\n';
  const parsed = await parseListFile({
    filename: "clients.csv",
    data: Buffer.from(upload),
    maxEmails: 10_000,
  });
  assert.ok(parsed.ok);
  const list: ParsedList = parsed.list;
  const result = (email: string | null): ExportCell[] =>
    email === null
      ? [
          "",
          "invalid_syntax",
          false,
          false,
          false,
          false,
          "",
          "",
          "",
          false,
          null,
          false,
          null,
          false,
          "2024-01-01T00:00:00Z",
          "failed",
          "skipped",
          "skipped",
          "skipped",
          "skipped",
        ]
      : [
          email,
          "valid",
          false,
          false,
          true,
          true,
          "example.com",
          "mx.example.com",
          "postfix",
          false,
          null,
          false,
          null,
          true,
          "2024-01-01T00:00:00Z",
          "passed",
          "passed",
          "passed",
          "passed",
          "passed",
        ];
  const header = buildResultHeader(list.header, list.columnCount);
  // The list has its own "Email" column: the result columns are prefixed, no name is there twice.
  assert.deepEqual(header, ["Name", "Email", "Note", ...RESULT_COLUMNS.map((c) => `mailprobe_${c}`)]);
  const rows = list.entries.map((e) =>
    joinResultRow(list.rows[e.rowIndex]!, list.columnCount, result(e.email)),
  );
  assert.equal(rows[1]!.length, header.length); // the short row was padded

  for (const format of ["csv", "xlsx"] as const) {
    const write = format === "csv" ? writeCsv : writeXlsx;
    const data = await collect(write({ header, rows, escapeFormulas: true }));
    const back = await parseListFile({ filename: `results.${format}`, data, maxEmails: 10_000 });
    assert.ok(back.ok, format);
    assert.deepEqual(back.list.header, header, format);
    assert.equal(back.list.emailColumn, 1, format);
    assert.deepEqual(back.list.emails, list.emails, format);
    assert.deepEqual(
      back.list.rows.map((r) => r.slice(0, 3)),
      [
        // csv escapes what a spreadsheet would run; xlsx text cells are never run.
        ["Doe, Jane", "Jane@Example.com", `${format === "csv" ? "'" : ""}=HYPERLINK("http://evil")`],
        ["Bob", "bob@example.com", ""],
        ["Nobody", "n/a", "-"],
      ],
      format,
    );
    assert.deepEqual(back.list.rows[0]!.slice(3, 6), [
      "jane@example.com",
      "valid",
      format === "csv" ? "false" : "FALSE",
    ]);
  }

  const txt = await collect(
    writeTxt({
      header: ["email", "status"],
      rows: list.emails.map((e) => [e, "valid"]),
      escapeFormulas: true,
    }),
  );
  const backTxt = await parseListFile({ filename: "results.txt", data: txt, maxEmails: 10_000 });
  assert.ok(!backTxt.ok); // "a@b,valid" lines are not addresses: txt results are for people and scripts
  const csvOfTxt = await parseListFile({ filename: "results.csv", data: txt, maxEmails: 10_000 });
  assert.ok(csvOfTxt.ok);
  assert.deepEqual(csvOfTxt.list.emails, list.emails);
});

void test("contentTypeFor and RESULT_COLUMNS", () => {
  assert.equal(contentTypeFor("csv"), "text/csv; charset=utf-8");
  assert.equal(contentTypeFor("txt"), "text/plain; charset=utf-8");
  assert.equal(contentTypeFor("xlsx"), "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
  assert.deepEqual(
    [...RESULT_COLUMNS],
    "email,status,is_role_based,is_disposable,has_mx_records,has_reverse_dns,domain_name,host_name,server_type,is_catchall,unknown_reason,needs_physical_verify,did_you_mean,is_free_provider,validated_at,check_syntax,check_dns,check_mx,check_reverse_dns,check_smtp".split(
      ",",
    ),
  );
  assert.deepEqual(buildResultHeader(null, 2).slice(0, 3), ["column_1", "column_2", "email"]);
  assert.deepEqual(buildResultHeader(["a", " "], 3).slice(0, 3), ["a", "column_2", "column_3"]);
  assert.deepEqual(buildResultHeader(["Email"], 1), [
    "Email",
    ...RESULT_COLUMNS.map((c) => `mailprobe_${c}`),
  ]);
  assert.deepEqual(joinResultRow(["x"], 3, [1, 2]), ["x", "", "", 1, 2]);
  // The width given is the download's: a longer header or row is cut to it, never padded past it.
  assert.deepEqual(buildResultHeader(["a", "b", "", ""], 2).slice(0, 3), ["a", "b", "email"]);
  assert.deepEqual(joinResultRow(["x", "", "", ""], 1, [1]), ["x", 1]);
  assert.equal(filledWidth(["x", " ", "y", "", " "]), 3);
  assert.equal(filledWidth(null), 0);
});

void test("writeXlsx: wider than Excel's 16,384 columns throws before any byte (header) or fails the stream (row)", async () => {
  const wide = Array.from({ length: 16_385 }, (_, i) => `c${String(i)}`);
  assert.throws(
    () => writeXlsx({ header: wide, rows: [], escapeFormulas: true }),
    /at most 16384 columns; this one would have 16385/,
  );
  await assert.rejects(
    collect(writeXlsx({ header: ["email"], rows: [["a@example.com"], wide], escapeFormulas: true })),
    /at most 16384 columns/,
  );
  const widest = Array.from({ length: 16_384 }, (_, i) => `c${String(i)}`);
  const data = await collect(writeXlsx({ header: widest, rows: [widest], escapeFormulas: true }));
  assert.equal((await readXlsxCells(data)).values[1]!.length, 16_384);
});

void test("downloadFilename: original stem kept (unicode too), unsafe characters removed, task id fallback", () => {
  const id = "0b9f3c1e-8c1d-4a53-9d7e-2f1a4c6b8e01";
  const cases: [string | null, string][] = [
    ["clients.csv", "clients-results.csv"],
    ["Liste März 2024.xlsx", "Liste März 2024-results.csv"],
    ["C:\\fakepath\\Kunden.csv", "Kunden-results.csv"],
    ["../../etc/passwd", "passwd-results.csv"],
    ["x/c\\d:e*f?g<h>i|j;k,l%m.csv", "d_e_f_g_h_i_j_k_l_m-results.csv"],
    ['my "best" list.csv', "my _best_ list-results.csv"],
    ["evil\r\nSet-Cookie: x.csv", "evilSet-Cookie_ x-results.csv"],
    ["invoice\u202Etxt.exe.csv", "invoicetxt.exe-results.csv"],
    ["zero\u200Bwidth.csv", "zerowidth-results.csv"],
    ["....csv", `task-${id}-results.csv`],
    ["   .csv", `task-${id}-results.csv`],
    ["\u0000\u0001", `task-${id}-results.csv`],
    [null, `task-${id}-results.csv`],
    ["noextension", "noextension-results.csv"],
    [".hidden", "hidden-results.csv"],
  ];
  for (const [original, expected] of cases)
    assert.equal(downloadFilename(original, id, "csv"), expected, String(original));
  assert.equal(downloadFilename("x.csv", id, "xlsx"), "x-results.xlsx");
  const long = downloadFilename(`${"é".repeat(300)}.csv`, id, "txt");
  assert.ok(Buffer.byteLength(long) <= 150 + "-results.txt".length);
  assert.ok(long.endsWith("é-results.txt"));
  assert.equal(downloadFilename("x.csv", 'id"/..', "csv"), "x-results.csv");
  assert.equal(downloadFilename(null, 'id"/..', "csv"), "task-id-results.csv");
  // A download kept to some statuses says which, in the order given.
  assert.equal(downloadFilename("crm export.csv", id, "csv", ["valid"]), "crm export-results-valid.csv");
  assert.equal(
    downloadFilename("crm export.csv", id, "xlsx", ["valid", "catchall"]),
    "crm export-results-valid-catchall.xlsx",
  );
  assert.equal(
    downloadFilename(null, "t1", "txt", ["invalid_syntax", '"/x']),
    "task-t1-results-invalid_syntax-x.txt",
  );
  // The CLI names a local list's results by the same rule.
  assert.equal(resultFilename("list.csv", "list", "xlsx"), "list-results.xlsx");
  assert.equal(resultFilename("....csv", "list", "csv"), "list-results.csv");
});

void test("Content-Disposition: ASCII filename= fallback plus RFC 5987 filename*", () => {
  assert.equal(rfc5987Value("Liste März (1)'s*.csv"), "UTF-8''Liste%20M%C3%A4rz%20%281%29%27s%2A.csv");
  assert.equal(
    contentDisposition("Liste März-results.csv"),
    "attachment; filename=\"Liste Marz-results.csv\"; filename*=UTF-8''Liste%20M%C3%A4rz-results.csv",
  );
  assert.equal(
    contentDisposition("客户-results.xlsx"),
    "attachment; filename=\"__-results.xlsx\"; filename*=UTF-8''%E5%AE%A2%E6%88%B7-results.xlsx",
  );
  // Every character of the header value is visible ASCII: nothing can split or smuggle a header.
  assert.match(contentDisposition(downloadFilename('a\r\nb\u0000"c.csv', "t", "csv")), /^[\x20-\x7E]+$/);
});
