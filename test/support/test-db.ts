import { readFile } from "node:fs/promises";
import type { Database } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { openPglite } from "../../src/db/pglite.ts";
import { openPostgres } from "../../src/db/postgres.ts";

/**
 * The database a test file runs on: PostgreSQL when TEST_DATABASE_URL is set (npm run test:pg,
 * one fresh database per run), else an in-memory PGlite. Creating a PGlite costs ~3 s and 700 MB,
 * so the runner migrates one once and each file loads that template (~0.4 s).
 */
export async function openTestDatabase(): Promise<Database> {
  const url = process.env.TEST_DATABASE_URL;
  const db = url
    ? openPostgres(url, 8)
    : await openPglite(null, await templateBlob(process.env.MAILPROBE_PGLITE_TEMPLATE));
  await migrate(db);
  return db;
}

async function templateBlob(path: string | undefined): Promise<Blob | undefined> {
  if (!path) return undefined;
  return new Blob([await readFile(path)]);
}

export const testEngine = (): string => (process.env.TEST_DATABASE_URL ? "postgres" : "pglite");
