// The backup file of an embedded installation: a zip, so any `unzip -l` shows what it holds.
//   mailprobe-backup.json  what the file is: format version, when, from which mailprobe
//   pgdata.tar             the database's data directory, as PGlite's dumpDataDir writes it
//   encryption.key         the generated secrets of DATA_DIR (app/local-secrets.ts): without the
//   jwt.secret             key the API keys cannot be revealed, without the secret sessions end
// admin.json and mailprobe.lock belong to a running process and are never part of it.
import type { Readable } from "node:stream";
import yauzl from "yauzl";
import yazl from "yazl";
import { LOCAL_SECRET_FILES, localSecretProblem } from "../app/local-secrets.ts";
import { CliError } from "./cli-support.ts";

const MANIFEST = "mailprobe-backup.json";
const DATABASE = "pgdata.tar";
const FORMAT = "mailprobe-backup";
const FORMAT_VERSION = 1;

export const SECRET_FILES: readonly string[] = Object.values(LOCAL_SECRET_FILES);

/** What a backup holds. */
export interface BackupContents {
  /** The tar of the embedded database's data directory. */
  database: Buffer;
  /** DATA_DIR's secrets files by name (those that existed when the backup was taken). */
  secrets: ReadonlyMap<string, Buffer>;
  createdAt: Date;
  mailprobeVersion: string;
}

interface Manifest {
  format: typeof FORMAT;
  version: number;
  created_at: string;
  mailprobe_version: string;
  engine: "pglite";
  database: string;
  database_bytes: number;
  secrets: string[];
}

/** The backup as a zip stream. The tar is deflated (a small database's ~40 MB tar: ~5 MB). */
export function backupArchive(c: BackupContents): Readable {
  const zip = new yazl.ZipFile();
  const manifest: Manifest = {
    format: FORMAT,
    version: FORMAT_VERSION,
    created_at: c.createdAt.toISOString(),
    mailprobe_version: c.mailprobeVersion,
    engine: "pglite",
    database: DATABASE,
    database_bytes: c.database.length,
    secrets: [...c.secrets.keys()],
  };
  const entry = { mtime: c.createdAt, mode: 0o100600 };
  zip.addBuffer(Buffer.from(JSON.stringify(manifest, null, 2) + "\n"), MANIFEST, entry);
  zip.addBuffer(c.database, DATABASE, entry);
  for (const [name, bytes] of c.secrets) zip.addBuffer(bytes, name, entry);
  zip.end();
  const out = zip.outputStream as Readable;
  zip.on("error", (error: Error) => out.destroy(error));
  return out;
}

/**
 * What a part may inflate to, checked on the zip's declared sizes before a byte is inflated
 * (yauzl then holds each entry to its declared size): the manifest and the secrets are a few
 * hundred bytes; the database tar compresses 5-10 times (a fresh one 40 MB to 5 MB), so more
 * than MAX_DATABASE_RATIO times its compressed size (past a 64 MiB allowance) is a zip bomb: a
 * 1 MB file declaring 5 GB once made restore use 5.36 GB.
 */
const MAX_SMALL_PART_BYTES = 64 * 1024;
const MAX_DATABASE_RATIO = 100;
const DATABASE_ALLOWANCE_BYTES = 64 * 1024 * 1024;

function inflationProblem(entry: yauzl.Entry): string | null {
  const declared = entry.uncompressedSize;
  if (entry.fileName !== DATABASE)
    return declared > MAX_SMALL_PART_BYTES ? `${entry.fileName} declares ${declared} bytes` : null;
  const allowed = Math.max(DATABASE_ALLOWANCE_BYTES, MAX_DATABASE_RATIO * entry.compressedSize);
  return declared > allowed
    ? `${DATABASE} would inflate ${entry.compressedSize} bytes to ${declared}, more than ${MAX_DATABASE_RATIO} times: not a database`
    : null;
}

const TAR_BLOCK = 512;

/** A tar header's checksum: the bytes summed with the checksum field itself read as spaces. */
function headerChecksumOk(header: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < TAR_BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : header[i]!;
  const stored = parseInt(header.subarray(148, 156).toString("latin1").replace(/\0.*$/s, "").trim(), 8);
  return stored === sum;
}

const fieldOf = (header: Buffer, from: number, length: number): string =>
  header
    .subarray(from, from + length)
    .toString("latin1")
    .replace(/\0.*$/s, "");

/**
 * Why `tar` is not the data directory of an embedded database, or null: every header a valid
 * ustar header whose file fits in the archive, and the files PostgreSQL cannot start without
 * present. Checked before anything is written: PGlite handed a damaged tar fails outside the
 * promise it returns, as an uncaught stream error that ends the process.
 */
export function databaseTarProblem(tar: Buffer): string | null {
  const required = new Set(["/PG_VERSION", "/global/pg_control"]);
  let offset = 0;
  while (offset + TAR_BLOCK <= tar.length) {
    const header = tar.subarray(offset, offset + TAR_BLOCK);
    if (header.every((b) => b === 0)) break;
    if (fieldOf(header, 257, 6) !== "ustar" || !headerChecksumOk(header))
      return `${DATABASE} has a damaged entry header at byte ${offset}`;
    const size = parseInt(fieldOf(header, 124, 12).trim() || "0", 8);
    const end = offset + TAR_BLOCK + Math.ceil(size / TAR_BLOCK) * TAR_BLOCK;
    if (!Number.isSafeInteger(size) || size < 0 || end > tar.length) return `${DATABASE} is truncated`;
    required.delete(fieldOf(header, 0, 100));
    offset = end;
  }
  return required.size === 0
    ? null
    : `${DATABASE} has no ${[...required].join(", ")}: not a database directory`;
}

const notABackup = (path: string, why: string): CliError =>
  new CliError(`${path} is not a mailprobe backup (${why})`);

/** Reads and checks a backup file: its manifest, its database and the secrets it lists. */
export async function readBackupArchive(path: string): Promise<BackupContents> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.openPromise(path, { lazyEntries: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new CliError(`${path} does not exist`);
    if (code !== undefined) throw new CliError(`cannot read ${path} (${code})`);
    throw notABackup(path, (e as Error).message);
  }
  const expected = new Set([MANIFEST, DATABASE, ...SECRET_FILES]);
  const entries = new Map<string, Buffer>();
  try {
    for await (const entry of entriesOf(zip)) {
      // A name of no known part, or one seen twice, is another kind of zip.
      if (!expected.has(entry.fileName) || entries.has(entry.fileName))
        throw notABackup(path, `unexpected entry ${entry.fileName}`);
      const inflation = inflationProblem(entry);
      if (inflation) throw notABackup(path, inflation);
      entries.set(entry.fileName, await readAll(await zip.openReadStreamPromise(entry)));
    }
  } finally {
    zip.close();
  }
  const manifest = parseManifest(path, entries.get(MANIFEST));
  const database = entries.get(DATABASE);
  if (!database) throw notABackup(path, `no ${DATABASE}`);
  if (database.length !== manifest.database_bytes) throw notABackup(path, `${DATABASE} is truncated`);
  const secrets = new Map<string, Buffer>();
  for (const name of manifest.secrets) {
    const bytes = entries.get(name);
    if (!bytes || !SECRET_FILES.includes(name)) throw notABackup(path, `${name} is missing`);
    const problem = localSecretProblem(name, bytes.toString("utf8"));
    if (problem) throw notABackup(path, problem);
    secrets.set(name, bytes);
  }
  const tarProblem = databaseTarProblem(database);
  if (tarProblem) throw notABackup(path, tarProblem);
  return {
    database,
    secrets,
    createdAt: new Date(manifest.created_at),
    mailprobeVersion: manifest.mailprobe_version,
  };
}

function parseManifest(path: string, bytes: Buffer | undefined): Manifest {
  if (!bytes) throw notABackup(path, `no ${MANIFEST}`);
  let m: Partial<Manifest>;
  try {
    m = JSON.parse(bytes.toString("utf8")) as Partial<Manifest>;
  } catch {
    throw notABackup(path, `${MANIFEST} is not JSON`);
  }
  if (m.format !== FORMAT) throw notABackup(path, `${MANIFEST} names format ${String(m.format)}`);
  if (m.version !== FORMAT_VERSION)
    throw new CliError(
      `${path} is a backup of format version ${String(m.version)}; this mailprobe reads version ${FORMAT_VERSION}`,
    );
  if (
    typeof m.created_at !== "string" ||
    typeof m.mailprobe_version !== "string" ||
    typeof m.database_bytes !== "number" ||
    !Array.isArray(m.secrets)
  )
    throw notABackup(path, `${MANIFEST} is incomplete`);
  return m as Manifest;
}

async function* entriesOf(zip: yauzl.ZipFile): AsyncGenerator<yauzl.Entry> {
  for (;;) {
    const next = await new Promise<yauzl.Entry | null>((resolve, reject) => {
      const cleanup = (): void => {
        zip.off("entry", onEntry).off("end", onEnd).off("error", onError);
      };
      const onEntry = (e: yauzl.Entry): void => (cleanup(), resolve(e));
      const onEnd = (): void => (cleanup(), resolve(null));
      const onError = (e: Error): void => (cleanup(), reject(e));
      zip.on("entry", onEntry).on("end", onEnd).on("error", onError);
      zip.readEntry();
    });
    if (!next) return;
    yield next;
  }
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
