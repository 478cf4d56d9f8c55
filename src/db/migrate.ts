import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Database } from "./client.ts";

const MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations/", import.meta.url));

// Any constant works; it only has to be the same for every mailprobe process on the database.
const MIGRATION_LOCK_ID = 0x6d61696c; // "mail"

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => ({
      version: Number(file.slice(0, 4)),
      name: file.replace(/\.sql$/, ""),
      sql: await readFile(new URL(file, `file://${dir.endsWith("/") ? dir : dir + "/"}`), "utf8"),
    })),
  );
}

/**
 * Applies pending migrations, one transaction per file. Each transaction first takes a
 * transaction-scoped advisory lock, so two processes starting together on one PostgreSQL
 * serialise here: the second sees the first's row and skips. Returns the versions applied.
 */
export async function migrate(db: Database, migrations?: Migration[]): Promise<number[]> {
  const all = migrations ?? (await loadMigrations());
  const applied: number[] = [];
  for (const m of all) {
    const didApply = await db.transaction(async (tx) => {
      await tx.query("select pg_advisory_xact_lock($1)", [MIGRATION_LOCK_ID]);
      await tx.exec(
        `create table if not exists schema_migrations (
           version integer primary key,
           name text not null,
           applied_at timestamptz not null default now())`,
      );
      const done = await tx.query("select 1 from schema_migrations where version = $1", [m.version]);
      if (done.rowCount > 0 || done.rows.length > 0) return false;
      await tx.query("insert into schema_migrations (version, name) values ($1, $2)", [m.version, m.name]);
      await tx.exec(m.sql);
      return true;
    });
    if (didApply) applied.push(m.version);
  }
  return applied;
}
