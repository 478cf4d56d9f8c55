import type { Queryable } from "../client.ts";

// The `host` column holds the key of the engine's host gate: the mail server's IP address (see
// docs/smtp-sessions.md). Rows written under MX names by earlier versions are never asked for
// again and stay inert.

/**
 * Takes a free (or expired) slot of `host`, creating the host's slot rows on first use. One
 * statement per step, SKIP LOCKED so concurrent acquirers never wait on each other. Returns the
 * slot number, or null when all `slots` are held.
 */
export async function tryAcquireHostSlot(
  q: Queryable,
  a: { host: string; slots: number; holder: string; now: Date; expiresAt: Date },
): Promise<number | null> {
  await q.query(
    `insert into smtp_host_slots (host, slot)
     select $1, g from generate_series(0, $2 - 1) as g
     on conflict (host, slot) do nothing`,
    [a.host, a.slots],
  );
  const { rows } = await q.query<{ slot: number }>(
    `update smtp_host_slots s set holder = $3, expires_at = $5
       from (select host, slot from smtp_host_slots
              where host = $1 and slot < $2 and (holder is null or expires_at < $4)
              order by slot limit 1
              for update skip locked) free
      where s.host = free.host and s.slot = free.slot
     returning s.slot`,
    [a.host, a.slots, a.holder, a.now, a.expiresAt],
  );
  return rows[0]?.slot ?? null;
}

export async function releaseHostSlot(
  q: Queryable,
  host: string,
  slot: number,
  holder: string,
): Promise<void> {
  await q.query(
    "update smtp_host_slots set holder = null, expires_at = null where host = $1 and slot = $2 and holder = $3",
    [host, slot, holder],
  );
}

/**
 * Heartbeat of the slots this process's sessions hold, by name: a slot whose release failed (the
 * database was down) must be left to expire, not renewed for as long as the process runs.
 */
export async function extendHostSlots(
  q: Queryable,
  holder: string,
  slots: ReadonlyArray<{ host: string; slot: number }>,
  expiresAt: Date,
): Promise<void> {
  if (slots.length === 0) return;
  await q.query(
    `update smtp_host_slots s set expires_at = $2
       from unnest($3::text[], $4::integer[]) as h(host, slot)
      where s.host = h.host and s.slot = h.slot and s.holder = $1`,
    [holder, expiresAt, slots.map((s) => s.host), slots.map((s) => s.slot)],
  );
}
