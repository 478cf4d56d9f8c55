import { PGlite } from "@electric-sql/pglite";
import type { Database, QueryResult, Transaction } from "./client.ts";
import { assertChannelName, NUMBER_TYPE_OIDS, parseNumber } from "./client.ts";

const parsers = { [NUMBER_TYPE_OIDS.int8]: parseNumber, [NUMBER_TYPE_OIDS.numeric]: parseNumber };

function toResult<R>(res: { rows: R[]; affectedRows?: number }): QueryResult<R> {
  return { rows: res.rows, rowCount: Math.max(res.rows.length, res.affectedRows ?? 0) };
}

type PgliteHandle = Pick<PGlite, "query" | "exec">;

function wrap(q: PgliteHandle): Transaction {
  return {
    async query<R>(text: string, params: readonly unknown[] = []) {
      return toResult(await q.query<R>(text, params as unknown[]));
    },
    async exec(sql: string) {
      await q.exec(sql);
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
  const base = wrap(pg);
  return {
    kind: "pglite",
    raw: pg,
    query: (text, params) => base.query(text, params),
    async transaction(fn) {
      return pg.transaction((tx) => fn(wrap(tx)));
    },
    async exec(sql) {
      await pg.exec(sql);
    },
    async subscribe(channel, handlers) {
      assertChannelName(channel);
      // One in-process connection: a LISTEN here never drops, so there is never a gap.
      const unlisten = await pg.listen(channel, (payload) => handlers.message(payload));
      let open = true;
      return {
        get connected() {
          return open && !pg.closed;
        },
        async close() {
          if (!open) return;
          open = false;
          if (!pg.closed) await unlisten();
        },
      };
    },
    async close() {
      if (!pg.closed) await pg.close();
    },
  };
}
