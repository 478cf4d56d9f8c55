import { LRUCache } from "lru-cache";
import type { InvalidationBus } from "../db/invalidation-bus.ts";
import type { VerificationRecord } from "../db/queries/verifications.ts";

// Per-node memory in front of email_verifications and address_charges for the realtime path. The
// tables stay the source of truth (other nodes, restarts); this only saves round trips:
// - results: a user's newest definitive result per canonical address (the result cache);
// - charges: when the user last paid for an address (the free-repeat fact).
// A remembered charge is never wrong (money history is not deleted), so it needs no invalidation.
// A remembered result can be: deleting a task or the retention purge removes stored results, so
// those announce it on the bus, and results are only read and filled while the bus is live.

export interface RecentResultsOptions {
  maxEntries: number;
  maxBytes: number;
}

export interface RecentResults {
  /** The remembered result if validated after `since` (and the bus is live). */
  result(userId: string, email: string, since: Date): VerificationRecord | undefined;
  /** An opaque mark taken before a database read whose result may be remembered. */
  mark(): number;
  /** Remembers a definitive result read or written under `mark` unless invalidated meanwhile. */
  rememberResult(email: string, record: VerificationRecord, mark: number): void;
  /** When the user is known to have last paid for the address (undefined: not known here). */
  lastCharge(userId: string, email: string): Date | undefined;
  rememberCharge(userId: string, email: string, at: Date): void;
}

const keyOf = (userId: string, email: string): string => `${userId}\n${email}`;

/** Rough resident size of a record: its strings as UTF-16 plus object overhead. */
function sizeOf(record: VerificationRecord): number {
  let bytes = 400;
  for (const value of Object.values(record)) if (typeof value === "string") bytes += value.length * 2;
  return bytes;
}

export function createRecentResults(bus: InvalidationBus | null, opts: RecentResultsOptions): RecentResults {
  const enabled = bus !== null && opts.maxEntries > 0;
  const results = new LRUCache<string, VerificationRecord>({
    max: Math.max(1, opts.maxEntries),
    maxSize: opts.maxBytes,
    sizeCalculation: sizeOf,
  });
  const charges = new LRUCache<string, Date>({ max: Math.max(1, opts.maxEntries) });

  // Grows with every message about results: a fill that read the table before one arrived may
  // hold a deleted result, so it is not stored. (Key revocations do not concern results.)
  let epoch = 0;
  bus?.on((m) => {
    if (m === null || m.kind === "all_results") {
      epoch++;
      results.clear();
    } else if (m.kind === "user_results") {
      epoch++;
      const prefix = `${m.userId}\n`;
      for (const key of results.keys()) if (key.startsWith(prefix)) results.delete(key);
    }
  });

  return {
    result(userId, email, since) {
      if (!enabled || !bus.live) return undefined;
      const hit = results.get(keyOf(userId, email));
      return hit && hit.validatedAt > since ? hit : undefined;
    },
    mark: () => epoch,
    rememberResult(email, record, mark) {
      if (!enabled || !bus.live || epoch !== mark || record.status === "unknown") return;
      const key = keyOf(record.userId, email);
      const known = results.get(key);
      if (!known || known.validatedAt <= record.validatedAt) results.set(key, record);
    },
    lastCharge(userId, email) {
      return enabled ? charges.get(keyOf(userId, email)) : undefined;
    },
    rememberCharge(userId, email, at) {
      if (!enabled) return;
      const key = keyOf(userId, email);
      const known = charges.get(key);
      if (!known || known < at) charges.set(key, at);
    },
  };
}
