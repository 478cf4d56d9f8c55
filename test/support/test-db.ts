import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Database } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { openPglite } from "../../src/db/pglite.ts";
import { openPostgres } from "../../src/db/postgres.ts";

const urls = new WeakMap<Database, string>();

/** A connection string whose sessions use `schema` (pg passes `options` to the server). */
export function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set("options", `-c search_path=${schema}`);
  return u.toString();
}

/**
 * The database a test file runs on: on PostgreSQL (TEST_DATABASE_URL, one fresh database per
 * run) a schema of its own, so worker pools of different files never claim each other's jobs;
 * else an in-memory PGlite. Creating a PGlite costs ~3 s and 700 MB, so the runner migrates one
 * once and each file loads that template (~0.4 s).
 */
export async function openTestDatabase(): Promise<Database> {
  const base = process.env.TEST_DATABASE_URL;
  let db: Database;
  if (base) {
    const schema = `t_${randomBytes(6).toString("hex")}`;
    const admin = openPostgres(base, 1);
    await admin.query(`create schema ${schema}`);
    await admin.close();
    const url = withSearchPath(base, schema);
    db = openPostgres(url, 8);
    urls.set(db, url);
  } else {
    db = await openPglite(null, await templateBlob(process.env.MAILPROBE_PGLITE_TEMPLATE));
  }
  await migrate(db);
  return db;
}

/** The connection string of a PostgreSQL test database (for child processes), or null on PGlite. */
export const testDatabaseUrl = (db: Database): string | null => urls.get(db) ?? null;

async function templateBlob(path: string | undefined): Promise<Blob | undefined> {
  if (!path) return undefined;
  return new Blob([await readFile(path)]);
}

export const testEngine = (): string => (process.env.TEST_DATABASE_URL ? "postgres" : "pglite");

/**
 * An empty database to migrate step by step (migration tests): a fresh in-memory PGlite, or a
 * new schema on TEST_DATABASE_URL that `close` drops.
 */
export async function openEmptyDatabase(
  prefix: string,
): Promise<{ db: Database; close: () => Promise<void> }> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) {
    const db = await openPglite(null);
    return { db, close: () => db.close() };
  }
  const schema = `${prefix}_${randomBytes(5).toString("hex")}`;
  const admin = openPostgres(base, 1);
  await admin.query(`create schema ${schema}`);
  const db = openPostgres(withSearchPath(base, schema), 2);
  return {
    db,
    close: async () => {
      await db.close();
      await admin.query(`drop schema ${schema} cascade`);
      await admin.close();
    },
  };
}
