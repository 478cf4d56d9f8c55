// Unit tests of the dashboard's pure helpers (no DOM): the upload preview's csv/txt reading and
// email-column guess, the ETA, download file names and formatting.
import assert from "node:assert/strict";
import { test } from "node:test";
import { filenameOf } from "../../../web/src/lib/content-disposition.ts";
import { decodeHead, detectDelimiter, parseCsvHead, parseTxtHead } from "../../../web/src/lib/csv.ts";
import {
  columnFieldValue,
  columnLetter,
  guessEmailColumn,
  isEmailHeaderName,
} from "../../../web/src/lib/email-column.ts";
import { addSample, etaMs } from "../../../web/src/lib/eta.ts";
import { endOfDay, formatBytes, pointsThrough } from "../../../web/src/lib/format.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

test("decodeHead: UTF-8 BOM dropped, UTF-16 LE/BE by BOM, Windows-1252 fallback", () => {
  assert.equal(decodeHead(bytes("\uFEFFemail\nann@x.test")), "email\nann@x.test");
  const le = new Uint8Array([0xff, 0xfe, ...Array.from("Zoë").flatMap((c) => [c.charCodeAt(0), 0])]);
  assert.equal(decodeHead(le), "Zoë");
  const be = new Uint8Array([0xfe, 0xff, ...Array.from("Zoë").flatMap((c) => [0, c.charCodeAt(0)])]);
  assert.equal(decodeHead(be), "Zoë");
  assert.equal(decodeHead(new Uint8Array([0x5a, 0x6f, 0xeb])), "Zoë", "0xEB alone is not UTF-8: Latin text");
  const euro = bytes("ab€"); // € is 3 bytes in UTF-8
  assert.equal(decodeHead(euro.subarray(0, 4), true), "ab", "a sample cut inside a character drops it");
  assert.equal(decodeHead(euro.subarray(0, 4)), "abâ‚", "a whole file cut there is not UTF-8");
});

test("detectDelimiter: the one that splits lines consistently; ';' for Excel's European csv", () => {
  assert.equal(detectDelimiter("a,b,c\n1,2,3\n"), ",");
  assert.equal(detectDelimiter("Name;E-mail\nDoe, John;j@x.test\nRoe, Ann;a@x.test\n"), ";");
  assert.equal(detectDelimiter("id\tmail\n1\ta@x.test\n"), "\t");
  assert.equal(detectDelimiter("a@x.test\nb@x.test\n"), ",", "one column");
});

test("parseCsvHead: quotes, doubled quotes, newlines in quotes, sep= line, blank lines, row limit", () => {
  const text =
    'sep=;\nName;Note;Email\n"Carol; the ""best""";"two\nlines";carol@x.test\n\nBob;;bob@x.test\nEve;;eve@x.test\n';
  const { delimiter, rows } = parseCsvHead(text, 3);
  assert.equal(delimiter, ";");
  assert.deepEqual(rows, [
    ["Name", "Note", "Email"],
    ['Carol; the "best"', "two\nlines", "carol@x.test"],
    ["Bob", "", "bob@x.test"],
  ]);
});

test("parseCsvHead: a record cut by the end of a truncated sample is dropped", () => {
  assert.deepEqual(parseCsvHead("a,b\n1,2\n3,", 10, true).rows, [
    ["a", "b"],
    ["1", "2"],
  ]);
  assert.deepEqual(parseCsvHead("a,b\r\n1,2", 10).rows, [
    ["a", "b"],
    ["1", "2"],
  ]);
});

test("parseTxtHead: one trimmed address per non-blank line", () => {
  assert.deepEqual(parseTxtHead(" a@x.test \r\n\r\nb@x.test\nc@x", 10, true), [["a@x.test"], ["b@x.test"]]);
});

test("guessEmailColumn: a named header wins, else the column with most addresses", () => {
  const named = [
    ["Name", "E-Mail Address:", "Backup"],
    ["Ann", "", "ann@x.test"],
    ["Bob", "bob@x.test", "b2@x.test"],
  ];
  assert.deepEqual(guessEmailColumn(named), {
    hasHeader: true,
    column: 1,
    reason: "its header “E-Mail Address:” names it",
  });
  const unnamed = [
    ["Acme", "ann@acme.test", "x"],
    ["Beta", "bob@beta.test", "c@d.test"],
  ];
  assert.equal(guessEmailColumn(unnamed).hasHeader, false);
  assert.equal(guessEmailColumn(unnamed).column, 1);
  assert.equal(guessEmailColumn([["Name"], ["Ann"]]).column, -1);
  assert.ok(
    isEmailHeaderName("Courriel") && isEmailHeaderName("email_address") && !isEmailHeaderName("Name"),
  );
});

test("columnFieldValue: the header name when it is unique and not a number, else the 1-based position", () => {
  const rows = [
    ["Name", "Email", "email", "3"],
    ["a", "a@x.test", "b@x.test", "c@x.test"],
  ];
  const guess = { hasHeader: true, column: 1, reason: "" };
  assert.equal(columnFieldValue(rows, guess, 1), "Email");
  assert.equal(columnFieldValue(rows, guess, 2), "3", "a second 'email' would resolve to the first");
  assert.equal(columnFieldValue(rows, guess, 3), "4", "a numeric header would read as a position");
  assert.equal(columnFieldValue(rows, { ...guess, hasHeader: false }, 1), "2");
  assert.deepEqual([0, 25, 26, 701].map(columnLetter), ["A", "Z", "AA", "ZZ"]);
});

test("eta: extrapolates the last minute's rate; none before progress or after 3 s", () => {
  let s = addSample([], { at: 0, done: 0 });
  assert.equal(etaMs(s, 100), null);
  s = addSample(s, { at: 10_000, done: 10 });
  assert.equal(etaMs(s, 100), 90_000);
  s = addSample(s, { at: 80_000, done: 10 });
  assert.equal(s.length, 2, "samples older than a minute are dropped");
  assert.equal(etaMs(s, 100), null, "no progress in the window");
});

test("filenameOf: RFC 6266 filename* first, then the quoted or bare filename, else the fallback", () => {
  assert.equal(
    filenameOf(`attachment; filename="a.csv"; filename*=UTF-8''l%C3%A9ads-results.csv`, "x"),
    "léads-results.csv",
  );
  assert.equal(filenameOf('attachment; filename="my \\"list\\".csv"', "x"), 'my "list".csv');
  assert.equal(filenameOf("attachment; filename=plain.txt", "x"), "plain.txt");
  assert.equal(filenameOf(null, "task-1-results.csv"), "task-1-results.csv");
});

test("format: byte sizes, [from, to) day ends, series trimmed to the last day", () => {
  assert.deepEqual([512, 5222, 10 * 1024 * 1024].map(formatBytes), ["512 B", "5.1 KB", "10 MB"]);
  assert.equal(endOfDay("2026-02-28"), "2026-03-01T00:00:00Z");
  assert.deepEqual(
    pointsThrough([{ date: "2026-01-01" }, { date: "2026-01-02" }, { date: "2026-01-03" }], "2026-01-02").map(
      (p) => p.date,
    ),
    ["2026-01-01", "2026-01-02"],
  );
});
