import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Database } from "./client.ts";
import { openPglite } from "./pglite.ts";
import { openPostgres } from "./postgres.ts";

export interface OpenDatabaseOptions {
  databaseUrl: string | null;
  dataDir: string;
  poolSize: number;
  onPoolError?: (e: Error) => void;
}

/** Where the embedded engine keeps its database inside DATA_DIR. */
export const embeddedDatabaseDir = (dataDir: string): string => join(dataDir, "pgdata");

/** PostgreSQL when a URL is configured, else embedded PGlite persisted under DATA_DIR/pgdata. */
export async function openDatabase(opts: OpenDatabaseOptions): Promise<Database> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.poolSize, opts.onPoolError);
  await mkdir(opts.dataDir, { recursive: true });
  return openPglite(embeddedDatabaseDir(opts.dataDir));
}
