import { join } from "node:path";
import type { Database } from "./client.ts";
import { makeDataDirPrivate, type DataDirPrivacy } from "./data-dir-privacy.ts";
import { openPglite } from "./pglite.ts";
import { openPostgres } from "./postgres.ts";

export interface OpenDatabaseOptions {
  databaseUrl: string | null;
  dataDir: string;
  poolSize: number;
  onPoolError?: (e: Error) => void;
  /** Embedded: DATA_DIR had entries open to other accounts (now closed, or not ours to close). */
  onDataDirOpened?: (privacy: DataDirPrivacy) => void;
}

/** Where the embedded engine keeps its database inside DATA_DIR. */
export const embeddedDatabaseDir = (dataDir: string): string => join(dataDir, "pgdata");

/**
 * PostgreSQL when a URL is configured, else embedded PGlite persisted under DATA_DIR/pgdata, in a
 * data directory made its owner's only first (data-dir-privacy.ts).
 */
export async function openDatabase(opts: OpenDatabaseOptions): Promise<Database> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.poolSize, opts.onPoolError);
  const privacy = await makeDataDirPrivate(opts.dataDir);
  if (privacy.fixed.length > 0 || privacy.refused.length > 0 || privacy.truncated)
    opts.onDataDirOpened?.(privacy);
  const db = await openPglite(embeddedDatabaseDir(opts.dataDir));
  // The files the engine has just created (a fresh database) are 0666: closed to others too.
  await makeDataDirPrivate(opts.dataDir);
  return db;
}
