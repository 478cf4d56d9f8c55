import type { Database, Queryable, Subscription } from "./client.ts";

// Per-node caches (authenticated keys, recent results) stay correct across nodes through one
// NOTIFY channel: whoever changes the source of truth announces it in the same transaction, and
// every node (this one included) drops what the message names. While a node is not listening (its
// connection to PostgreSQL is being re-established) it cannot hear those messages, so its caches
// are bypassed (`live` false) and emptied once it listens again.

const INVALIDATION_CHANNEL = "mailprobe_invalidate";

export type Invalidation =
  /** An API key was deactivated: its authenticated entry and its sessions' liveness go. */
  | { kind: "api_key"; id: string }
  /** Some of a user's stored results were deleted (task deletion). */
  | { kind: "user_results"; userId: string }
  /** Stored results of many users were deleted (the retention purge). */
  | { kind: "all_results" };

/** `null` means "a gap": messages may have been missed, drop everything. */
export type InvalidationHandler = (m: Invalidation | null) => void;

export interface InvalidationBus {
  /** True while this node hears every invalidation; caches must not be read otherwise. */
  readonly live: boolean;
  on(handler: InvalidationHandler): void;
  /** Applies `m` on this node at once (after the commit), not waiting for the echo. */
  applyLocally(m: Invalidation): void;
  close(): Promise<void>;
}

/**
 * Announces `m` to every node when the transaction of `q` commits (NOTIFY is transactional). The
 * announcing node hears it too, a moment after the commit; `InvalidationBus.applyLocally` is for
 * callers that must not serve the old data even for that moment.
 */
export async function announceInvalidation(q: Queryable, m: Invalidation): Promise<void> {
  await q.query("select pg_notify($1, $2)", [INVALIDATION_CHANNEL, JSON.stringify(m)]);
}

function parse(payload: string): Invalidation | null {
  try {
    const m = JSON.parse(payload) as Partial<Invalidation> & Record<string, unknown>;
    if (m.kind === "api_key" && typeof m.id === "string") return { kind: "api_key", id: m.id };
    if (m.kind === "user_results" && typeof m.userId === "string")
      return { kind: "user_results", userId: m.userId };
    if (m.kind === "all_results") return { kind: "all_results" };
  } catch {
    // An unreadable message is treated as a gap below: dropping everything is always safe.
  }
  return null;
}

/**
 * Subscribes in the background: until the LISTEN is up, `live` is false and callers go to the
 * database, so building the services stays synchronous and a database that is down at start
 * only costs cache hits.
 */
export function createInvalidationBus(db: Database, onError: (e: unknown) => void): InvalidationBus {
  const handlers: InvalidationHandler[] = [];
  let subscription: Subscription | null = null;
  let closed = false;

  const deliver = (m: Invalidation | null): void => {
    for (const h of handlers) h(m);
  };

  const subscribing = Promise.resolve()
    .then(() =>
      db.subscribe(INVALIDATION_CHANNEL, {
        message: (payload) => deliver(parse(payload)),
        gap: () => deliver(null),
      }),
    )
    .then(
      async (s) => {
        if (closed) await s.close();
        else subscription = s;
      },
      (e: unknown) => onError(e),
    );

  return {
    get live() {
      return !closed && subscription !== null && subscription.connected;
    },
    on(handler) {
      handlers.push(handler);
    },
    applyLocally: (m) => deliver(m),
    async close() {
      closed = true;
      await subscribing;
      await subscription?.close();
      subscription = null;
    },
  };
}
