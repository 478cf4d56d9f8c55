// The lifecycle of one connection within a session: begun fresh or taken over from the idle
// set, worth parking for the next domain or not, and ended politely (QUIT) or not.
import type { HostSlot } from "../ports.ts";
import type { SmtpConnection } from "./connection.ts";
import type { ConnectionState, IdleConnection } from "./idle-connections.ts";
import type { SessionConfig, SessionReport } from "./session-types.ts";

export interface ConnectionLimits {
  transaction: number;
  /** Learned per-connection RCPT limit, or null. */
  connection: number | null;
}

/** The per-connection state of a conversation: fresh, or taken over from an idle connection. */
export interface LiveConnection {
  /** EHLO done (and STARTTLS when used): keywords are known. */
  greeted: boolean;
  keywords: Set<string>;
  errors: number;
  rcptOnConnection: number;
  /** A transaction may be open: the next one starts with RSET. */
  needsRset: boolean;
  limits: ConnectionLimits;
  /** The recipients of the write in progress, until their replies are in. */
  inFlight: string[];
  /** Taken over from the idle set and not yet heard from in this session. */
  stale: boolean;
}

export function freshConnection(config: SessionConfig, learned?: ConnectionLimits): LiveConnection {
  return {
    greeted: false,
    keywords: new Set(),
    errors: 0,
    rcptOnConnection: 0,
    needsRset: false,
    limits: learned ?? { transaction: Math.max(1, config.maxRcpt), connection: null },
    inFlight: [],
    stale: false,
  };
}

export function resumedConnection(state: ConnectionState, config: SessionConfig): LiveConnection {
  return {
    greeted: true,
    keywords: new Set(state.keywords),
    errors: state.errors,
    rcptOnConnection: state.rcptOnConnection,
    needsRset: true,
    limits: {
      transaction: Math.min(Math.max(1, config.maxRcpt), state.transactionLimit),
      connection: state.connectionLimit,
    },
    inFlight: [],
    stale: true,
  };
}

/** A connection worth keeping: open, unaborted, and with room in its error budget. */
export function parkable(
  conn: SmtpConnection,
  live: LiveConnection,
  config: SessionConfig,
  signal: AbortSignal | undefined,
): boolean {
  if (signal?.aborted === true || !conn.reusable || !live.greeted) return false;
  if (live.errors >= Math.max(1, config.errorBudget) - 1) return false;
  return live.limits.connection === null || live.rcptOnConnection < live.limits.connection;
}

export function idleOf(
  address: string,
  egress: string,
  conn: SmtpConnection,
  release: HostSlot,
  live: LiveConnection,
  report: SessionReport,
): IdleConnection {
  return {
    address,
    egress,
    conn,
    release,
    state: {
      keywords: live.keywords,
      tls: report.tls,
      greeting: report.greeting,
      ehlo: report.ehlo,
      errors: live.errors,
      rcptOnConnection: live.rcptOnConnection,
      transactionLimit: live.limits.transaction,
      connectionLimit: live.limits.connection,
    },
  };
}

/** After our QUIT the server closes; after its 421 or a drop there is nothing left to say. */
export async function endConnection(
  conn: SmtpConnection,
  polite: boolean,
  config: SessionConfig,
): Promise<void> {
  if (polite) {
    await conn.quit(config.commandTimeoutMs);
    return;
  }
  conn.destroy();
  await conn.closed;
}
