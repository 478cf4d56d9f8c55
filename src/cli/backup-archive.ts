// The backup file of an embedded installation: a zip, so any `unzip -l` shows what it holds.
//   pgdata.tar             the database's data directory: an online base backup (backup_label
//                          and the WAL it replays) or, with no server running, the directory as
//                          it lies; format 1 held PGlite's dumpDataDir instead
//   encryption.key         the generated secrets of DATA_DIR (app/local-secrets.ts): without the
//   jwt.secret             key the API keys cannot be revealed, without the secret sessions end
//   mailprobe-backup.json  what the file is: format version, when, from which mailprobe, the
//                          tar's size; written last, when that size is known
// admin.json and mailprobe.lock belong to a running process and are never part of it. Both
// ways stream: the tar is deflated as it is read, and restore inflates it twice (checked whole,
// then written), so memory stays flat whatever the database's size.
import { Transform, type Readable } from "node:stream";
import yauzl from "yauzl";
import yazl from "yazl";
import { LOCAL_SECRET_FILES, localSecretProblem } from "../app/local-secrets.ts";
import { CliError } from "./cli-support.ts";
import { checkDatabaseTar, DatabaseTarError, extractDatabaseTar } from "./database-tar.ts";

const MANIFEST = "mailprobe-backup.json";
const DATABASE = "pgdata.tar";
const FORMAT = "mailprobe-backup";
/** 2: the tar is a base backup read from disk; 1 (still read): PGlite's dumpDataDir. */
const FORMAT_VERSION = 2;
const READABLE_VERSIONS = [1, 2];

export const SECRET_FILES: readonly string[] = Object.values(LOCAL_SECRET_FILES);

/** What a backup is made of. */
export interface BackupParts {
  /** The tar of the embedded database's data directory, as a stream. */
  database: Readable;
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

/**
 * The backup as a zip stream: the tar deflated as it streams in (a fresh database's 40 MB
 * tar: ~5 MB), then the secrets, then the manifest, which needs the tar's size. Also the
 * tar's size so far.
 */
export function backupArchive(c: BackupParts): { zip: Readable; databaseBytes: () => number } {
  const zip = new yazl.ZipFile();
  const out = zip.outputStream as Readable;
  const entry = { mtime: c.createdAt, mode: 0o100600 };
  let databaseBytes = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      databaseBytes += chunk.length;
      done(null, chunk);
    },
  });
  c.database.on("error", (error) => out.destroy(error));
  counted.once("end", () => {
    for (const [name, bytes] of c.secrets) zip.addBuffer(bytes, name, entry);
    const manifest: Manifest = {
      format: FORMAT,
      version: FORMAT_VERSION,
      created_at: c.createdAt.toISOString(),
      mailprobe_version: c.mailprobeVersion,
      engine: "pglite",
      database: DATABASE,
      database_bytes: databaseBytes,
      secrets: [...c.secrets.keys()],
    };
    zip.addBuffer(Buffer.from(JSON.stringify(manifest, null, 2) + "\n"), MANIFEST, entry);
    zip.end();
  });
  zip.addReadStreamLazy(DATABASE, entry, (done) => done(null, c.database.pipe(counted)));
  zip.on("error", (error: Error) => out.destroy(error));
  return { zip: out, databaseBytes: () => databaseBytes };
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

const notABackup = (path: string, why: string): CliError =>
  new CliError(`${path} is not a mailprobe backup (${why})`);

/** A backup file whose every part was checked, open to write its database out. */
export interface CheckedBackup {
  secrets: ReadonlyMap<string, Buffer>;
  createdAt: Date;
  mailprobeVersion: string;
  /** Writes the database's data directory into the new directory `dir`. */
  extractDatabase(dir: string): Promise<void>;
  close(): void;
}

async function openZip(path: string): Promise<yauzl.ZipFile> {
  try {
    // Not closed by itself after the last entry: the database part is read twice.
    return await yauzl.openPromise(path, { lazyEntries: true, autoClose: false });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new CliError(`${path} does not exist`);
    if (code !== undefined) throw new CliError(`cannot read ${path} (${code})`);
    throw notABackup(path, (e as Error).message);
  }
}

/** The zip's entries by name, each a known part seen once and of a size it may have. */
async function partsOf(path: string, zip: yauzl.ZipFile): Promise<Map<string, yauzl.Entry>> {
  const expected = new Set([MANIFEST, DATABASE, ...SECRET_FILES]);
  const parts = new Map<string, yauzl.Entry>();
  for await (const entry of entriesOf(zip)) {
    // A name of no known part, or one seen twice, is another kind of zip.
    if (!expected.has(entry.fileName) || parts.has(entry.fileName))
      throw notABackup(path, `unexpected entry ${entry.fileName}`);
    const inflation = inflationProblem(entry);
    if (inflation) throw notABackup(path, inflation);
    parts.set(entry.fileName, entry);
  }
  return parts;
}

/**
 * Opens a backup file and checks all of it before anything is written: its manifest, the
 * secrets it lists, and its database read through once (tar structure, names, CRC-32).
 */
export async function openBackupArchive(path: string): Promise<CheckedBackup> {
  const zip = await openZip(path);
  try {
    const parts = await partsOf(path, zip);
    const small = async (name: string): Promise<Buffer | undefined> => {
      const entry = parts.get(name);
      return entry ? readAll(await zip.openReadStreamPromise(entry)) : undefined;
    };
    const manifest = parseManifest(path, await small(MANIFEST));
    const database = parts.get(DATABASE);
    if (!database) throw notABackup(path, `no ${DATABASE}`);
    if (database.uncompressedSize !== manifest.database_bytes)
      throw notABackup(path, `${DATABASE} is truncated`);
    const secrets = new Map<string, Buffer>();
    for (const name of manifest.secrets) {
      const bytes = SECRET_FILES.includes(name) ? await small(name) : undefined;
      if (!bytes) throw notABackup(path, `${name} is missing`);
      const problem = localSecretProblem(name, bytes.toString("utf8"));
      if (problem) throw notABackup(path, problem);
      secrets.set(name, bytes);
    }
    const tar = (): Promise<Readable> => zip.openReadStreamPromise(database);
    const checked = await checkDatabaseTar(await tar()).catch((e: unknown) => {
      if (e instanceof DatabaseTarError) throw notABackup(path, `${DATABASE}: ${e.message}`);
      // The zip's own damage (a deflate stream that is not one, a size that lies) or the disk's.
      throw notABackup(path, `${DATABASE} cannot be read: ${e instanceof Error ? e.message : String(e)}`);
    });
    if (checked.crc32 !== database.crc32) throw notABackup(path, `${DATABASE} is damaged (CRC-32 mismatch)`);
    return {
      secrets,
      createdAt: new Date(manifest.created_at),
      mailprobeVersion: manifest.mailprobe_version,
      extractDatabase: async (dir) => extractDatabaseTar(await tar(), dir),
      close: () => zip.close(),
    };
  } catch (e) {
    zip.close();
    throw e;
  }
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
  if (typeof m.version !== "number" || !READABLE_VERSIONS.includes(m.version))
    throw new CliError(
      `${path} is a backup of format version ${String(m.version)}; this mailprobe reads versions ${READABLE_VERSIONS.join(" and ")}`,
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
