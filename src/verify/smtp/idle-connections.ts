// Connections kept open for a moment between sessions to one server IP address. Servers count
// our connections per IP, and many domains share one: hosted providers give every tenant its own
// MX name (contoso-com.mail.protection.outlook.com) on the same front ends. A domain whose server
// already has an idle connection of ours continues on it with a new transaction (RSET, MAIL,
// its RCPTs: one pipelined write) instead of opening another: no connect, banner, EHLO or
// STARTTLS round trips, and the host-gate slot the connection holds passes along with it.
//
// Each domain gets its own transaction, never a shared one: with PIPELINING the RSET and MAIL
// ride in the same write as the RCPTs, so a shared transaction would save no round trip, and
// front ends that attribute a message to one tenant (Exchange Online) refuse cross-tenant RCPTs.
import { AbortedError } from "../abort.ts";
import type { SmtpConnection } from "./connection.ts";

/** What a later conversation must know to continue on a connection. */
export interface ConnectionState {
  /** The EHLO keywords (after STARTTLS when the connection is under TLS). */
  keywords: ReadonlySet<string>;
  tls: boolean;
  greeting: string;
  ehlo: string;
  /** Error replies (4xx/5xx) the connection has received: servers count them per connection. */
  errors: number;
  rcptOnConnection: number;
  /** Learned RCPT limit per transaction. */
  transactionLimit: number;
  /** Learned RCPT limit per connection, or null. */
  connectionLimit: number | null;
}

export interface IdleConnection {
  /** The server IP the connection is open to. */
  address: string;
  conn: SmtpConnection;
  /** Frees the host-gate slot the connection holds; called once, after the connection is closed. */
  release: () => void;
  state: ConnectionState;
}

export interface IdleConnectionsOptions {
  /** How long a connection may wait for a next conversation; 0 closes every connection at once. */
  idleMs: number;
  /** Closes a connection politely (QUIT) and resolves once the server has seen it closed. */
  retire: (conn: SmtpConnection) => Promise<void>;
}

interface Parked {
  idle: IdleConnection;
  timer: NodeJS.Timeout;
}

type Waiter = (idle: IdleConnection) => void;

export class IdleConnections {
  private readonly parked = new Map<string, Parked[]>();
  private readonly waiters = new Map<string, Waiter[]>();
  private readonly retiring = new Set<Promise<void>>();

  constructor(private readonly o: IdleConnectionsOptions) {}

  /** Idle connections to `address` right now. */
  count(address: string): number {
    return this.parked.get(address)?.length ?? 0;
  }

  /** The most recently parked usable connection to `address`, or null. */
  take(address: string): IdleConnection | null {
    const list = this.parked.get(address);
    while (list !== undefined && list.length > 0) {
      const entry = list.pop()!;
      if (list.length === 0) this.parked.delete(address);
      clearTimeout(entry.timer);
      if (entry.idle.conn.reusable) return entry.idle;
      this.retire(entry.idle);
    }
    return null;
  }

  /** Parks a connection whose conversation ended well: handed to a waiter at once, or kept for idleMs. */
  put(idle: IdleConnection): void {
    if (!idle.conn.reusable || this.o.idleMs <= 0) {
      this.retire(idle);
      return;
    }
    const waiters = this.waiters.get(idle.address);
    const waiter = waiters?.shift();
    if (waiters !== undefined && waiters.length === 0) this.waiters.delete(idle.address);
    if (waiter !== undefined) {
      waiter(idle);
      return;
    }
    const entry: Parked = {
      idle,
      timer: setTimeout(() => {
        if (this.remove(entry)) this.retire(idle);
      }, this.o.idleMs),
    };
    entry.timer.unref();
    const list = this.parked.get(idle.address) ?? [];
    list.push(entry);
    this.parked.set(idle.address, list);
    // The server may close an idle connection first (its own idle timeout): free the slot then.
    void idle.conn.closed.then(() => {
      if (this.remove(entry)) this.retire(idle);
    });
  }

  /**
   * Resolves with the next connection to `address` that is parked while waiting (first come,
   * first served); rejects with AbortedError on abort. A connection handed over after the caller
   * stopped caring must be given back with put().
   */
  wait(address: string, signal: AbortSignal): Promise<IdleConnection> {
    if (signal.aborted) return Promise.reject(new AbortedError());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = (idle) => {
        signal.removeEventListener("abort", onAbort);
        resolve(idle);
      };
      const onAbort = (): void => {
        const list = this.waiters.get(address) ?? [];
        const i = list.indexOf(waiter);
        if (i >= 0) list.splice(i, 1);
        if (list.length === 0) this.waiters.delete(address);
        reject(new AbortedError());
      };
      signal.addEventListener("abort", onAbort, { once: true });
      const list = this.waiters.get(address) ?? [];
      list.push(waiter);
      this.waiters.set(address, list);
    });
  }

  /** Closes every idle connection and waits until each has been closed and its slot freed. */
  async closeAll(): Promise<void> {
    for (const [address, list] of this.parked) {
      this.parked.delete(address);
      for (const entry of list) {
        clearTimeout(entry.timer);
        this.retire(entry.idle);
      }
    }
    await Promise.all([...this.retiring]);
  }

  private remove(entry: Parked): boolean {
    const list = this.parked.get(entry.idle.address);
    const i = list?.indexOf(entry) ?? -1;
    if (list === undefined || i < 0) return false;
    list.splice(i, 1);
    if (list.length === 0) this.parked.delete(entry.idle.address);
    clearTimeout(entry.timer);
    return true;
  }

  private retire(idle: IdleConnection): void {
    const done = this.o
      .retire(idle.conn)
      .catch(() => undefined)
      .finally(idle.release);
    this.retiring.add(done);
    void done.then(() => this.retiring.delete(done));
  }
}
