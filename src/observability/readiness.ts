import type { ConfigWarning } from "../config/index.ts";

/** What GET /readyz reports about this node. */
export interface Readiness {
  /** The storage engine in use, e.g. "pglite" or "postgres". */
  database: string;
  /** Set-up problems that cost accuracy but don't make the node unready (e.g. a bare HELO name). */
  warnings: readonly ConfigWarning[];
}

export interface ReadinessService {
  /** Throws when the database does not answer; the caller turns that into 503. */
  check(): Promise<Readiness>;
}

export interface ReadinessOptions {
  databaseKind: string;
  warnings: readonly ConfigWarning[];
  /** One round trip to the database; the composition root supplies it so this module needs no db/. */
  ping: () => Promise<void>;
  /** A ping slower than this counts as unreachable (a hung connect must not hang /readyz). */
  timeoutMs?: number;
}

export function createReadinessService(opts: ReadinessOptions): ReadinessService {
  return {
    async check() {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("database ping timed out")), opts.timeoutMs ?? 5_000);
      });
      try {
        await Promise.race([opts.ping(), timeout]);
      } finally {
        clearTimeout(timer);
      }
      return { database: opts.databaseKind, warnings: opts.warnings };
    },
  };
}
