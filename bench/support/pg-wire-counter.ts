// A loopback TCP proxy in front of PostgreSQL that counts what other processes send it, for
// benches whose database clients live in child processes (a wrapped Database, counting-db.ts, only
// sees this process's own calls, and pg_stat_statements is not loaded on a stock server).
//
// It reads the client → server half of the wire protocol (PostgreSQL docs, "Message Formats"):
// after the untyped startup packet every message is a type byte and an int32 length. A statement
// is one Query ('Q': the simple protocol, which node-postgres uses for parameterless text such as
// BEGIN/COMMIT) or one Execute ('E': the extended protocol of every parameterised query, whose
// text arrived in the Parse ('P') before it). That is the unit counting-db.ts calls a round trip,
// so the two figures compare. Statement texts are kept by counting-db's key (first 80 characters)
// and classified the same way (write, lock, read, tx). With `labelTransaction`, each transaction
// (BEGIN to COMMIT/ROLLBACK on one connection) is also tallied under the label it gets from its
// statements' keys: what a transaction did shows only in the order of its statements, which the
// counts by text lose.
import { createServer, connect, type Server, type Socket } from "node:net";
import { classify, statementKey, type StatementKind } from "./counting-db.ts";

export interface WireCounts {
  /** Client connections accepted (each is one PostgreSQL backend). */
  connections: number;
  /** Query + Execute messages. */
  statements: number;
  byKind: Record<StatementKind, number>;
  /** Statement text (counting-db's key) → how many times it ran. */
  texts: Map<string, number>;
  /** labelTransaction's label → how many transactions got it. */
  transactions: Map<string, number>;
  bytesToServer: number;
  bytesToClient: number;
}

export interface WireCounterOptions {
  /** The label a finished transaction is tallied under, from its statements' keys in order (none: not tallied). */
  labelTransaction?: (keys: readonly string[]) => string | undefined;
}

export interface WireCounter {
  /** host:port to put in a connection string instead of the server's. */
  host: string;
  port: number;
  /** A copy of the counts since start or the last reset. */
  read(): WireCounts;
  reset(): void;
  close(): Promise<void>;
}

// Startup-phase request codes that are answered before (or instead of) a StartupMessage.
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

const empty = (): WireCounts => ({
  connections: 0,
  statements: 0,
  byKind: { write: 0, lock: 0, read: 0, tx: 0 },
  texts: new Map(),
  transactions: new Map(),
  bytesToServer: 0,
  bytesToClient: 0,
});

/** Reads NUL-terminated text at `at`. */
const cString = (b: Buffer, at: number): string => {
  const end = b.indexOf(0, at);
  return b.toString("utf8", at, end === -1 ? b.length : end);
};

const BEGIN = /^\s*(begin|start transaction)\b/i;

export async function startWireCounter(
  target: { host: string; port: number },
  opts: WireCounterOptions = {},
): Promise<WireCounter> {
  let counts = empty();
  const sockets = new Set<Socket>();

  /** Counts a statement; `tx` is its connection's open transaction (keys so far), returned as it is after. */
  const note = (text: string, tx: string[] | null): string[] | null => {
    counts.statements++;
    const kind = classify(text);
    counts.byKind[kind]++;
    const key = statementKey(text);
    counts.texts.set(key, (counts.texts.get(key) ?? 0) + 1);
    if (!opts.labelTransaction) return null;
    if (kind !== "tx") return tx?.concat(key) ?? null;
    if (BEGIN.test(text)) return [];
    const label = tx && opts.labelTransaction(tx);
    if (label) counts.transactions.set(label, (counts.transactions.get(label) ?? 0) + 1);
    return null;
  };

  const server: Server = createServer((client) => {
    counts.connections++;
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    let pending: Buffer = Buffer.alloc(0);
    let startup = true;
    // Prepared statement name ("" = unnamed) → text; a Bind names the one the next Execute runs.
    const prepared = new Map<string, string>();
    let bound = "";
    let tx: string[] | null = null;
    const parse = (chunk: Buffer): void => {
      counts.bytesToServer += chunk.length;
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      for (;;) {
        if (startup) {
          if (pending.length < 8) return;
          const len = pending.readInt32BE(0);
          if (pending.length < len) return;
          const code = pending.readInt32BE(4);
          startup = code === SSL_REQUEST || code === GSSENC_REQUEST;
          pending = pending.subarray(len);
          continue;
        }
        if (pending.length < 5) return;
        const type = String.fromCharCode(pending[0]!);
        const len = pending.readInt32BE(1);
        if (pending.length < 1 + len) return;
        const body = pending.subarray(5, 1 + len);
        if (type === "Q") tx = note(cString(body, 0), tx);
        else if (type === "P") prepared.set(cString(body, 0), cString(body, body.indexOf(0) + 1));
        else if (type === "B") bound = prepared.get(cString(body, body.indexOf(0) + 1)) ?? "";
        else if (type === "E") tx = note(bound, tx);
        pending = pending.subarray(1 + len);
      }
    };
    client.on("data", parse);
    upstream.on("data", (d: Buffer) => (counts.bytesToClient += d.length));
    client.pipe(upstream);
    upstream.pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as { port: number };
  return {
    host: "127.0.0.1",
    port,
    read: () => ({
      ...counts,
      byKind: { ...counts.byKind },
      texts: new Map(counts.texts),
      transactions: new Map(counts.transactions),
    }),
    reset: () => void (counts = empty()),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
