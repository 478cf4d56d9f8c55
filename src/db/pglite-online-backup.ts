// An online base backup of the embedded engine while it serves: PostgreSQL's non-exclusive
// pg_backup_start/pg_backup_stop around a copy of the data directory read from disk, as
// pg_basebackup takes one (docs/operations.md "Backup and restore"). Requests go on
// meanwhile; they wait only for the checkpoint pg_backup_start runs.
import { Readable } from "node:stream";
import { DatabaseUnavailableError } from "./client.ts";
import {
  addBytes,
  addControlFile,
  addDataFiles,
  addWalRange,
  newTarPack,
  type TarPack,
} from "./base-backup-tar.ts";

/**
 * A physical replication slot holds the WAL from before the backup's start until its copy is
 * taken: without it a checkpoint during a long copy (max_wal_size written meanwhile) would
 * recycle the first segment the restore replays from. The slot is persistent (a temporary one
 * is dropped by any error of the session, and PGlite's one session serves every request), so a
 * process that dies during a backup leaves it behind: every open drops it (pglite.ts calls
 * dropLeftoverBackupSlot).
 */
const SLOT = "mailprobe_backup";

/** A second backup while one runs: the session holds one backup at a time. */
export class BackupInProgressError extends Error {
  override name = "BackupInProgressError";
  constructor() {
    super("a backup of this database is already running; wait for it to finish");
  }
}

/** What the backup needs of the engine: its one session, as pglite.ts hands it out. */
export interface EngineSession {
  query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
  readonly closed: boolean;
}

/** At open: a slot a dead process left would hold WAL (and disk) forever. */
export async function dropLeftoverBackupSlot(pg: Pick<EngineSession, "query">): Promise<void> {
  await pg.query(
    "select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = $1",
    [SLOT],
  );
}

interface BackupStart {
  lsn: string;
  file: string;
}

interface BackupStop {
  lsn: string;
  file: string;
  labelfile: string;
}

async function startBackup(pg: EngineSession, label: string): Promise<BackupStart> {
  await pg.query("select pg_create_physical_replication_slot($1, true, false)", [SLOT]);
  try {
    // fast: an immediate checkpoint rather than one spread over checkpoint_timeout.
    const { rows } = await pg.query<BackupStart>(
      "select lsn::text as lsn, pg_walfile_name(lsn) as file from pg_backup_start($1, true) as lsn",
      [label],
    );
    return rows[0]!;
  } catch (e) {
    await dropSlot(pg);
    throw e;
  }
}

async function stopBackup(pg: EngineSession): Promise<BackupStop> {
  const { rows } = await pg.query<BackupStop>(
    "select lsn::text as lsn, pg_walfile_name(lsn) as file, labelfile from pg_backup_stop(false)",
  );
  return rows[0]!;
}

async function dropSlot(pg: EngineSession): Promise<void> {
  if (!pg.closed) await dropLeftoverBackupSlot(pg);
}

/** The copy itself, into `pack`; the backup's end (and the slot's) whatever happens. */
async function copyInto(pack: TarPack, pg: EngineSession, root: string, start: BackupStart): Promise<void> {
  let stopped = false;
  try {
    await addDataFiles(pack, root, "none");
    const stop = await stopBackup(pg);
    stopped = true;
    // The restore starts from the checkpoint backup_label names and replays the WAL to the stop.
    await addBytes(pack, "backup_label", Buffer.from(stop.labelfile));
    await addWalRange(pack, root, start.file, stop.file);
    await addControlFile(pack, root);
    pack.finalize();
  } catch (e) {
    pack.destroy(e as Error);
  } finally {
    if (!stopped && !pg.closed) await stopBackup(pg).catch(() => undefined);
    await dropSlot(pg).catch(() => undefined);
  }
}

/** Online backups of one embedded engine, one at a time. */
export interface OnlineBackups {
  /** Starts one and streams it: ends the backup when read to the end or destroyed. */
  start(): Promise<Readable>;
  /**
   * For a server that stops: ends the running backup (its stream with an error) and one being
   * started, refuses new ones; resolves once none runs.
   */
  abort(): Promise<void>;
}

/**
 * Online backups of the embedded engine whose data directory is `root`: each streams as a tar
 * of the directory with backup_label and the WAL from start to stop.
 */
export function onlineBackups(pg: EngineSession, root: string): OnlineBackups {
  let running: { pack: TarPack; copied: Promise<void> } | null = null;
  let starting: Promise<unknown> | null = null;
  let stopping = false;
  const unavailable = (why: string): DatabaseUnavailableError => new DatabaseUnavailableError(new Error(why));

  async function begin(): Promise<Readable> {
    const start = await startBackup(pg, `mailprobe ${new Date().toISOString()}`);
    const pack = newTarPack();
    // Its reader (Readable.from below) hears its errors; before there is one, nothing must throw.
    pack.on("error", () => undefined);
    const copied = copyInto(pack, pg, root, start).finally(() => (running = null));
    running = { pack, copied };
    // Stopping began while pg_backup_start ran: end it at once rather than start a copy.
    if (stopping) {
      pack.destroy();
      await copied;
      throw unavailable("the server is stopping");
    }
    return Readable.from(pack, { objectMode: false });
  }

  return {
    async start() {
      if (pg.closed) throw unavailable("the embedded database is closed");
      if (stopping) throw unavailable("the server is stopping");
      if (running || starting) throw new BackupInProgressError();
      const started = begin();
      starting = started;
      try {
        return await started;
      } finally {
        starting = null;
      }
    },
    async abort() {
      stopping = true;
      await starting?.catch(() => undefined);
      const backup = running;
      if (!backup) return;
      backup.pack.destroy(new Error("the server is stopping"));
      await backup.copied;
    },
  };
}
