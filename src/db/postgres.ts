import pg from "pg";
import type { Database, Transaction } from "./client.ts";
import {
  DatabaseUnavailableError,
  isDatabaseUnavailable,
  NUMBER_TYPE_OIDS,
  parseNumber,
  SQLSTATE,
  sqlState,
} from "./client.ts";
import { listenOnPostgres } from "./postgres-listen.ts";

const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === NUMBER_TYPE_OIDS.int8 || oid === NUMBER_TYPE_OIDS.numeric) return parseNumber;
    return pg.types.getTypeParser(oid, format) as (value: string) => unknown;
  },
};

/**
 * Server errors keep their SQLSTATE (callers branch on it); a lost or refused connection becomes a
 * DatabaseUnavailableError. pg raises those without a SQLSTATE ("Connection terminated
 * unexpectedly", ECONNREFUSED), and programming errors (bad parameters) as TypeError/RangeError.
 */
function translate(error: unknown): unknown {
  if (error instanceof pg.DatabaseError)
    return isDatabaseUnavailable(error) ? new DatabaseUnavailableError(error) : error;
  if (error instanceof TypeError || error instanceof RangeError) return error;
  return new DatabaseUnavailableError(error);
}

function wrap(client: pg.Pool | pg.PoolClient): Transaction {
  return {
    async query<R>(text: string, params: readonly unknown[] = []) {
      try {
        const res = await client.query(text, params as unknown[]);
        return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
      } catch (error) {
        throw translate(error);
      }
    },
    async exec(sql: string) {
      try {
        await client.query(sql);
      } catch (error) {
        throw translate(error);
      }
    },
  };
}

/** Re-runs of one transaction after it was chosen as a deadlock victim (Database.transaction). */
const DEADLOCK_RETRIES = 1;

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
  const stats = { deadlockRetries: 0 };

  async function runTransaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw translate(error);
    }
    // The pool listens for errors only on idle clients. A checked-out client whose connection
    // drops (a server restart: 57P01, then "Connection terminated unexpectedly") emits 'error',
    // and with no listener that kills the process (it did in 6 of 6 restart rounds).
    let broken: Error | undefined;
    const onClientError = (e: Error): void => {
      broken ??= e;
      onError(e);
    };
    client.on("error", onClientError);
    const tx = wrap(client);
    try {
      await tx.query("begin");
      const result = await fn(tx);
      await tx.query("commit");
      return result;
    } catch (error) {
      if (!broken)
        await client.query("rollback").catch((e: unknown) => {
          broken = e instanceof Error ? e : new Error(String(e));
        });
      throw error;
    } finally {
      client.removeListener("error", onClientError);
      // A broken client is discarded, not handed to the next caller.
      client.release(broken);
    }
  }

  return {
    kind: "postgres",
    pool,
    query: (text, params) => base.query(text, params),
    // The global lock order (docs/locking.md: users, then tasks, then jobs, several of one kind
    // in id order) keeps our transactions from waiting on each other in a cycle; a deadlock the
    // order missed costs one re-run here instead of a failed request or a lost result write.
    async transaction(fn) {
      for (let attempt = 0; ; attempt++) {
        try {
          return await runTransaction(fn);
        } catch (error) {
          if (attempt >= DEADLOCK_RETRIES || sqlState(error) !== SQLSTATE.deadlockDetected) throw error;
          stats.deadlockRetries++;
        }
      }
    },
    stats,
    async exec(sql) {
      await base.exec(sql);
    },
    subscribe: (channel, handlers) => listenOnPostgres(connectionString, channel, handlers, onError),
    async close() {
      // Idempotent like the PGlite adapter's (pg itself throws "Called end on pool more than
      // once"), so cleanup code can close a database without knowing whether it already was.
      if (!pool.ending) await pool.end();
    },
  };
}
