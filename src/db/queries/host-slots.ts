import type { Queryable } from "../client.ts";

// The `host` column holds the key of the engine's host gate: the mail server's IP address (see
// docs/smtp-sessions.md). Rows written under MX names by earlier versions are never asked for
// again and stay inert. `egress` names the egress identity the slot belongs to ('' = the single
// identity of a deployment without SMTP_EGRESS): servers count our connections per client IP, so
// each identity has its own slots at each server IP.

/**
 * Takes a free (or expired) slot of `host` for `egress`, creating the slot rows on first use. One
 * statement per step, SKIP LOCKED so concurrent acquirers never wait on each other. Returns the
 * slot number, or null when all `slots` are held.
 */
export async function tryAcquireHostSlot(
  q: Queryable,
  a: {
    egress?: string;
    host: string;
    slots: number;
    holder: string;
    now: Date;
    expiresAt: Date;
    /** Take nothing while a realtime request waits for this host (smtp_host_waits). */
    yieldToWaiters?: boolean;
  },
): Promise<number | null> {
  const egress = a.egress ?? "";
  await q.query(
    `insert into smtp_host_slots (egress, host, slot)
     select $1, $2, g from generate_series(0, $3 - 1) as g
     on conflict (egress, host, slot) do nothing`,
    [egress, a.host, a.slots],
  );
  const { rows } = await q.query<{ slot: number }>(
    `update smtp_host_slots s set holder = $4, expires_at = $6
       from (select egress, host, slot from smtp_host_slots
              where egress = $1 and host = $2 and slot < $3 and (holder is null or expires_at < $5)
                and not ($7 and exists (select 1 from smtp_host_waits w where w.host = $2 and w.until >= $5))
              order by slot limit 1
              for update skip locked) free
      where s.egress = free.egress and s.host = free.host and s.slot = free.slot
     returning s.slot`,
    [egress, a.host, a.slots, a.holder, a.now, a.expiresAt, a.yieldToWaiters === true],
  );
  return rows[0]?.slot ?? null;
}

export async function releaseHostSlot(
  q: Queryable,
  s: { egress: string; host: string; slot: number },
  holder: string,
): Promise<void> {
  await q.query(
    `update smtp_host_slots set holder = null, expires_at = null
      where egress = $1 and host = $2 and slot = $3 and holder = $4`,
    [s.egress, s.host, s.slot, holder],
  );
}

/**
 * Heartbeat of the slots this process's sessions hold, by name: a slot whose release failed (the
 * database was down) must be left to expire, not renewed for as long as the process runs.
 */
export async function extendHostSlots(
  q: Queryable,
  holder: string,
  slots: ReadonlyArray<{ egress: string; host: string; slot: number }>,
  expiresAt: Date,
): Promise<void> {
  if (slots.length === 0) return;
  await q.query(
    `update smtp_host_slots s set expires_at = $2
       from unnest($3::text[], $4::text[], $5::integer[]) as h(egress, host, slot)
      where s.egress = h.egress and s.host = h.host and s.slot = h.slot and s.holder = $1`,
    [holder, expiresAt, slots.map((s) => s.egress), slots.map((s) => s.host), slots.map((s) => s.slot)],
  );
}

/** The identities resting for `provider` at `now`. */
export async function restingEgress(q: Queryable, provider: string, now: Date): Promise<Map<string, Date>> {
  const { rows } = await q.query<{ egress: string; until: Date }>(
    "select egress, until from smtp_egress_rests where provider = $1 and until > $2",
    [provider, now],
  );
  return new Map(rows.map((r) => [r.egress, r.until]));
}

/** `egress` rests for `provider` until `until` (a later rest already recorded is kept). */
export async function restEgress(
  q: Queryable,
  r: { egress: string; provider: string; until: Date; reason: string },
): Promise<void> {
  await q.query(
    `insert into smtp_egress_rests (egress, provider, until, reason) values ($1, $2, $3, $4)
     on conflict (provider, egress) do update
       set until = greatest(smtp_egress_rests.until, excluded.until), reason = excluded.reason`,
    [r.egress, r.provider, r.until, r.reason],
  );
}

/** `waiter` (a realtime request) waits for a slot of `host` until `until`. */
export async function waitForHostSlot(
  q: Queryable,
  w: { host: string; waiter: string; until: Date },
): Promise<void> {
  await q.query(
    `insert into smtp_host_waits (host, waiter, until) values ($1, $2, $3)
     on conflict (host, waiter) do update set until = excluded.until`,
    [w.host, w.waiter, w.until],
  );
}

/** `waiter` no longer waits for `host`; waits whose deadline passed go too. */
export async function endHostWait(
  q: Queryable,
  w: { host: string; waiter: string },
  now: Date,
): Promise<void> {
  await q.query("delete from smtp_host_waits where (host = $1 and waiter = $2) or until < $3", [
    w.host,
    w.waiter,
    now,
  ]);
}

/** The server IPs some realtime request waits for now. */
export async function hostsWaitedFor(q: Queryable, now: Date): Promise<Set<string>> {
  const { rows } = await q.query<{ host: string }>(
    "select distinct host from smtp_host_waits where until >= $1",
    [now],
  );
  return new Set(rows.map((r) => r.host));
}
