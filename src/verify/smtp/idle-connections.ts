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
import type { HostSlot } from "../ports.ts";
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
  /** The egress identity it leaves from ('' = the default one): only that identity's sessions take it. */
  egress: string;
  conn: SmtpConnection;
  /** Frees the host-gate slot the connection holds; called once, after the connection is closed. */
  release: HostSlot;
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

// Parked connections and waiters are keyed by identity and server IP: a connection from one
// source address is no use to a session that must leave from another.
const keyOf = (address: string, egress: string): string => `${egress}\n${address}`;

export class IdleConnections {
  private readonly parked = new Map<string, Parked[]>();
  private readonly waiters = new Map<string, Waiter[]>();
  private readonly retiring = new Set<Promise<void>>();
  /** Parked connections per server IP, every identity together. */
  private readonly perAddress = new Map<string, number>();

  constructor(private readonly o: IdleConnectionsOptions) {}

  /** Idle connections to `address` right now, from every identity. */
  count(address: string): number {
    return this.perAddress.get(address) ?? 0;
  }

  /** The most recently parked usable connection to `address` from `egress`, or null. */
  take(address: string, egress = ""): IdleConnection | null {
    const key = keyOf(address, egress);
    const list = this.parked.get(key);
    while (list !== undefined && list.length > 0) {
      const entry = list.pop()!;
      if (list.length === 0) this.parked.delete(key);
      this.counted(address, -1);
      clearTimeout(entry.timer);
      if (entry.idle.conn.reusable) return entry.idle;
      this.retire(entry.idle);
    }
    return null;
  }

  private counted(address: string, delta: number): void {
    const n = (this.perAddress.get(address) ?? 0) + delta;
    if (n <= 0) this.perAddress.delete(address);
    else this.perAddress.set(address, n);
  }

  /** Parks a connection whose conversation ended well: handed to a waiter at once, or kept for idleMs. */
  put(idle: IdleConnection): void {
    if (!idle.conn.reusable || this.o.idleMs <= 0) {
      this.retire(idle);
      return;
    }
    const key = keyOf(idle.address, idle.egress);
    const waiters = this.waiters.get(key);
    const waiter = waiters?.shift();
    if (waiters !== undefined && waiters.length === 0) this.waiters.delete(key);
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
    const list = this.parked.get(key) ?? [];
    list.push(entry);
    this.parked.set(key, list);
    this.counted(idle.address, 1);
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
  wait(address: string, signal: AbortSignal, egress = ""): Promise<IdleConnection> {
    if (signal.aborted) return Promise.reject(new AbortedError());
    const key = keyOf(address, egress);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = (idle) => {
        signal.removeEventListener("abort", onAbort);
        resolve(idle);
      };
      const onAbort = (): void => {
        const list = this.waiters.get(key) ?? [];
        const i = list.indexOf(waiter);
        if (i >= 0) list.splice(i, 1);
        if (list.length === 0) this.waiters.delete(key);
        reject(new AbortedError());
      };
      signal.addEventListener("abort", onAbort, { once: true });
      const list = this.waiters.get(key) ?? [];
      list.push(waiter);
      this.waiters.set(key, list);
    });
  }

  /** Closes every idle connection and waits until each has been closed and its slot freed. */
  async closeAll(): Promise<void> {
    for (const [key, list] of this.parked) {
      this.parked.delete(key);
      for (const entry of list) {
        this.counted(entry.idle.address, -1);
        clearTimeout(entry.timer);
        this.retire(entry.idle);
      }
    }
    await Promise.all([...this.retiring]);
  }

  private remove(entry: Parked): boolean {
    const key = keyOf(entry.idle.address, entry.idle.egress);
    const list = this.parked.get(key);
    const i = list?.indexOf(entry) ?? -1;
    if (list === undefined || i < 0) return false;
    list.splice(i, 1);
    if (list.length === 0) this.parked.delete(key);
    this.counted(entry.idle.address, -1);
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
