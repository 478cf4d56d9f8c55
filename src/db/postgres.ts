import pg from "pg";
import type { Database, Transaction } from "./client.ts";
import { NUMBER_TYPE_OIDS, parseNumber } from "./client.ts";

const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === NUMBER_TYPE_OIDS.int8 || oid === NUMBER_TYPE_OIDS.numeric) return parseNumber;
    return pg.types.getTypeParser(oid, format) as (value: string) => unknown;
  },
};

function wrap(client: pg.Pool | pg.PoolClient): Transaction {
  return {
    async query<R>(text: string, params: readonly unknown[] = []) {
      const res = await client.query(text, params as unknown[]);
      return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
    },
    async exec(sql: string) {
      await client.query(sql);
    },
  };
}

/** Real PostgreSQL through a `pg` pool: the cluster mode (many API nodes and workers). */
export function openPostgres(
  connectionString: string,
  poolSize: number,
  onError: (e: Error) => void = () => {},
): Database & { pool: pg.Pool } {
  const pool = new pg.Pool({ connectionString, max: poolSize, types, application_name: "mailprobe" });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on("error", onError);
  const base = wrap(pool);
  return {
    kind: "postgres",
    pool,
    query: (text, params) => base.query(text, params),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query("begin");
        const result = await fn(wrap(client));
        await client.query("commit");
        return result;
      } catch (error) {
        await client.query("rollback").catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async exec(sql) {
      await pool.query(sql);
    },
    async close() {
      // Idempotent like the PGlite adapter's (pg itself throws "Called end on pool more than
      // once"), so cleanup code can close a database without knowing whether it already was.
      if (!pool.ending) await pool.end();
    },
  };
}
