// txt and csv readers. Both feed a TableBuilder row by row so the limits stop them early.
import { Readable } from "node:stream";
import { CsvError, parse } from "csv-parse";
import { detectDelimiter, explicitDelimiter, type Delimiter } from "./delimiter.ts";
import { fileProblem, type ListFileProblem } from "./problems.ts";
import { TableBuilder, type ColumnRequest, type ParsedTable, type TableLimits } from "./table.ts";

export type TextTableResult = { ok: true; table: ParsedTable } | { ok: false; problem: ListFileProblem };

const finish = (builder: TableBuilder): TextTableResult => {
  const table = builder.finish();
  return "code" in table ? { ok: false, problem: table } : { ok: true, table };
};

/** One address per line; a first line such as "email" is taken as a header. */
export function readTxt(text: string, limits: TableLimits): TextTableResult {
  const builder = new TableBuilder({ kind: "auto" }, limits, "email-name-only");
  // A final newline ends the last line; it does not start a blank one.
  for (const line of text.replace(/(?:\r\n|\n|\r)$/, "").split(/\r\n|\n|\r/)) {
    const problem = builder.push([line.trim()]);
    if (problem) return { ok: false, problem };
  }
  return finish(builder);
}

const CHUNK_CHARS = 64 * 1024;

/** String chunks that never split a surrogate pair (csv-parse encodes each chunk on its own). */
function* stringChunks(text: string): Generator<string> {
  let i = 0;
  while (i < text.length) {
    let end = Math.min(text.length, i + CHUNK_CHARS);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    yield text.slice(i, end);
    i = end;
  }
}

function csvErrorMessage(error: CsvError): string {
  const line = /line (\d+)/.exec(error.message)?.[1];
  const where = line ? ` (near line ${line})` : "";
  if (error.code === "CSV_QUOTE_NOT_CLOSED") {
    return `The CSV file has a quote (") that is never closed${where}; fix the quoting or save it again from your spreadsheet program.`;
  }
  if (error.code === "CSV_MAX_RECORD_SIZE") {
    return `The CSV file has a row longer than 1 MB${where}, usually caused by an unclosed quote; fix it and upload it again.`;
  }
  return `The CSV file could not be read${where}: ${error.message.split("\n")[0]!.slice(0, 160)}`;
}

/** csv with detected (or `sep=`-declared) delimiter, quotes, embedded newlines, ragged rows. */
export async function readCsv(
  text: string,
  request: ColumnRequest,
  limits: TableLimits,
): Promise<TextTableResult & { delimiter: Delimiter }> {
  const declared = explicitDelimiter(text);
  const delimiter = declared?.delimiter ?? detectDelimiter(text);
  const body = declared ? text.slice(declared.skip) : text;
  const builder = new TableBuilder(request, limits);
  const source = Readable.from(stringChunks(body), { objectMode: false, encoding: "utf8" });
  const parser = parse({
    delimiter,
    relax_column_count: true,
    relax_quotes: true,
    // Empty lines are skipped by the TableBuilder, which counts them as blank.
    skip_empty_lines: false,
    bom: false,
    max_record_size: 1024 * 1024,
  });
  source.pipe(parser);
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      const problem = builder.push(record);
      if (problem) return { ok: false, problem, delimiter };
    }
  } catch (error) {
    if (error instanceof CsvError)
      return { ok: false, problem: fileProblem("invalid_file", csvErrorMessage(error)), delimiter };
    throw error;
  } finally {
    source.destroy();
    parser.destroy();
  }
  return { ...finish(builder), delimiter };
}
