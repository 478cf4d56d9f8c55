// The database part of a backup, a tar of a PostgreSQL data directory, read as a stream: once
// to check it whole before anything is written, once to write it into the new data directory.
// Memory stays at a chunk whatever the database's size.
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { crc32 } from "node:zlib";
import { extract, type Header } from "tar-stream";

/** A data directory of the embedded engine holds a few thousand files: this is far past any. */
const MAX_DATABASE_ENTRIES = 100_000;
/** A data directory's names are PostgreSQL's own: digits, letters, `_`, `.` and `-`. */
const NAME_PART = /^[A-Za-z0-9_.-]{1,255}$/;
/** The files PostgreSQL cannot start without. */
const REQUIRED = ["PG_VERSION", "global/pg_control"];

/**
 * The entry's path inside the data directory, or why it cannot be one. Names may start with
 * `/` (PGlite's dumpDataDir wrote them so, in backups of format 1); none may climb out.
 */
function pathOf(header: Header): { path: string } | { problem: string } {
  const name = header.name.replace(/^\/+/, "").replace(/\/+$/, "");
  if (header.type !== "file" && header.type !== "directory")
    return { problem: `${header.name} is a ${header.type}, not a file or directory` };
  if (name === "") return header.type === "directory" ? { path: "" } : { problem: "an entry has no name" };
  const parts = name.split("/");
  if (parts.some((p) => !NAME_PART.test(p) || p === "." || p === ".."))
    return { problem: `${JSON.stringify(header.name.slice(0, 120))} is not a data directory's file name` };
  return { path: parts.join("/") };
}

type EntryHandler = (path: string, header: Header, body: Readable) => Promise<void>;

/** Calls `onEntry` for each entry of the tar `source`, checking each as it comes. */
async function eachEntry(source: Readable, onEntry: EntryHandler): Promise<void> {
  const entries = extract();
  source.on("error", (e) => entries.destroy(e));
  source.pipe(entries);
  let count = 0;
  for await (const body of entries) {
    if (++count > MAX_DATABASE_ENTRIES)
      throw new DatabaseTarError(`more than ${MAX_DATABASE_ENTRIES} entries`);
    const where = pathOf(body.header);
    if ("problem" in where) throw new DatabaseTarError(where.problem);
    await onEntry(where.path, body.header, body as unknown as Readable);
  }
}

/** The tar is not a data directory (or is damaged): names what is wrong. */
export class DatabaseTarError extends Error {
  override name = "DatabaseTarError";
}

/** tar-stream's own words for a damaged stream, as what they mean to an operator. */
function damage(e: unknown): never {
  if (e instanceof DatabaseTarError) throw e;
  const message = e instanceof Error ? e.message : String(e);
  if (/Unexpected end of data/.test(message)) throw new DatabaseTarError("it is truncated");
  if (/Invalid (tar )?header|Header exceeds/.test(message))
    throw new DatabaseTarError("it has a damaged entry header");
  throw e;
}

/**
 * Reads the whole tar `source` and checks it is a data directory: valid headers, file and
 * directory entries only, names that stay inside the directory and come once, at most
 * MAX_DATABASE_ENTRIES, PG_VERSION and global/pg_control present. Returns the CRC-32 of its
 * bytes, for the zip's check.
 */
export async function checkDatabaseTar(source: Readable): Promise<{ crc32: number }> {
  let crc = 0;
  const summing = new Transform({
    transform(chunk: Buffer, _enc, done) {
      crc = crc32(chunk, crc);
      done(null, chunk);
    },
  });
  source.on("error", (e) => summing.destroy(e));
  const required = new Set(REQUIRED);
  const seen = new Set<string>();
  await eachEntry(source.pipe(summing), async (path, _header, body) => {
    if (seen.has(path)) throw new DatabaseTarError(`it holds ${path} twice`);
    seen.add(path);
    required.delete(path);
    body.resume();
    await new Promise<void>((resolve, reject) => body.once("end", resolve).once("error", reject));
  }).catch(damage);
  if (required.size > 0)
    throw new DatabaseTarError(`it has no ${[...required].join(", ")}: not a database directory`);
  return { crc32: crc };
}

/** Writes the tar `source` (checked by checkDatabaseTar) into the new directory `dir`. */
export async function extractDatabaseTar(source: Readable, dir: string): Promise<void> {
  await mkdir(dir, { mode: 0o700 });
  await eachEntry(source, async (path, header, body) => {
    const target = join(dir, path);
    if (header.type === "directory") {
      await mkdir(target, { recursive: true, mode: 0o700 });
      body.resume();
      return;
    }
    await mkdir(dirname(target), { recursive: true, mode: 0o700 });
    // wx: a name twice in the tar is refused rather than written over.
    await pipeline(body, createWriteStream(target, { flags: "wx", mode: 0o600 }));
  }).catch(damage);
}
