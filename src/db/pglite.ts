import { PGlite } from "@electric-sql/pglite";
import type { Database, QueryResult, Transaction } from "./client.ts";
import { dropLeftoverBackupSlot, type EngineSession } from "./pglite-online-backup.ts";
import {
  assertChannelName,
  DatabaseUnavailableError,
  NUMBER_TYPE_OIDS,
  parseNumber,
  sqlState,
} from "./client.ts";

const parsers = { [NUMBER_TYPE_OIDS.int8]: parseNumber, [NUMBER_TYPE_OIDS.numeric]: parseNumber };

function toResult<R>(res: { rows: R[]; affectedRows?: number }): QueryResult<R> {
  return { rows: res.rows, rowCount: Math.max(res.rows.length, res.affectedRows ?? 0) };
}

type PgliteHandle = Pick<PGlite, "query" | "exec">;

/** SQLSTATE 53100 disk_full: "could not extend file …: No space left on device". */
const DISK_FULL = "53100";

/**
 * The embedded engine stopped for good in this process: PostgreSQL PANICked or exited inside the
 * WebAssembly instance. Every statement fails with it at once; a restart recovers from the WAL.
 */
class EmbeddedDatabaseStoppedError extends DatabaseUnavailableError {
  override name = "EmbeddedDatabaseStoppedError";
  constructor(cause: unknown) {
    super(cause);
    // Emscripten's ExitStatus is not an Error but has a message ("Program terminated with exit(1)").
    const message = (cause as { message?: unknown } | null)?.message;
    const why = typeof message === "string" ? message : String(cause);
    this.message =
      `the embedded database stopped after a fatal error inside PostgreSQL (${why}); ` +
      "restart mailprobe once DATA_DIR has free space";
  }
}

/**
 * A failure of the disk rather than of the statement (disk_full) is an outage: the same work
 * succeeds once space is freed, so callers answer 503 and workers requeue instead of failing jobs.
 */
function translate(error: unknown): unknown {
  return sqlState(error) === DISK_FULL && !(error instanceof DatabaseUnavailableError)
    ? new DatabaseUnavailableError(error)
    : error;
}

const fail = (error: unknown): never => {
  throw translate(error);
};

/** The entry points of PGlite's module that its protocol loop (execProtocolRawSync) calls. */
interface BackendEntryPoints {
  _PostgresMainLoopOnce: () => void;
  stackRestore: (sp: number) => number;
  _PostgresSendReadyForQueryIfNecessary: () => void;
  _pgl_pq_flush: () => void;
}

/**
 * PGlite 0.5's protocol loop swallows every exception of the backend but its own ERROR longjmp
 * and calls the backend again until the message is consumed. After a PANIC (ENOSPC creating a
 * 16 MiB WAL segment: abort(), a RuntimeError) the next statement spins inside the instance on
 * what the aborted code held; after an exit (ExitStatus) the loop itself spins: call, throw,
 * swallow. Either way the event-loop thread runs at 100 % for good, so no request, timer or
 * SIGTERM handler runs again (reproduced with a full tmpfs: docs/disk-space.md; upstream
 * electric-sql/pglite#1058). These wrappers end that: the first such exception marks the instance
 * dead and escapes the loop (through stackRestore, the call its catch makes first), so the
 * statement in flight rejects instead of returning no rows, and nothing calls the instance again.
 * Returns the death, once there is one.
 */
function guardBackend(pg: PGlite): () => EmbeddedDatabaseStoppedError | null {
  const mod = pg.Module as unknown as BackendEntryPoints;
  const longjmp = (pg as unknown as { POSTGRES_MAIN_LONGJMP?: number }).POSTGRES_MAIN_LONGJMP ?? 100;
  const loopOnce = mod._PostgresMainLoopOnce;
  const stackRestore = mod.stackRestore;
  const sendReadyForQuery = mod._PostgresSendReadyForQueryIfNecessary;
  const flush = mod._pgl_pq_flush;
  let death: EmbeddedDatabaseStoppedError | null = null;
  mod._PostgresMainLoopOnce = () => {
    if (death) throw death;
    // Emscripten's exit() sets the host's process.exitCode: a dead backend must not decide ours.
    const exitCode = process.exitCode;
    try {
      loopOnce();
    } catch (e) {
      if ((e as { status?: unknown } | null)?.status !== longjmp) {
        process.exitCode = exitCode;
        death = new EmbeddedDatabaseStoppedError(e);
      }
      throw e;
    }
  };
  mod.stackRestore = (sp) => {
    if (death) throw death;
    return stackRestore(sp);
  };
  mod._PostgresSendReadyForQueryIfNecessary = () => {
    if (!death) sendReadyForQuery();
  };
  mod._pgl_pq_flush = () => {
    if (!death) flush();
  };
  return () => death;
}

function wrap(q: PgliteHandle): Transaction {
  return {
    async query<R>(text: string, params: readonly unknown[] = []) {
      return toResult(await q.query<R>(text, params as unknown[]).catch(fail));
    },
    async exec(sql: string) {
      await q.exec(sql).catch(fail);
    },
  };
}

/**
 * Embedded PostgreSQL (WASM). `dataDir` null → in memory (tests). One process may own a data
 * directory: PGlite has a single connection, so queries and transactions are serialised.
 */
export async function openPglite(
  dataDir: string | null,
  loadDataDir?: Blob,
): Promise<Database & { raw: PGlite }> {
  const pg = await PGlite.create(dataDir ?? undefined, { parsers, ...(loadDataDir ? { loadDataDir } : {}) });
  if (dataDir !== null) await dropLeftoverBackupSlot(pg);
  const deathOf = guardBackend(pg);
  // After a death nothing reaches PGlite: its own bookkeeping around a query calls the instance too.
  const live = (): void => {
    const death = deathOf();
    if (death) throw death;
    // Closed (shutting down, or by a test): out of reach like a stopped server, not a faulty statement.
    if (pg.closed) throw new DatabaseUnavailableError(new Error("the embedded database is closed"));
  };
  const base = wrap(pg);
  return {
    kind: "pglite",
    raw: pg,
    stoppedFor: deathOf,
    async query(text, params) {
      live();
      return base.query(text, params);
    },
    async transaction(fn) {
      live();
      return pg.transaction((tx) => fn(wrap(tx)));
    },
    async exec(sql) {
      live();
      await pg.exec(sql).catch(fail);
    },
    async subscribe(channel, handlers) {
      assertChannelName(channel);
      live();
      // One in-process connection: a LISTEN here never drops, so there is never a gap.
      const unlisten = await pg.listen(channel, (payload) => handlers.message(payload));
      let open = true;
      return {
        get connected() {
          return open && !pg.closed && !deathOf();
        },
        async close() {
          if (!open) return;
          open = false;
          if (!pg.closed && !deathOf()) await unlisten();
        },
      };
    },
    async close() {
      // A dead instance is left as it is: PGlite's close() runs the backend's exit code in it.
      if (!pg.closed && !deathOf()) await pg.close();
    },
  };
}

/**
 * The engine's one session and data directory, for what must speak to PostgreSQL beside the
 * Database interface (pglite-online-backup.ts); null unless `db` is an embedded database on disk.
 */
export function embeddedEngineOf(db: Database): { session: EngineSession; dataDir: string } | null {
  const pg = (db as { raw?: unknown }).raw;
  if (db.kind !== "pglite" || !(pg instanceof PGlite) || !pg.dataDir) return null;
  return { session: pg, dataDir: pg.dataDir };
}
