// A Database (src/db/client.ts) that counts what goes to the database, for benches that report
// "DB round trips per request" by measurement rather than by reading the code.
//
// Every call that reaches the adapter is one round trip: db.query, db.exec, tx.query, tx.exec.
// db.transaction adds its BEGIN and its COMMIT (or ROLLBACK when fn throws), which the adapters
// send themselves (pg: on the checked-out client; PGlite: inside PGlite.transaction), so a
// transaction of k statements costs k + 2 round trips. On PGlite a "round trip" is a call into the
// WASM engine rather than a network exchange, but it is the same unit of work on PostgreSQL.
//
// Each statement is also classified:
//   - write: it inserts, updates or deletes (anywhere in it: `with … insert …` is a write);
//   - lock:  a read that takes row locks (`select … for update/no key update/share/key share`);
//   - read:  everything else (BEGIN/COMMIT/ROLLBACK are counted as "tx" instead).
// Per-statement counts are kept by text (whitespace collapsed, first 80 characters), so a bench
// can print which statements a request issued, with the wall time each took as the caller saw it
// (for BEGIN: the pool checkout too; for COMMIT/ROLLBACK: from fn's end to the settled promise).
import type { Database, QueryResult, Transaction } from "../../src/db/client.ts";

export type StatementKind = "write" | "lock" | "read" | "tx";

export interface Counts {
  roundTrips: number;
  writes: number;
  locks: number;
  reads: number;
  /** BEGIN + COMMIT/ROLLBACK. */
  txControl: number;
  /** Wall time spent waiting for the database (sum over statements; overlapping calls add up). */
  ms: number;
  /** Statement text (first 80 chars) → how many times it ran and the wall time it took in all. */
  statements: Map<string, StatementStats>;
}

export interface StatementStats {
  count: number;
  ms: number;
}

export interface Counter {
  reset(): void;
  /** A copy of the counts since the last reset. */
  read(): Counts;
}

const WRITE =
  /\b(insert\s+into|update\s+[\w."]+(\s+(as\s+)?\w+)?\s+set|delete\s+from|merge\s+into|truncate)\b/i;
const LOCK = /\bfor\s+(update|no\s+key\s+update|share|key\s+share)\b/i;

const normalise = (text: string): string =>
  text
    .replace(/--[^\n]*/g, " ")
    .replace(/\s+/g, " ")
    .trim();

export function classify(text: string): StatementKind {
  const t = normalise(text);
  if (/^(begin|commit|rollback|start transaction)\b/i.test(t)) return "tx";
  if (WRITE.test(t)) return "write";
  if (LOCK.test(t)) return "lock";
  return "read";
}

export const statementKey = (text: string): string => normalise(text).slice(0, 80);

const empty = (): Counts => ({
  roundTrips: 0,
  writes: 0,
  locks: 0,
  reads: 0,
  txControl: 0,
  ms: 0,
  statements: new Map(),
});

export function countingDatabase(db: Database): { db: Database; counter: Counter } {
  let counts = empty();
  /** Counts one round trip now; the returned function adds its duration once it is over. */
  const note = (text: string): (() => void) => {
    counts.roundTrips++;
    const kind = classify(text);
    if (kind === "write") counts.writes++;
    else if (kind === "lock") counts.locks++;
    else if (kind === "tx") counts.txControl++;
    else counts.reads++;
    const key = statementKey(text);
    const stats = counts.statements.get(key) ?? { count: 0, ms: 0 };
    stats.count++;
    counts.statements.set(key, stats);
    const started = performance.now();
    // A reset while the statement ran starts new counts: its time then goes to the old ones.
    const at = counts;
    return () => {
      const ms = performance.now() - started;
      at.ms += ms;
      stats.ms += ms;
    };
  };
  const timed = async <T>(text: string, run: () => Promise<T>): Promise<T> => {
    const done = note(text);
    try {
      return await run();
    } finally {
      done();
    }
  };
  const countedTx = (tx: Transaction): Transaction => ({
    query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      return timed(text, () => tx.query<R>(text, params));
    },
    exec(sql: string): Promise<void> {
      return timed(sql, () => tx.exec(sql));
    },
  });
  // Overrides on a Proxy of the real database: anything else it offers (PGlite's `raw`, pg's
  // `pool`, a member added to the interface later) passes through uncounted.
  const overrides: Pick<Database, "query" | "transaction" | "exec"> = {
    query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      return timed(text, () => db.query<R>(text, params));
    },
    // BEGIN's time runs from the call until fn starts (pool checkout included); COMMIT's (or
    // ROLLBACK's) from fn's end until the transaction settles.
    async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
      let begun = note("BEGIN");
      let ended: (() => void) | null = null;
      let failed = false;
      try {
        return await db.transaction(async (tx) => {
          begun();
          begun = () => {};
          try {
            return await fn(countedTx(tx));
          } catch (error) {
            failed = true;
            throw error;
          } finally {
            ended = note(failed ? "ROLLBACK" : "COMMIT");
          }
        });
      } catch (error) {
        // Failed before fn ran (no connection, BEGIN refused): still one BEGIN and one ROLLBACK.
        ended ??= note("ROLLBACK");
        throw error;
      } finally {
        begun();
        ended?.();
      }
    },
    exec(sql: string): Promise<void> {
      return timed(sql, () => db.exec(sql));
    },
  };
  const counted = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === "query" || prop === "transaction" || prop === "exec") return overrides[prop];
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    db: counted,
    counter: {
      reset() {
        counts = empty();
      },
      read() {
        return {
          ...counts,
          statements: new Map([...counts.statements].map(([k, v]) => [k, { ...v }])),
        };
      },
    },
  };
}
