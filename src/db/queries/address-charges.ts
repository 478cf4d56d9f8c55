import type { Queryable } from "../client.ts";

// address_charges (migration 0012): when a user last paid for an address, the fact behind the
// 24-hour free repeat. Kept current by a trigger on email_verifications and claimed by the
// realtime charge (realtime-charge.ts).

/** When the user last paid for this canonical address, or null if never (or purged). */
export async function lastChargeOf(q: Queryable, userId: string, email: string): Promise<Date | null> {
  const { rows } = await q.query<{ charged_at: Date }>(
    "select charged_at from address_charges where user_id = $1 and email = $2",
    [userId, email],
  );
  return rows[0]?.charged_at ?? null;
}

/** Forgets charges that no longer make anything free (older than the free-repeat window). */
export async function purgeChargesBefore(q: Queryable, before: Date): Promise<number> {
  const { rowCount } = await q.query("delete from address_charges where charged_at < $1", [before]);
  return rowCount;
}
