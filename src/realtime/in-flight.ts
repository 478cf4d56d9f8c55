// Per-user cap on fresh realtime verifications running at once (VERIFY_MAX_IN_FLIGHT_PER_USER).
// The per-host gate keeps a mail host safe from us; this keeps one account from taking every
// session slot and DNS query of the node: a user with a balance of 1 could hold 60 SMTP
// verifications open at once, free because their results were unknown.
//
// What counts: distinct addresses a user has in the engine at once. Cached answers never reach
// the engine and are not counted; concurrent requests for an address already in flight for that
// user share its slot (the engine asks one RCPT for them). In memory, per process: with N nodes
// behind a balancer a user may have up to N × the limit in flight.

/** Releases a slot; calling it again does nothing. */
export type Release = () => void;

export interface InFlightLimiter {
  /** A slot for `key` (an address) of `userId`, or null when the user is at the limit. */
  tryAcquire(userId: string, key: string): Release | null;
  /** Distinct keys the user has in flight now. */
  count(userId: string): number;
}

export function createInFlightLimiter(maxPerUser: number): InFlightLimiter {
  /** userId → key → number of callers holding it. Users with nothing in flight are removed. */
  const users = new Map<string, Map<string, number>>();

  return {
    tryAcquire(userId, key) {
      let keys = users.get(userId);
      const holders = keys?.get(key) ?? 0;
      if (holders === 0 && (keys?.size ?? 0) >= maxPerUser) return null;
      if (!keys) {
        keys = new Map();
        users.set(userId, keys);
      }
      keys.set(key, holders + 1);
      const held = keys;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (held.get(key) ?? 1) - 1;
        if (left > 0) held.set(key, left);
        else held.delete(key);
        if (held.size === 0 && users.get(userId) === held) users.delete(userId);
      };
    },
    count: (userId) => users.get(userId)?.size ?? 0,
  };
}
