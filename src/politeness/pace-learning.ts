// How a provider's pace changes with what a session reports (docs/pacing.md), pure: the first
// volume refusal opens a pace in its probing state; while probing, sessions of the burst add what
// they got answered, a refused probe moves the next later, an answered one sets the window; a
// refusal under a learnt pace cuts its budget. provider-pace.ts reads and writes the rows.
import type { PaceRow } from "../db/queries/provider-paces.ts";
import {
  afterRetrip,
  firstProbeOffsetMs,
  forgetAt,
  nextProbeOffsetMs,
  type PaceUsage,
} from "../verify/index.ts";

/** A pace's first row: the provider refused us after accepting `maxRcpts` since `episodeStart`. */
export function firstTrip(
  u: PaceUsage,
  now: Date,
  burst: { episodeStart: Date; maxRcpts: number },
  quietMs: number,
): PaceRow {
  const { episodeStart, maxRcpts } = burst;
  const probeAtMs = firstProbeOffsetMs(episodeStart, now);
  return {
    provider: u.provider,
    egress: u.egress,
    state: "probing",
    maxRcpts: Math.max(1, maxRcpts),
    windowMs: null,
    episodeStart,
    trippedAt: now,
    probeAtMs,
    roomAt: new Date(episodeStart.getTime() + probeAtMs),
    forgetAt: forgetAt(now, probeAtMs, quietMs),
    trips: 1,
  };
}

/** The pace after session `u`'s report (the same object when it teaches nothing). */
export function learnt(pace: PaceRow, u: PaceUsage, now: Date, quietMs: number): PaceRow {
  return pace.state === "probing" ? whileProbing(pace, u, now, quietMs) : whilePaced(pace, u, now, quietMs);
}

function whileProbing(pace: PaceRow, u: PaceUsage, now: Date, quietMs: number): PaceRow {
  // A session that began before the refusal took part in the burst: what it got answered counts.
  if (u.startedAt < pace.trippedAt) return { ...pace, maxRcpts: pace.maxRcpts + u.accepted };
  if (u.throttled) {
    const probeAtMs = nextProbeOffsetMs(pace.probeAtMs, now.getTime() - pace.episodeStart.getTime());
    return {
      ...pace,
      probeAtMs,
      roomAt: new Date(pace.episodeStart.getTime() + probeAtMs),
      forgetAt: forgetAt(now, probeAtMs, quietMs),
    };
  }
  if (u.grant?.probe !== true || u.accepted === 0) return pace;
  // Answered again: the provider's window is at most how long it refused us since the burst began.
  const windowMs = Math.max(1, u.startedAt.getTime() - pace.episodeStart.getTime());
  return {
    ...pace,
    state: "paced",
    windowMs,
    roomAt: new Date(pace.trippedAt.getTime() + windowMs),
    forgetAt: forgetAt(pace.trippedAt, windowMs, quietMs),
  };
}

function whilePaced(pace: PaceRow, u: PaceUsage, now: Date, quietMs: number): PaceRow {
  // Sessions that began before the last refusal are part of it, not a new one.
  if (!u.throttled || u.startedAt < pace.trippedAt) return pace;
  const windowMs = pace.windowMs ?? pace.probeAtMs;
  return {
    ...pace,
    maxRcpts: afterRetrip(pace.maxRcpts),
    trippedAt: now,
    trips: pace.trips + 1,
    roomAt: new Date(now.getTime() + windowMs),
    forgetAt: forgetAt(now, windowMs, quietMs),
  };
}
