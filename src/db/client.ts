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

/** What a subscriber of a notification channel is told. */
export interface ChannelHandlers {
  /** A NOTIFY payload on the channel (sent by any process of the cluster, this one included). */
  message(payload: string): void;
  /**
   * The subscription was (re)established after a time without it: anything sent meanwhile was
   * missed, so whatever the messages keep fresh must be dropped now.
   */
  gap(): void;
}

/** A live LISTEN. `connected` is false while the listening connection is being re-established. */
export interface Subscription {
  readonly connected: boolean;
  close(): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: DatabaseKind;
  /**
   * LISTENs on `channel` (a plain lower-case name) for the life of the subscription. Messages are
   * sent with `select pg_notify(channel, payload)`, inside the transaction whose commit they
   * announce. On PostgreSQL the listening connection is reconnected after a restart.
   */
  subscribe(channel: string, handlers: ChannelHandlers): Promise<Subscription>;
  /**
   * Runs fn in one transaction; commits when it resolves, rolls back when it throws.
   *
   * fn may run twice: when PostgreSQL aborts the transaction as a deadlock victim (SQLSTATE
   * 40P01), the adapter rolls it back and runs fn once more in a fresh transaction. So fn must be
   * re-runnable: every effect it has goes through `tx` (rolled back with it), and it keeps no
   * state of its own from one run to the next (what it computes before its first statement it
   * computes again). Work outside the database (HTTP, SMTP, timers, in-memory caches) belongs
   * after the call, with its result. Lock in the global order of docs/locking.md: users, then
   * tasks, then jobs, several of one kind in id order — then the retry is only a safety net.
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** What the adapter counted about its own work (absent on wrappers and on adapters that never retry). */
  readonly stats?: DatabaseStats;
  /**
   * Why this database can never answer again in this process (the embedded engine stopped after a
   * fatal error: only a restart recovers), or null. Absent on adapters that reconnect by themselves.
   */
  stoppedFor?(): Error | null;
  /** Runs a multi-statement script (migrations only). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseStats {
  /** Transactions run again after PostgreSQL chose them as a deadlock victim (SQLSTATE 40P01). */
  readonly deadlockRetries: number;
}

/** Channel names are interpolated into LISTEN (it takes no parameters): only plain identifiers. */
export function assertChannelName(channel: string): void {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new RangeError(`bad channel name: ${channel}`);
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

/**
 * The database could not be reached or dropped the connection (a restart, a failover, the network):
 * nothing is wrong with the statement, and the same work succeeds once the database is back. The
 * PostgreSQL adapter raises it for driver errors that carry no SQLSTATE ("Connection terminated
 * unexpectedly", ECONNREFUSED) and for the server's connection-class codes.
 */
export class DatabaseUnavailableError extends Error {
  override name = "DatabaseUnavailableError";
  /** The SQLSTATE or errno code of the underlying error, when it had one. */
  readonly code: string | undefined;
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.code = sqlState(cause);
  }
}

// SQLSTATE class 08 (connection exception) and the server going away or not accepting yet:
// 57P01 admin_shutdown (`pg_ctl stop -m fast`), 57P02 crash_shutdown, 57P03 cannot_connect_now
// ("the database system is starting up"), 57P05 idle_session_timeout, 53300 too_many_connections,
// 53100 disk_full (the server's disk: nothing is wrong with the request, and the same write
// succeeds once space is freed, so 503 and a retry, and a worker puts its jobs back).
const UNAVAILABLE_STATES = new Set(["57P01", "57P02", "57P03", "57P05", "53300", "53100"]);

/**
 * True when `error` says the database is out of reach for now (see DatabaseUnavailableError),
 * also when it is the `cause` of another error (a host slot that could not be taken because the
 * slot table did not answer is the same outage).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (e instanceof DatabaseUnavailableError) return true;
    const code = sqlState(e);
    if (code !== undefined && (code.startsWith("08") || UNAVAILABLE_STATES.has(code))) return true;
    e = e instanceof Error ? e.cause : undefined;
  }
  return false;
}

/** The constraint a violation names (unique, check, foreign key), when the driver reports it. */
export function constraintOf(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "constraint" in error) {
    const name = error.constraint;
    return typeof name === "string" ? name : undefined;
  }
  return undefined;
}

export function sqlState(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error) {
    const code = error.code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}
