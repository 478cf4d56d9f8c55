// Small helpers shared by the CLI's command modules, free of heavy imports (the client commands
// load this, not the engine or the database).
import { createWriteStream } from "node:fs";
import { realpath, rename, rm } from "node:fs/promises";
import { basename, dirname, extname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Config } from "../config/index.ts";
import type { ExportFormat } from "../files/export/download.ts";

/** An error that is the user's to fix: main.ts prints its message alone and exits 1. */
export class CliError extends Error {
  override name = "CliError";
}

/**
 * Results file formats: the download's (EXPORT_FORMATS), listed here so that `--help` and the
 * client commands do not load the files module; `satisfies` keeps the two lists in step.
 */
export const FILE_FORMATS = ["csv", "txt", "xlsx"] as const satisfies readonly ExportFormat[];
export type FileFormat = (typeof FILE_FORMATS)[number];

// Commands that probe mail servers say on stderr what the server logs at start (e.g. a HELO name
// receivers refuse), without disturbing --json on stdout.
export function warnAboutConfig(config: Readonly<Config>): void {
  for (const w of config.warnings) process.stderr.write(`mailprobe: warning: ${w.message}\n`);
}

/** The results format: --format, else --out's extension, else csv (the download's default). */
export function outputFormat(out: string | undefined, format: FileFormat | undefined): FileFormat {
  if (format) return format;
  const ext = out ? extname(out).slice(1).toLowerCase() : "";
  return FILE_FORMATS.find((f) => f === ext) ?? "csv";
}

/** `list.csv` → `list.results.csv` beside it. */
export function defaultOutPath(input: string, format: FileFormat): string {
  const ext = extname(input);
  return join(dirname(input), `${basename(input, ext)}.results.${format}`);
}

/** Refuses to write results over the list itself (by path, or through a link to it). */
export async function refuseOverwritingInput(input: string, out: string): Promise<void> {
  const real = async (p: string): Promise<string> => realpath(p).catch(() => resolve(p));
  if ((await real(input)) === (await real(out))) {
    throw new CliError(`the results file would overwrite the list ${input}; choose another --out`);
  }
}

/** "E" → 5, "AB" → 28: a spreadsheet column letter as a 1-based number; null for anything else. */
export function columnLetterToNumber(letters: string): number | null {
  if (!/^[A-Za-z]{1,3}$/.test(letters)) return null;
  let n = 0;
  for (const ch of letters.toUpperCase()) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n;
}

/** Writes `body` beside `out`, then renames it: an interrupted run leaves no half file under its name. */
export async function writeFileAtomically(out: string, body: Readable): Promise<void> {
  const partial = `${out}.partial-${process.pid}`;
  try {
    await pipeline(body, createWriteStream(partial));
    await rename(partial, out);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}
