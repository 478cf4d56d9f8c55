import type { Queryable } from "../client.ts";

// Provider paces (migrations/0020_provider_paces.sql, docs/pacing.md): one row per provider and
// egress identity that throttled us, and the RCPTs reserved under it in its sliding window.

export type PaceState = "probing" | "paced";

export interface PaceRow {
  provider: string;
  egress: string;
  state: PaceState;
  /** RCPTs the provider accepted in the burst that ended in its refusal (cut at each later refusal). */
  maxRcpts: number;
  /** The window learnt from the first probe let through; null while probing. */
  windowMs: number | null;
  episodeStart: Date;
  trippedAt: Date;
  /** While probing: the next probe's time, in ms after episodeStart. */
  probeAtMs: number;
  roomAt: Date;
  forgetAt: Date;
  trips: number;
}

interface Row {
  provider: string;
  egress: string;
  state: PaceState;
  max_rcpts: number;
  window_ms: number | null;
  episode_start: Date;
  tripped_at: Date;
  probe_at_ms: number;
  room_at: Date;
  forget_at: Date;
  trips: number;
}

const toPace = (r: Row): PaceRow => ({
  provider: r.provider,
  egress: r.egress,
  state: r.state,
  maxRcpts: r.max_rcpts,
  windowMs: r.window_ms,
  episodeStart: r.episode_start,
  trippedAt: r.tripped_at,
  probeAtMs: r.probe_at_ms,
  roomAt: r.room_at,
  forgetAt: r.forget_at,
  trips: r.trips,
});

/** The pace of `provider` for `egress`, locked for this transaction; null when it has none. */
export async function lockPace(q: Queryable, provider: string, egress: string): Promise<PaceRow | null> {
  const { rows } = await q.query<Row>(
    "select * from provider_paces where provider = $1 and egress = $2 for update",
    [provider, egress],
  );
  return rows[0] === undefined ? null : toPace(rows[0]);
}

/** Writes a pace (insert or replace). */
export async function savePace(q: Queryable, p: PaceRow): Promise<void> {
  await q.query(
    `insert into provider_paces
       (provider, egress, state, max_rcpts, window_ms, episode_start, tripped_at, probe_at_ms, room_at, forget_at, trips)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     on conflict (provider, egress) do update set
       state = excluded.state, max_rcpts = excluded.max_rcpts, window_ms = excluded.window_ms,
       episode_start = excluded.episode_start, tripped_at = excluded.tripped_at,
       probe_at_ms = excluded.probe_at_ms, room_at = excluded.room_at, forget_at = excluded.forget_at,
       trips = excluded.trips`,
    [
      p.provider,
      p.egress,
      p.state,
      p.maxRcpts,
      p.windowMs,
      p.episodeStart,
      p.trippedAt,
      p.probeAtMs,
      p.roomAt,
      p.forgetAt,
      p.trips,
    ],
  );
}

/** Drops a pace and its window (the provider is asked freely again). */
export async function forgetPace(q: Queryable, provider: string, egress: string): Promise<void> {
  await q.query("delete from provider_pace_spends where provider = $1 and egress = $2", [provider, egress]);
  await q.query("delete from provider_paces where provider = $1 and egress = $2", [provider, egress]);
}

/** Drops the spends that left the window (older than `since`). */
export async function pruneSpends(
  q: Queryable,
  provider: string,
  egress: string,
  since: Date,
): Promise<void> {
  await q.query("delete from provider_pace_spends where provider = $1 and egress = $2 and at <= $3", [
    provider,
    egress,
    since,
  ]);
}

/** RCPTs spent in the window (after `since`), and when the oldest of them was spent. */
export async function spentSince(
  q: Queryable,
  provider: string,
  egress: string,
  since: Date,
): Promise<{ rcpts: number; oldest: Date | null }> {
  const { rows } = await q.query<{ rcpts: number | null; oldest: Date | null }>(
    `select sum(rcpts)::int as rcpts, min(at) as oldest from provider_pace_spends
      where provider = $1 and egress = $2 and at > $3`,
    [provider, egress, since],
  );
  return { rcpts: rows[0]?.rcpts ?? 0, oldest: rows[0]?.oldest ?? null };
}

/** Records `rcpts` RCPTs spent at `at`; returns the spend's id (to lower it to what was asked). */
export async function insertSpend(
  q: Queryable,
  s: { provider: string; egress: string; at: Date; rcpts: number },
): Promise<string> {
  const { rows } = await q.query<{ id: string }>(
    `insert into provider_pace_spends (provider, egress, at, rcpts) values ($1, $2, $3, $4)
     returning id::text as id`,
    [s.provider, s.egress, s.at, s.rcpts],
  );
  return rows[0]!.id;
}

/**
 * Sets a reservation to the RCPTs its session really asked: fewer when some were not needed, more
 * when a recipient was asked again on a new connection (the provider counts both).
 */
export async function settleSpend(q: Queryable, id: string, rcpts: number): Promise<void> {
  await q.query("update provider_pace_spends set rcpts = $2 where id = $1::bigint", [id, Math.max(0, rcpts)]);
}

/** Every pace not yet forgotten at `now` (a process's cached view, the task metrics). */
export async function livePaces(q: Queryable, now: Date): Promise<PaceRow[]> {
  const { rows } = await q.query<Row>("select * from provider_paces where forget_at > $1", [now]);
  return rows.map(toPace);
}

/** Pending jobs of each task, per paced provider of their domain (mail_domain_hosts.provider). */
export async function pendingByPacedProvider(
  q: Queryable,
  taskIds: readonly string[],
  now: Date,
): Promise<Array<{ taskId: string; provider: string; pending: number }>> {
  if (taskIds.length === 0) return [];
  const { rows } = await q.query<{ task_id: string; provider: string; pending: number }>(
    `select j.task_id, h.provider, count(*)::int as pending
       from email_jobs j
       join mail_domain_hosts h on h.domain = j.domain
      where j.task_id = any($1::uuid[]) and j.status in ('pending', 'processing')
        and h.provider in (select provider from provider_paces where forget_at > $2)
      group by j.task_id, h.provider`,
    [taskIds, now],
  );
  return rows.map((r) => ({ taskId: r.task_id, provider: r.provider, pending: r.pending }));
}
