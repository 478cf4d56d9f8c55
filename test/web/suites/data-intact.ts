// A list's data kept intact, in a real browser (registered by test/web/dashboard.test.ts): a list
// with a phone-number column, uploaded through the Lists page, comes back from the task page's
// download buttons as it was uploaded. The csv download holds every uploaded line byte for byte,
// then "," and the result columns (prefixed, since the list has its own "email" and "Status"
// columns); with formula escaping on (the default) only the cells a spreadsheet would run get a
// leading ', phone numbers and negative numbers none; the xlsx holds every cell as uploaded, no
// apostrophe.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Browser } from "playwright-core";
import { readXlsxBook } from "../../unit/files/helpers.ts";
import { download, heading, nav, newContext, open, pricedStart, signIn, until } from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import type { Stack } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;

// Written as the download writes csv (CRLF, quotes only where needed), so lines compare byte for
// byte. The Phone column holds the formats list owners have; Notes holds formulas.
const LINES = [
  "Name,Phone,Status,email,Notes",
  "Ann,+1 555 6330,lead,ann@acme.test,-42",
  "Bob,+44 (0)20 7946 0958,customer,bob@acme.test,+33.1.23.45.67.89",
  "Carol,-42,lead,carol@acme.test,=SUM(A1)",
  "Dan,+1-555-867-5309,lead,dan@acme.test,-1.5e3",
  `Erin,+33.1.23.45.67.89,"VIP, since 2019",erin@acme.test,+SUM(A1)`,
  "Zed,(555) 123-4567,former,zed@acme.test,-cmd|' /C calc'!A0",
];
const CSV = LINES.map((l) => `${l}\r\n`).join("");
/** The cells a spreadsheet would evaluate: the only ones the default download changes. */
const FORMULAS = ["=SUM(A1)", "+SUM(A1)", "-cmd|' /C calc'!A0"];
const RESULT_PREFIX = "mailprobe_";
/** Result columns of a download (DESIGN §5; checked as a prefix: the list may grow). */
const FIRST_RESULT_COLUMNS = ["email", "status", "is_role_based", "is_disposable"];

/**
 * A csv download's lines, each split into what precedes the result columns and those columns
 * (the result cells hold no comma or quote, so the last `width` commas separate them).
 */
function splitDownload(data: Buffer, width: number): Array<{ original: string; results: string[] }> {
  const text = data.toString("utf8");
  assert.ok(text.startsWith("\uFEFF"), "a UTF-8 BOM (for Excel) before the first line");
  assert.ok(text.endsWith("\r\n"));
  return text
    .slice(1, -2)
    .split("\r\n")
    .map((line) => {
      const cells = line.split(",");
      const results = cells.slice(-width);
      return { original: line.slice(0, line.length - results.join(",").length - 1), results };
    });
}

export function dataIntact(): void {
  before(() => {
    stack = shared.stack;
    browser = shared.browser;
  });

  test("a list with phone numbers: downloads keep every uploaded byte, only formulas escaped, xlsx untouched", async (t) => {
    const user = await stack.createUser(50);
    const context = await newContext(browser);
    t.after(() => context.close());
    const page = await context.newPage();
    await open(page, stack.base);
    await signIn(page, user.api_key);
    await nav(page, "Lists").click();
    await heading(page, "Verify a list");
    await page.getByLabel("File").setInputFiles({
      name: "contacts.csv",
      mimeType: "text/csv",
      buffer: Buffer.from(CSV),
    });
    await page.getByRole("region", { name: "Preview of contacts.csv" }).waitFor();
    assert.match(await page.getByText(/^Detected:/).innerText(), /D: email/);
    await pricedStart(page).click();
    await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/);
    await heading(page, "contacts.csv");
    const progress = page.getByRole("progressbar", { name: "Verification progress" });
    await until(
      "the task reaches 100%",
      async () => (await progress.getAttribute("value")) === "100",
      60_000,
    );

    const downloads = page.getByRole("region", { name: "Download results" });
    const escaping = downloads.getByLabel("Escape formulas");
    assert.equal(await escaping.isChecked(), true, "escaping is on by default");

    // Default: only the formulas get a leading '.
    const escaped = await download(page, downloads.getByRole("button", { name: "Download CSV" }));
    assert.equal(escaped.name, "contacts-results.csv");
    const header = escaped.data.toString("utf8").slice(1).split("\r\n")[0]!.split(",");
    const width = header.length - 5;
    assert.deepEqual(
      header.slice(5, 5 + FIRST_RESULT_COLUMNS.length),
      FIRST_RESULT_COLUMNS.map((c) => RESULT_PREFIX + c),
      "the list has its own email and Status columns: the result columns are prefixed",
    );
    const keys = header.map((h) => h.trim().toLowerCase());
    assert.equal(new Set(keys).size, keys.length, "no column name twice");
    const lines = splitDownload(escaped.data, width);
    assert.deepEqual(
      lines.map((l) => l.original),
      LINES.map((line) => FORMULAS.reduce((l, f) => l.replace(f, `'${f}`), line)),
    );
    assert.equal(lines[1]!.original, "Ann,+1 555 6330,lead,ann@acme.test,-42", "phone numbers untouched");
    assert.deepEqual(
      lines.slice(1).map((l) => l.results.slice(0, 2)),
      [
        ["ann@acme.test", "valid"],
        ["bob@acme.test", "valid"],
        ["carol@acme.test", "valid"],
        ["dan@acme.test", "valid"],
        ["erin@acme.test", "valid"],
        ["zed@acme.test", "invalid"],
      ],
    );

    // Escaping off: every uploaded line byte for byte.
    await escaping.uncheck();
    const raw = await download(page, downloads.getByRole("button", { name: "Download CSV" }));
    assert.deepEqual(
      splitDownload(raw.data, width).map((l) => l.original),
      LINES,
    );

    // xlsx: text cells are never evaluated, so nothing is escaped, whatever the checkbox says.
    await escaping.check();
    const xlsx = await download(page, downloads.getByRole("button", { name: "Download XLSX" }));
    assert.equal(xlsx.name, "contacts-results.xlsx");
    const [sheet] = readXlsxBook(xlsx.data);
    assert.ok(sheet);
    const cells = Array.from(sheet.rows, (r) =>
      Array.from({ length: 5 }, (_, i) => {
        const c = r?.[i];
        return c === undefined ? "" : String(c.value);
      }),
    );
    const uploaded = LINES.map((l) =>
      l === LINES[5]
        ? ["Erin", "+33.1.23.45.67.89", "VIP, since 2019", "erin@acme.test", "+SUM(A1)"]
        : l.split(","),
    );
    assert.deepEqual(cells, uploaded);
    assert.ok(
      sheet.rows.flat().every((c) => typeof c?.value !== "string" || !c.value.startsWith("'")),
      "no apostrophe added to any cell",
    );
  });
}
