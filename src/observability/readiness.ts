import type { ConfigWarning } from "../config/index.ts";
import { noDiskSpaceGuard, type DiskSpaceGuard } from "./disk-space.ts";

/** Free space of DATA_DIR as /readyz reports it (embedded engine only). */
export interface DataDirSpace {
  /** Whole MiB free at the last sample; null when it could not be read. */
  freeMb: number | null;
  /** DATA_DIR_MIN_FREE_MB. */
  minFreeMb: number;
  /** Why the node refuses work that writes (free space below the threshold), or null. */
  refusal: string | null;
}

/** What GET /readyz reports about this node. */
export interface Readiness {
  /** The storage engine in use, e.g. "pglite" or "postgres". */
  database: string;
  /** Set-up problems that cost accuracy but don't make the node unready (e.g. a bare HELO name). */
  warnings: readonly ConfigWarning[];
  /** Null when this node writes to no directory of its own (PostgreSQL). */
  dataDir: DataDirSpace | null;
}

/** What GET /healthz reports: alive, or why only a restart of the process helps. */
export type Liveness = { alive: true } | { alive: false; reason: string };

export interface ReadinessService {
  /**
   * Whether the process can still serve: false once its database can never answer again (the
   * embedded engine stopped), so a supervisor's liveness probe restarts it. Never touches the
   * database: a slow one is a readiness matter, not a reason to restart.
   */
  liveness(): Liveness;
  /**
   * Throws when the database does not answer; the caller turns that into 503, as it does a
   * `dataDir.refusal`.
   */
  check(): Promise<Readiness>;
}

export interface ReadinessOptions {
  databaseKind: string;
  warnings: readonly ConfigWarning[];
  /** One round trip to the database; the composition root supplies it so this module needs no db/. */
  ping: () => Promise<void>;
  /** The embedded engine's DATA_DIR guard; absent (or the no-op guard) on PostgreSQL. */
  diskSpace?: DiskSpaceGuard;
  /** A ping slower than this counts as unreachable (a hung connect must not hang /readyz). */
  timeoutMs?: number;
  /** Why the database can never answer again in this process (Database.stoppedFor), or null. */
  stoppedFor?: () => Error | null;
}

export function createReadinessService(opts: ReadinessOptions): ReadinessService {
  const disk = opts.diskSpace ?? noDiskSpaceGuard;
  return {
    liveness() {
      const stopped = opts.stoppedFor?.() ?? null;
      return stopped === null ? { alive: true } : { alive: false, reason: stopped.message };
    },
    async check() {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("database ping timed out")), opts.timeoutMs ?? 5_000);
      });
      try {
        await Promise.race([opts.ping(), timeout]);
      } finally {
        clearTimeout(timer);
      }
      return { database: opts.databaseKind, warnings: opts.warnings, dataDir: dataDirOf(disk) };
    },
  };
}

const MIB = 1024 * 1024;

/** The guard's cached sample, never a fresh statfs: /readyz stays as cheap as a ping. */
function dataDirOf(disk: DiskSpaceGuard): DataDirSpace | null {
  if (disk.dir === null) return null;
  const s = disk.status();
  return {
    freeMb: s.freeBytes === null ? null : Math.floor(s.freeBytes / MIB),
    minFreeMb: Math.round(s.minFreeBytes / MIB),
    refusal: disk.refusal(),
  };
}
