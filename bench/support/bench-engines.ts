import type { Database } from "../../src/db/client.ts";
import { openPglite } from "../../src/db/pglite.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { withSearchPath } from "../../test/support/test-db.ts";

/** Opens a fresh, empty database; `done` closes it and drops what it made. */
export type EngineOpener = () => Promise<{ db: Database; done: () => Promise<void> }>;

/**
 * A fresh database per run on each engine the command line asks for: embedded PGlite in memory
 * unless `--postgres-only`, and PostgreSQL (a schema of its own under BENCH_DATABASE_URL, dropped
 * afterwards) unless `--pglite-only`; a line says when PostgreSQL is skipped for want of the URL.
 */
export function benchEngines(): Array<[string, EngineOpener]> {
  const out: Array<[string, EngineOpener]> = [];
  if (!process.argv.includes("--postgres-only"))
    out.push([
      "pglite",
      async () => {
        const db = await openPglite(null);
        return { db, done: () => db.close() };
      },
    ]);
  if (process.argv.includes("--pglite-only")) return out;
  const base = process.env.BENCH_DATABASE_URL;
  if (!base) {
    console.log("  postgres  skipped (set BENCH_DATABASE_URL)");
    return out;
  }
  out.push([
    "postgres",
    async () => {
      const schema = `bench_${Date.now().toString(36)}`;
      const admin = openPostgres(base, 1);
      await admin.query(`create schema ${schema}`);
      const db = openPostgres(withSearchPath(base, schema), 20);
      return {
        db,
        done: async () => {
          await db.close();
          await admin.query(`drop schema ${schema} cascade`);
          await admin.close();
        },
      };
    },
  ]);
  return out;
}
