// A PostgreSQL data directory streamed as a tar, file by file from disk, with the rules of
// pg_basebackup (src/backend/backup/basebackup.c): what a copy must leave out, how a file that
// changes while it is read is written, and pg_control last. Memory stays at one read buffer and
// the tar stream's high-water mark, whatever the directory's size.
import type { Dirent } from "node:fs";
import { open, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { once } from "node:events";
import { pack as tarPack, type Pack } from "tar-stream";

/** Written as they are read; files are owner-only, as the restored directory must be. */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
const READ_CHUNK = 256 * 1024;

/** Files a copy never holds: a running server's, or stale state a restore would trip on. */
const EXCLUDED_FILES = new Set([
  "postmaster.pid",
  "postmaster.opts",
  "current_logfiles",
  "pg_internal.init",
  "backup_label",
  "backup_label.old",
  "tablespace_map",
  "tablespace_map.old",
  "backup_manifest",
]);

/** Directories kept (PostgreSQL expects them) but copied empty: their contents are per run. */
const EMPTIED_DIRS = new Set([
  "pg_stat_tmp",
  "pg_replslot",
  "pg_dynshmem",
  "pg_notify",
  "pg_serial",
  "pg_snapshots",
  "pg_subtrans",
]);

const WAL_DIR = "pg_wal";
/** Written last, as pg_basebackup does: a copy cut short has none and cannot start. */
const CONTROL_FILE = "global/pg_control";
const WAL_SEGMENT = /^[0-9A-F]{24}$/;
const TIMELINE_HISTORY = /^[0-9A-F]{8}\.history$/;

/** Which WAL the copy holds: none (an online backup adds its own range), or all of pg_wal. */
export type WalCopy = "none" | "all";

export type TarPack = Pack;
export const newTarPack = (): TarPack => tarPack();

/**
 * An entry's sink, with an 'error' listener: a pack destroyed with an error (the backup
 * aborted) destroys its sink with it, and the entry's callback already reports that; unheard,
 * the sink's 'error' event would end the process.
 */
function quiet<T extends { on(event: "error", listener: () => void): unknown }>(sink: T): T {
  sink.on("error", () => undefined);
  return sink;
}

/** Runs `write` with a callback and settles when tar-stream calls it. */
const entryWritten = (write: (done: (e?: Error | null) => void) => void): Promise<void> =>
  new Promise<void>((resolve, reject) => write((e) => (e ? reject(e) : resolve())));

/** `name` with `bytes` as its content. */
export async function addBytes(pack: TarPack, name: string, bytes: Buffer): Promise<void> {
  await entryWritten((done) => quiet(pack.entry({ name, mode: FILE_MODE, size: bytes.length }, bytes, done)));
}

async function addDirectory(pack: TarPack, name: string): Promise<void> {
  await entryWritten((done) => quiet(pack.entry({ name, type: "directory", mode: DIR_MODE }, done)));
}

/**
 * The file at `path` as entry `name`, its length the one it had when stat'ed. A data file the
 * server writes meanwhile may be read torn, grow or shrink: the WAL the backup holds repairs
 * every block written after the backup started, so the entry keeps the stat'ed length and a
 * shrunk file is padded with zeros (pg_basebackup does the same). A file deleted before it is
 * opened is left out (the server dropped it; the WAL says so). Returns false then.
 */
async function addFile(pack: TarPack, name: string, path: string): Promise<boolean> {
  const handle = await open(path, "r").catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return null;
    throw e;
  });
  if (!handle) return false;
  try {
    const { size, mtime } = await handle.stat();
    let settle!: (e: Error | null) => void;
    const written = new Promise<void>((resolve, reject) => (settle = (e) => (e ? reject(e) : resolve())));
    // Awaited below; this keeps a failure while no one awaits it from being "unhandled".
    written.catch(() => undefined);
    const entry = quiet(pack.entry({ name, mode: FILE_MODE, size, mtime }, (e) => settle(e ?? null)));
    const buffer = Buffer.allocUnsafe(READ_CHUNK);
    let position = 0;
    while (position < size) {
      if (pack.destroying) throw new Error("the backup's reader went away");
      const want = Math.min(READ_CHUNK, size - position);
      const { bytesRead } = await handle.read(buffer, 0, want, position);
      // Shrunk since the stat: the rest is zeros. A copy: the buffer is reused.
      const chunk = bytesRead > 0 ? Buffer.from(buffer.subarray(0, bytesRead)) : Buffer.alloc(want);
      position += chunk.length;
      if (!entry.write(chunk)) await Promise.race([once(entry, "drain"), written]);
    }
    entry.end(null);
    await written;
    return true;
  } finally {
    await handle.close();
  }
}

/** Forks of unlogged relations other than their init fork: a restore resets them from it. */
function unloggedForks(names: readonly string[]): Set<string> {
  const unlogged = new Set(names.filter((n) => /^\d+_init$/.test(n)).map((n) => n.slice(0, -"_init".length)));
  if (unlogged.size === 0) return new Set();
  return new Set(
    names.filter((n) => {
      const m = /^(\d+)(?:_(?:fsm|vm))?(?:\.\d+)?$/.exec(n);
      return m !== null && unlogged.has(m[1]!);
    }),
  );
}

const isTemporary = (name: string): boolean => name.startsWith("pgsql_tmp");

/**
 * Every file of the data directory `root` under `rel` into `pack`, by the rules above. pg_wal
 * is copied whole or left empty, as `wal` says; pg_control is not copied here (addControlFile).
 */
async function addTree(pack: TarPack, root: string, rel: string, wal: WalCopy): Promise<void> {
  const entries: Dirent[] = await readdir(join(root, rel), { withFileTypes: true }).catch(
    (e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return [];
      throw e;
    },
  );
  entries.sort((a, b) => (a.name < b.name ? -1 : 1));
  const skipped = unloggedForks(entries.map((e) => e.name));
  for (const e of entries) {
    const name = rel === "" ? e.name : `${rel}/${e.name}`;
    if (EXCLUDED_FILES.has(e.name) || isTemporary(e.name) || skipped.has(e.name) || name === CONTROL_FILE)
      continue;
    if (e.isDirectory()) {
      await addDirectory(pack, name);
      if (rel === "" && EMPTIED_DIRS.has(e.name)) continue;
      if (name === WAL_DIR) await addWalDirectory(pack, root, wal);
      else await addTree(pack, root, name, wal);
    } else if (e.isFile()) {
      await addFile(pack, name, join(root, name));
    } else if (e.isSymbolicLink()) {
      // A tablespace lives outside the directory: a copy without it would restore without data.
      throw new Error(`${join(root, name)} is a symbolic link; a backup copies one directory only`);
    }
  }
}

/** pg_wal's subdirectories (kept empty) and, when asked, every segment and history file. */
async function addWalDirectory(pack: TarPack, root: string, wal: WalCopy): Promise<void> {
  const names = (await readdir(join(root, WAL_DIR), { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : 1,
  );
  for (const e of names) {
    const name = `${WAL_DIR}/${e.name}`;
    if (e.isDirectory()) await addDirectory(pack, name);
    else if (wal === "all" && e.isFile() && (WAL_SEGMENT.test(e.name) || TIMELINE_HISTORY.test(e.name)))
      await addFile(pack, name, join(root, name));
  }
}

/** Everything of the data directory but pg_control (and pg_wal's files unless `wal` is all). */
export async function addDataFiles(pack: TarPack, root: string, wal: WalCopy): Promise<void> {
  if (!(await stat(join(root, "PG_VERSION")).catch(() => null))?.isFile())
    throw new Error(`${root} is not a PostgreSQL data directory (no PG_VERSION)`);
  await addTree(pack, root, "", wal);
}

/**
 * The WAL an online backup needs: the segments from the one its start lies in to the one its
 * stop lies in, and the timeline history files. Both ends must be there: a replication slot
 * holds them (pglite-online-backup.ts), so a missing one means the copy cannot be restored.
 */
export async function addWalRange(pack: TarPack, root: string, first: string, last: string): Promise<void> {
  const names = (await readdir(join(root, WAL_DIR))).sort();
  const segments = names.filter((n) => WAL_SEGMENT.test(n) && n >= first && n <= last);
  for (const end of [first, last])
    if (!segments.includes(end)) throw new Error(`WAL segment ${end} is gone from ${join(root, WAL_DIR)}`);
  for (const n of [...names.filter((n) => TIMELINE_HISTORY.test(n)), ...segments])
    if (!(await addFile(pack, `${WAL_DIR}/${n}`, join(root, WAL_DIR, n))))
      throw new Error(`WAL file ${n} vanished while it was copied`);
}

/** pg_control, last. */
export async function addControlFile(pack: TarPack, root: string): Promise<void> {
  if (!(await addFile(pack, CONTROL_FILE, join(root, CONTROL_FILE))))
    throw new Error(`${root} has no ${CONTROL_FILE}`);
}

/**
 * A data directory no server runs on, as it lies, with all of pg_wal: a directory a server
 * left by crashing recovers on its first open, as it would have on the server's next start.
 * The caller holds the directory's lock until the stream closes.
 */
export function stoppedDataDirTar(root: string): Readable {
  const pack = newTarPack();
  void (async () => {
    await addDataFiles(pack, root, "all");
    await addControlFile(pack, root);
    pack.finalize();
  })().catch((e: unknown) => pack.destroy(e as Error));
  return Readable.from(pack, { objectMode: false });
}
