// `mailprobe verify --file LIST [--column C] [--out FILE] [--format F]`: a list file verified by
// the engine on this machine (no server, no database, no credits), written back as the API's
// download of the same file would be: every original row in order, its columns, then
// RESULT_COLUMNS (csv/xlsx), or `email,status` lines (txt).
import { readFile, stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { engineOptionsFrom, guardPorts } from "../app/engine-options.ts";
import { loadConfig, type Config } from "../config/index.ts";
import {
  addressAsWritten,
  buildResultHeader,
  joinResultRow,
  parseListFile,
  patchWorkbookOrNull,
  RESULT_COLUMNS,
  TXT_RESULT_COLUMNS,
  writeExport,
  type ExportCell,
  type ExportFormat,
  type ParsedList,
} from "../files/index.ts";
import {
  cellsInOrder,
  chunkGroups,
  createEngine,
  groupByDomain,
  groupDomainOf,
  columnsNamed,
  resultCells,
  type ResultCells,
  type VerificationResult,
} from "../verify/index.ts";
import {
  CliError,
  columnLetterToNumber,
  defaultOutPath,
  outputFormat,
  checkOutPath,
  warnAboutConfig,
  withSheetOption,
  writeFileAtomically,
} from "./cli-support.ts";
import { failedCells, SKIPPED_STATUS } from "../tasks/export-task.ts";
import { createProgress, formatDuration } from "./progress.ts";

/**
 * Distinct addresses one local run takes: ten times an upload's 10,000 (MAX_TASK_EMAILS), since
 * the machine and the mail servers' patience are the operator's own. Rows are bounded by the
 * parser's default for this (addresses + max(addresses, 10,000)), the file size below.
 */
const LOCAL_MAX_EMAILS = 100_000;
/** Largest list file read (the whole file is read into memory, as an upload is). */
const LOCAL_MAX_FILE_BYTES = 100 * 1024 * 1024;
/** Status of a row without an address: the download's. */
export { SKIPPED_STATUS };

export interface VerifyFileOptions {
  file: string;
  column?: string;
  /** xlsx: the sheet holding the list (default: chosen as the upload chooses). */
  sheet?: string;
  out?: string;
  format?: ExportFormat;
  escapeFormulas?: boolean;
  /** Replace an existing results file (never the list itself). */
  force?: boolean;
}

const say = (line: string): void => void process.stdout.write(line + "\n");
const note = (line: string): void => void process.stderr.write(`mailprobe: ${line}\n`);

/**
 * Parses the list with the upload's parser and rules. `--column` is what the upload's
 * `email_column` takes (a header name or a 1-based number) plus a column letter: a name is tried
 * first, so a header called "ID" still means that header.
 */
async function parseList(
  file: string,
  data: Buffer,
  column: string | undefined,
  sheet: string | undefined,
): Promise<ParsedList> {
  const parse = (emailColumn: string | null) =>
    parseListFile({ filename: file, data, emailColumn, sheet: sheet ?? null, maxEmails: LOCAL_MAX_EMAILS });
  let parsed = await parse(column ?? null);
  const letterNumber = column === undefined ? null : columnLetterToNumber(column.trim());
  if (!parsed.ok && parsed.problem.code === "column_not_found" && letterNumber !== null) {
    parsed = await parse(String(letterNumber));
  }
  if (!parsed.ok) {
    const tooMany = parsed.problem.code === "too_many_emails";
    const message = withSheetOption(parsed.problem.message);
    throw new CliError(
      `${file}: ${message}${tooMany ? ` (the command-line limit is ${LOCAL_MAX_EMAILS.toLocaleString("en-US")} addresses)` : ""}`,
    );
  }
  return parsed.list;
}

type Cells = ResultCells;

/**
 * Verifies every distinct address once: at most WORKER_CONCURRENCY domain groups at once (as a
 * batch worker), at most SMTP_MAX_CONNECTIONS_PER_HOST sessions per mail host (the engine's gate).
 */
async function verifyDistinct(
  config: Readonly<Config>,
  emails: readonly string[],
  signal: AbortSignal,
  onDone: (n: number) => void,
): Promise<{ cells: Map<string, Cells>; failures: string[] }> {
  const engine = createEngine(engineOptionsFrom(config.verify), guardPorts);
  const cells = new Map<string, Cells>();
  const failures: string[] = [];
  try {
    // Distinct addresses grouped by domain (first-occurrence order), cut into engine calls.
    const groups = groupByDomain(emails, (email) => groupDomainOf(engine.checkSyntax(email)));
    const chunks = chunkGroups(groups).map((c) => ({ domain: c.domain, emails: c.items }));
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < chunks.length && !signal.aborted) {
        const chunk = chunks[next++]!;
        let results: VerificationResult[] | null = null;
        try {
          results = await engine.verifyGroup(chunk.domain, chunk.emails, { signal });
        } catch (error) {
          failures.push(`${chunk.domain}: ${error instanceof Error ? error.message : String(error)}`);
        }
        // Interrupted: the group's answers are cut short; none of them is written or counted.
        if (signal.aborted) return;
        chunk.emails.forEach((email, i) => {
          const r = results?.[i];
          // A group that failed outright reads as the download shows a failed job.
          cells.set(email, r ? resultCells(r) : failedCells(email));
        });
        onDone(chunk.emails.length);
      }
    };
    await Promise.all(Array.from({ length: Math.min(config.worker.concurrency, chunks.length) }, lane));
    return { cells, failures };
  } finally {
    await engine.close();
  }
}

const TXT_FIELDS = columnsNamed(TXT_RESULT_COLUMNS);

/** Header and rows of the results file, laid out as prepareDownload lays out a file upload's. */
interface ResultTable {
  header: string[];
  rows: ExportCell[][];
}

function resultTable(list: ParsedList, cellsOf: (email: string) => Cells, format: ExportFormat): ResultTable {
  const emailOfRow = new Map(list.entries.map((e) => [e.rowIndex, e.email]));
  const rowCells = (i: number): Cells => {
    const email = emailOfRow.get(i) ?? null;
    return email === null ? { status: SKIPPED_STATUS } : cellsOf(email);
  };
  if (format === "txt") {
    // txt lists addresses only: a row that held no address has nothing to show. The address is
    // the one the user wrote, as in the API's txt download.
    const rows = list.rows.flatMap((row, i) => {
      const cells = rowCells(i);
      const written = addressAsWritten(row, list.emailColumn) ?? cells.email;
      return cells.email ? [cellsInOrder({ ...cells, email: written }, TXT_FIELDS)] : [];
    });
    return { header: [...TXT_RESULT_COLUMNS], rows };
  }
  const width = list.columnCount;
  return {
    header: buildResultHeader(list.header, width),
    rows: list.rows.map((cells, i) => joinResultRow(cells, width, cellsInOrder(rowCells(i)))),
  };
}

/**
 * An xlsx list written as xlsx is the user's workbook with the result columns appended, as the
 * API's download of it is (files/export/patch-workbook.ts); null when it cannot be.
 */
async function patchedWorkbook(list: ParsedList, data: Buffer, table: ResultTable): Promise<Readable | null> {
  if (list.format !== "xlsx" || list.sheetName === undefined) return null;
  const width = list.columnCount;
  const names = table.header.slice(width);
  return patchWorkbookOrNull({
    original: data,
    sheetName: list.sheetName,
    resultHeader: list.header ? names : null,
    resultWidth: names.length,
    listWidth: width,
    dataRows: table.rows.map((row) => row.slice(width)),
    filtered: false,
  });
}

async function writeResults(
  out: string,
  format: ExportFormat,
  source: { list: ParsedList; data: Buffer; table: ResultTable },
  escapeFormulas: boolean,
  force: boolean,
): Promise<void> {
  const workbook = format === "xlsx" ? await patchedWorkbook(source.list, source.data, source.table) : null;
  await writeFileAtomically(out, workbook ?? writeExport(format, { ...source.table, escapeFormulas }), force);
}

export async function verifyFileCommand(opts: VerifyFileOptions): Promise<void> {
  const config = loadConfig(process.env);
  const size = await stat(opts.file).then(
    (s) => (s.isFile() ? s.size : -1),
    () => {
      throw new CliError(`cannot read ${opts.file}: no such file`);
    },
  );
  if (size < 0) throw new CliError(`${opts.file} is not a file`);
  if (size > LOCAL_MAX_FILE_BYTES) {
    throw new CliError(
      `${opts.file} is larger than ${LOCAL_MAX_FILE_BYTES / 1024 / 1024} MB, the command-line limit`,
    );
  }
  const format = outputFormat(opts.out, opts.format);
  const out = opts.out ?? defaultOutPath(opts.file, format);
  await checkOutPath(opts.file, out, opts.force === true);

  warnAboutConfig(config);
  const data = await readFile(opts.file);
  const list = await parseList(opts.file, data, opts.column, opts.sheet);
  const column = list.header?.[list.emailColumn]?.trim() || `column ${list.emailColumn + 1}`;
  const sheet = list.sheetName === undefined ? "" : `sheet ${list.sheetName}, `;
  note(
    `${opts.file}: ${list.rows.length} rows, ${list.emails.length} distinct addresses (${sheet}email column: ${column})`,
  );

  const interrupted = new AbortController();
  const onSigint = (): void => interrupted.abort();
  process.once("SIGINT", onSigint);
  const progress = createProgress({ total: list.emails.length, unit: "addresses", label: "verifying" });
  const started = Date.now();
  let verified: Awaited<ReturnType<typeof verifyDistinct>>;
  try {
    progress.update(0);
    verified = await verifyDistinct(config, list.emails, interrupted.signal, (n) => progress.tick(n));
  } finally {
    progress.finish();
    process.off("SIGINT", onSigint);
  }
  if (interrupted.signal.aborted) throw new CliError("interrupted: no results written");
  for (const f of verified.failures.slice(0, 5)) note(`warning: verifying ${f}`);

  const cellsOf = (email: string): Cells => verified.cells.get(email) ?? failedCells(email);
  await writeResults(
    out,
    format,
    { list, data, table: resultTable(list, cellsOf, format) },
    opts.escapeFormulas ?? true,
    opts.force === true,
  );

  const counts = new Map<string, number>();
  for (const c of verified.cells.values()) {
    const status = String(c.status ?? "unknown");
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
  const summary = [...counts].map(([s, n]) => `${s} ${n}`).join(", ");
  note(
    `${list.emails.length} addresses verified in ${formatDuration(Date.now() - started)}${summary ? ` (${summary})` : ""}; ${list.rows.length} rows written (${RESULT_COLUMNS.length} result columns${format === "txt" ? ", txt: email,status" : ""})`,
  );
  say(out);
}
