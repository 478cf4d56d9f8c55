// Benchmark of list-file parsing and result export at the upload limit: 10,000 rows with an
// email column and 10 other columns, as csv and as xlsx (shared strings, as Excel writes it).
// Run: npx tsx bench/files.ts (add --expose-gc through NODE_OPTIONS for steadier memory figures),
// or through the bench runner: benchFiles().
//
// What is measured:
//  - time: median of RUNS parses after one warm-up parse (the first parse also pays for module
//    JIT warm-up, shown separately as "cold");
//  - memory: process.memoryUsage() sampled every 2 ms during each parse; "peak RSS +" is the
//    highest sample minus the RSS just before the parse (RSS also holds freed-but-not-returned
//    heap, so it over-states live data), "heap kept" is heapUsed after the step minus before,
//    with the step's result (the ParsedList; nothing for exports) still referenced. maxRSS from process.resourceUsage() only ever
//    grows over the process lifetime, so it is printed once at the end, not per step.
import { pathToFileURL } from "node:url";
import { collect, EXTRA, gc, makeXlsx, mb, sampleRows } from "./support/sample-list.ts";
import {
  RESULT_COLUMNS,
  buildResultHeader,
  joinResultRow,
  parseListFile,
  patchWorkbook,
  writeCsv,
  writeXlsx,
} from "../src/files/index.ts";

const ROWS = 10_000;
const RUNS = 5;

interface Measure {
  ms: number;
  peakRssDelta: number;
  heapKept: number;
}

/** Keeps each step's result alive until its heap is measured. */
const retained: unknown[] = [];

async function measure(fn: () => Promise<unknown>): Promise<Measure> {
  retained.length = 0;
  gc();
  const before = process.memoryUsage();
  let peak = before.rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 2);
  const started = performance.now();
  retained.push(await fn());
  const ms = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  gc();
  const heapKept = process.memoryUsage().heapUsed - before.heapUsed;
  retained.length = 0;
  return { ms, peakRssDelta: peak - before.rss, heapKept };
}

async function bench(label: string, fn: () => Promise<unknown>): Promise<void> {
  const cold = await measure(fn);
  const runs: Measure[] = [];
  for (let i = 0; i < RUNS; i += 1) runs.push(await measure(fn));
  runs.sort((a, b) => a.ms - b.ms);
  const median = runs[Math.floor(runs.length / 2)]!;
  const peak = Math.max(...runs.map((r) => r.peakRssDelta), cold.peakRssDelta);
  console.log(
    `  ${label.padEnd(38)} median ${median.ms.toFixed(0).padStart(5)} ms  (cold ${cold.ms.toFixed(0)} ms)` +
      `   peak RSS +${mb(peak)}   heap kept ${mb(median.heapKept)}`,
  );
}

export async function benchFiles(): Promise<void> {
  console.log(
    `\nfiles: ${ROWS.toLocaleString("en-US")} rows × ${String(EXTRA.length + 1)} columns${(globalThis as { gc?: unknown }).gc ? "" : " (no --expose-gc: memory figures are noisier)"}`,
  );
  const header = ["email", ...EXTRA];
  const rows = sampleRows(ROWS);
  const csv = await collect(writeCsv({ header, rows, escapeFormulas: false }));
  const xlsx = await makeXlsx(header, rows);
  console.log(`  inputs: csv ${mb(csv.length)}, xlsx ${mb(xlsx.length)}`);

  const parse = (filename: string, data: Buffer) => async () => {
    const result = await parseListFile({ filename, data, maxEmails: 10_000 });
    if (!result.ok || result.list.emails.length !== ROWS)
      throw new Error(`bench: parse failed ${JSON.stringify(result).slice(0, 200)}`);
    return result;
  };
  await bench("parse csv", parse("contacts.csv", csv));
  await bench("parse xlsx", parse("contacts.xlsx", xlsx));

  const parsed = await parseListFile({ filename: "contacts.csv", data: csv, maxEmails: 10_000 });
  if (!parsed.ok) throw new Error("bench: parse failed");
  const list = parsed.list;
  const resultHeader = buildResultHeader(list.header, list.columnCount);
  const result = (email: string | null) =>
    [
      email,
      "valid",
      false,
      false,
      true,
      true,
      "example.com",
      "mx1.example.com",
      "postfix",
      false,
      null,
      false,
      "2024-05-01T10:00:00.000Z",
    ] as const;
  const resultRows = function* () {
    for (const e of list.entries)
      yield joinResultRow(list.rows[e.rowIndex]!, list.columnCount, [...result(e.email)]);
  };
  if (resultHeader.length !== list.columnCount + RESULT_COLUMNS.length) throw new Error("bench: header");
  let xlsxBytes = 0;
  let csvBytes = 0;
  await bench("export xlsx (11 + 13 result columns)", async () => {
    xlsxBytes = (await collect(writeXlsx({ header: resultHeader, rows: resultRows(), escapeFormulas: true })))
      .length;
    return null;
  });
  await bench("export csv (same rows)", async () => {
    csvBytes = (await collect(writeCsv({ header: resultHeader, rows: resultRows(), escapeFormulas: true })))
      .length;
    return null;
  });
  // An xlsx upload's xlsx download: the uploaded workbook with the result columns spliced in
  // (files/export/patch-workbook.ts), against the new one-sheet workbook above.
  const book = await parseListFile({ filename: "contacts.xlsx", data: xlsx, maxEmails: 10_000 });
  if (!book.ok || book.list.sheetName === undefined) throw new Error("bench: xlsx parse failed");
  const sheetName = book.list.sheetName;
  const dataRows = book.list.entries.map((e) => [...result(e.email)]);
  let patchedBytes = 0;
  await bench("export xlsx: the upload's workbook patched", async () => {
    const stream = await patchWorkbook({
      original: xlsx,
      sheetName,
      resultHeader: resultHeader.slice(list.columnCount),
      resultWidth: RESULT_COLUMNS.length,
      listWidth: list.columnCount,
      dataRows,
      filtered: false,
    });
    patchedBytes = (await collect(stream)).length;
    return null;
  });
  console.log(`  outputs: xlsx ${mb(xlsxBytes)}, patched workbook ${mb(patchedBytes)}, csv ${mb(csvBytes)}`);
  console.log(`  process maxRSS so far ${mb(process.resourceUsage().maxRSS * 1024)}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchFiles();
}
