// What this process's sessions got answered by providers that are not paced, for the last hour:
// when one of them first refuses our volume, the RCPTs it accepted before (and since when) are the
// pace's first estimate. Kept in memory, not in the database: a write per session for every
// provider would cost more than the estimate is worth, and a cluster's other processes only make
// the first estimate lower (slower, never ruder) until the next refusal corrects it.

/** Sessions older than this say nothing about a provider's window. */
const OBSERVE_MS = 3_600_000;
/** Bounds: sessions kept per provider and identity, and providers kept. */
const MAX_PER_KEY = 4_096;
const MAX_KEYS = 2_000;

interface Seen {
  at: number;
  accepted: number;
}

export function createPaceObservations(nowMs: () => number = Date.now) {
  const byKey = new Map<string, Seen[]>();

  function prune(list: Seen[]): void {
    const oldest = nowMs() - OBSERVE_MS;
    let expired = 0;
    while (expired < list.length && list[expired]!.at < oldest) expired++;
    if (expired > 0) list.splice(0, expired);
  }

  return {
    /** A session of `key` that began at `startedAt` got `accepted` RCPTs answered. */
    add(key: string, startedAt: Date, accepted: number): void {
      if (accepted <= 0) return;
      let list = byKey.get(key);
      if (list === undefined) {
        if (byKey.size >= MAX_KEYS) byKey.delete(byKey.keys().next().value!);
        list = [];
        byKey.set(key, list);
      }
      // Sessions end out of order; the estimate only needs the earliest start and the sum.
      list.push({ at: startedAt.getTime(), accepted });
      if (list.length > MAX_PER_KEY) list.shift();
    },
    /** RCPTs answered to `key`'s sessions in the last hour, and when the earliest of them began. */
    since(key: string): { rcpts: number; since: Date | null } {
      const list = byKey.get(key);
      if (list === undefined) return { rcpts: 0, since: null };
      prune(list);
      let rcpts = 0;
      let first = Infinity;
      for (const s of list) {
        rcpts += s.accepted;
        first = Math.min(first, s.at);
      }
      return { rcpts, since: first === Infinity ? null : new Date(first) };
    },
  };
}
