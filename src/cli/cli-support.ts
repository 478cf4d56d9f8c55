// Small helpers shared by the CLI's command modules, free of heavy imports (the client commands
// load this, not the engine or the database).
import type { Stats } from "node:fs";
import { link, open, realpath, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, extname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Config } from "../config/index.ts";
import { shortWarning } from "../config/short-warnings.ts";
import type { ExportFormat } from "../files/export/download.ts";
import { resultFilename } from "../files/export/result-filename.ts";

/** An error that is the user's to fix: main.ts prints its message alone and exits 1. */
export class CliError extends Error {
  override name = "CliError";
  /** The process's exit status (130 after Ctrl-C). */
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/**
 * Results file formats: the download's (EXPORT_FORMATS), listed here so that `--help` and the
 * client commands do not load the files module; `satisfies` keeps the two lists in step.
 */
export const FILE_FORMATS = ["csv", "txt", "xlsx"] as const satisfies readonly ExportFormat[];
export type FileFormat = (typeof FILE_FORMATS)[number];

let configWarned = false;

/**
 * Commands that probe mail servers say on stderr, once per process and one short line each,
 * what the server logs at start (e.g. a HELO name receivers refuse), without disturbing --json
 * on stdout.
 */
export function warnAboutConfig(config: Readonly<Config>): void {
  if (configWarned) return;
  configWarned = true;
  for (const w of config.warnings) {
    process.stderr.write(`mailprobe: warning: ${shortWarning(w, config)}\n`);
  }
}

/** The results format: --format, else --out's extension, else csv (the download's default). */
export function outputFormat(out: string | undefined, format: FileFormat | undefined): FileFormat {
  if (format) return format;
  const ext = out ? extname(out).slice(1).toLowerCase() : "";
  return FILE_FORMATS.find((f) => f === ext) ?? "csv";
}

/** `dir/list.csv` → `dir/list-results.csv`: the download's name (result-filename.ts), beside the list. */
export function defaultOutPath(input: string, format: FileFormat): string {
  return join(dirname(input), resultFilename(basename(input), "list", format));
}

const statOrNull = (p: string): Promise<Stats | null> => stat(p).catch(() => null);

/** The path with every symbolic link resolved, also when the file itself does not exist yet. */
async function realPathOf(p: string): Promise<string> {
  return realpath(p).catch(async () =>
    join(await realpath(dirname(p)).catch(() => resolve(dirname(p))), basename(p)),
  );
}

/**
 * Where results may be written: never over the list (compared as real paths, through symbolic
 * links, and as the same file, which also catches a hard link or another spelling on a
 * case-insensitive disk), never over a directory, and over an existing file only with --force.
 * Checked before any work; writeFileAtomically checks "exists" again as it writes.
 */
export async function checkOutPath(input: string | null, out: string, force: boolean): Promise<void> {
  const target = await statOrNull(out);
  if (input !== null) {
    const list = await statOrNull(input);
    const sameFile = list && target && list.dev === target.dev && list.ino === target.ino;
    if (sameFile || (await realPathOf(input)) === (await realPathOf(out))) {
      throw new CliError(`the results file would overwrite the list ${input}; choose another --out`);
    }
  }
  if (target?.isDirectory()) throw new CliError(`${out} is a directory; give a file name with --out`);
  if (target && !force) throw new CliError(`${out} already exists; pass --force to replace it`);
}

/**
 * A parser or server message naming the upload's `sheet` field, reworded for the command line,
 * where the choice is the --sheet option.
 */
export const withSheetOption = (message: string): string =>
  message.replace("with the sheet field (sheet=", "with --sheet (--sheet ");

/** "E" → 5, "AB" → 28: a spreadsheet column letter as a 1-based number; null for anything else. */
export function columnLetterToNumber(letters: string): number | null {
  if (!/^[A-Za-z]{1,3}$/.test(letters)) return null;
  let n = 0;
  for (const ch of letters.toUpperCase()) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n;
}

/**
 * Writes `body` beside `out`, then moves it there: an interrupted run leaves no half file under
 * its name. Without `force` the move is a hard link, which fails if `out` appeared meanwhile
 * (EEXIST) instead of replacing it; where links are not supported (some network and FAT
 * disks) it falls back to checking again and renaming.
 */
export async function writeFileAtomically(
  out: string,
  body: Readable,
  force = false,
  /** The file's permissions (before the umask): 0o600 for a file holding secrets. */
  mode = 0o666,
): Promise<void> {
  const partial = `${out}.partial-${process.pid}`;
  // Created, never reused: a file (or a link) someone else placed at that name makes this fail,
  // and is left as it was, instead of receiving, say, a backup with the encryption key.
  const handle = await open(partial, "wx", mode);
  try {
    await pipeline(body, handle.createWriteStream());
    if (force) await rename(partial, out);
    else await linkNoClobber(partial, out);
  } finally {
    await rm(partial, { force: true });
  }
}

async function linkNoClobber(partial: string, out: string): Promise<void> {
  try {
    await link(partial, out);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw new CliError(`${out} already exists; pass --force to replace it`);
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw error;
    if (await statOrNull(out)) throw new CliError(`${out} already exists; pass --force to replace it`);
    await rename(partial, out);
  }
}

/** A word for a POSIX shell: as it is when it is plain, else in single quotes. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
