// The storage port. Both adapters (PGlite, pg) speak the same PostgreSQL dialect with $n
// parameters, so every query in db/queries/ runs unchanged on either.

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

/** Anything that runs one parameterised statement: the database itself or an open transaction. */
export interface Queryable {
  query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
}

export type DatabaseKind = "pglite" | "postgres";

/** An open transaction. `exec` runs a multi-statement script (migrations). */
export interface Transaction extends Queryable {
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: DatabaseKind;
  /** Runs fn in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Runs a multi-statement script (migrations only). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

/** PostgreSQL type OIDs whose text form we parse to JS numbers in both adapters. */
export const NUMBER_TYPE_OIDS = {
  int8: 20,
  numeric: 1700,
} as const;

// Counts and sums come back as int8/numeric. Credits never approach 2^53, so plain numbers are
// exact and spare every caller a BigInt/string conversion.
export const parseNumber = (value: string): number => Number(value);

/** SQLSTATE codes we branch on (classify errors by code, never by message). */
export const SQLSTATE = {
  uniqueViolation: "23505",
  foreignKeyViolation: "23503",
  checkViolation: "23514",
  serializationFailure: "40001",
  deadlockDetected: "40P01",
  invalidTextRepresentation: "22P02",
} as const;

export function sqlState(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error) {
    const code = error.code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}
