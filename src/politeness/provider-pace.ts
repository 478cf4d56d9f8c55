import type { Database, Queryable } from "../db/client.ts";
import {
  forgetPace,
  insertSpend,
  livePaces,
  lockPace,
  settleSpend,
  pruneSpends,
  savePace,
  spentSince,
  type PaceRow,
} from "../db/queries/provider-paces.ts";
import type { Clock } from "../lib/clock.ts";
import {
  budgetOf,
  nextProbeOffsetMs,
  PROBE_RCPTS,
  type PaceAnswer,
  type PaceUsage,
  type ProviderPace,
} from "../verify/index.ts";
import { SlotsUnavailableError } from "./host-gate.ts";
import { firstTrip, learnt } from "./pace-learning.ts";
import { createPaceObservations } from "./pace-observations.ts";

export interface PgProviderPaceOptions {
  db: Database;
  clock: Clock;
  /** PROVIDER_PACE_QUIET_SECONDS, in ms: a pace not refused for this long is forgotten. */
  quietMs: number;
  /** "defer" for the worker pool, "answer" for realtime requests (ProviderPace.whenNoRoom). */
  whenNoRoom: "defer" | "answer";
  /** A write that failed (the database is down): the pace learns at the next session instead. */
  onError?: (error: unknown) => void;
}

// This process's view of which providers are paced stands this long: one read per second per
// process instead of one per session, and a pace learnt here is known here at once.
const VIEW_TTL_MS = 1_000;

const keyOf = (provider: string, egress: string): string => `${egress}\n${provider}`;

/**
 * Providers' paces kept in PostgreSQL (docs/pacing.md), shared by every worker and the realtime
 * API: the first volume refusal of a provider starts probing it, the first probe it answers sets
 * the window, and from then on reservations fit in a sliding window of what it accepted.
 */
export function createPgProviderPace(o: PgProviderPaceOptions): ProviderPace {
  const observations = createPaceObservations(() => o.clock.now().getTime());
  const view = { paced: new Set<string>(), readAt: -Infinity, reading: null as Promise<void> | null };

  /** The view, read again when older than VIEW_TTL_MS (concurrent callers share one read). */
  async function freshView(): Promise<ReadonlySet<string>> {
    const now = o.clock.now();
    if (now.getTime() - view.readAt >= VIEW_TTL_MS) {
      view.reading ??= livePaces(o.db, now)
        .then((rows) => {
          view.paced = new Set(rows.map((r) => keyOf(r.provider, r.egress)));
          view.readAt = now.getTime();
        })
        // Unreadable (the database is down): the last view stands, and the next session reads again.
        .catch((error: unknown) => o.onError?.(error))
        .finally(() => (view.reading = null));
      await view.reading;
    }
    return view.paced;
  }

  return {
    whenNoRoom: o.whenNoRoom,
    async isPaced(provider, egress) {
      return (await freshView()).has(keyOf(provider, egress));
    },
    async reserve(provider, egress, want) {
      const now = o.clock.now();
      const answer = await o.db
        .transaction((tx) => reserveIn(tx, provider, egress, Math.max(1, want), now))
        .catch((error: unknown) => {
          // Like the slot table: nothing was asked, so the address was not tried.
          throw new SlotsUnavailableError(provider, error);
        });
      if (answer.kind === "free") view.paced.delete(keyOf(provider, egress));
      return answer;
    },
    async report(usage) {
      const key = keyOf(usage.provider, usage.egress);
      if (!usage.throttled && usage.grant === null && !view.paced.has(key)) {
        observations.add(key, usage.startedAt, usage.accepted);
        return null;
      }
      try {
        const now = o.clock.now();
        const row = await o.db.transaction((tx) =>
          learnIn(tx, usage, now, observations.since(key), o.quietMs),
        );
        if (row === null) return null;
        view.paced.add(key);
        return row.roomAt;
      } catch (error) {
        o.onError?.(error);
        return null;
      }
    },
  };
}

/** Room for `want` RCPTs at `now`, reserved in the pace's window. */
async function reserveIn(
  tx: Queryable,
  provider: string,
  egress: string,
  want: number,
  now: Date,
): Promise<PaceAnswer> {
  const pace = await lockPace(tx, provider, egress);
  if (pace === null) return { kind: "free" };
  if (now >= pace.forgetAt) {
    await forgetPace(tx, provider, egress);
    return { kind: "free" };
  }
  if (pace.state === "probing" || pace.windowMs === null) {
    if (now < pace.roomAt) return { kind: "no_room", roomAt: pace.roomAt };
    // One probe at a time: the next is due later unless this one is answered first.
    const next = nextProbeOffsetMs(pace.probeAtMs, now.getTime() - pace.episodeStart.getTime());
    await savePace(tx, { ...pace, roomAt: new Date(pace.episodeStart.getTime() + next) });
    return { kind: "granted", grant: { granted: Math.min(want, PROBE_RCPTS), probe: true, spend: null } };
  }
  const since = new Date(now.getTime() - pace.windowMs);
  await pruneSpends(tx, provider, egress, since);
  const spent = await spentSince(tx, provider, egress, since);
  const room = budgetOf(pace.maxRcpts) - spent.rcpts;
  const fullUntil = (oldest: Date | null): Date => new Date((oldest ?? now).getTime() + pace.windowMs!);
  if (room <= 0) {
    const roomAt = fullUntil(spent.oldest);
    await savePace(tx, { ...pace, roomAt });
    return { kind: "no_room", roomAt };
  }
  const granted = Math.min(want, room);
  const spend = await insertSpend(tx, { provider, egress, at: now, rcpts: granted });
  const roomAt = granted < room ? now : fullUntil(spent.oldest ?? now);
  if (roomAt.getTime() !== pace.roomAt.getTime()) await savePace(tx, { ...pace, roomAt });
  return { kind: "granted", grant: { granted, probe: false, spend } };
}

/** What a session teaches the pace of its provider; the pace after it (null: none). */
async function learnIn(
  tx: Queryable,
  u: PaceUsage,
  now: Date,
  observed: { rcpts: number; since: Date | null },
  quietMs: number,
): Promise<PaceRow | null> {
  if (u.grant?.spend != null && u.asked !== u.grant.granted) await settleSpend(tx, u.grant.spend, u.asked);
  const pace = await lockPace(tx, u.provider, u.egress);
  if (pace === null) {
    if (!u.throttled) return null;
    const episodeStart = minDate(observed.since, u.startedAt);
    const row = firstTrip(u, now, { episodeStart, maxRcpts: observed.rcpts + u.accepted }, quietMs);
    await savePace(tx, row);
    return row;
  }
  const next = learnt(pace, u, now, quietMs);
  if (next === pace) return pace;
  if (next.state === "paced" && pace.state === "probing") {
    // The burst that tripped the provider still fills its window: counted as spent at the trip.
    await insertSpend(tx, {
      provider: u.provider,
      egress: u.egress,
      at: pace.trippedAt,
      rcpts: pace.maxRcpts,
    });
  } else if (next.trips > pace.trips && next.windowMs !== null) {
    // Refused under a learnt pace: the window counts as full from now.
    await insertSpend(tx, { provider: u.provider, egress: u.egress, at: now, rcpts: next.maxRcpts });
  }
  await savePace(tx, next);
  return next;
}

const minDate = (a: Date | null, b: Date): Date => (a !== null && a < b ? a : b);
