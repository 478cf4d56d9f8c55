import type { Queryable } from "../client.ts";

// Dashboard sessions (migration 0023, auth/sessions.ts).

export interface SessionRow {
  id: string;
  userId: string;
  apiKeyId: string;
  signedInAt: Date;
  generation: number;
  rotatedAt: Date | null;
  endedAt: Date | null;
}

interface Row {
  id: string;
  user_id: string;
  api_key_id: string;
  signed_in_at: Date;
  generation: number;
  rotated_at: Date | null;
  ended_at: Date | null;
}

const toSession = (r: Row): SessionRow => ({
  id: r.id,
  userId: r.user_id,
  apiKeyId: r.api_key_id,
  signedInAt: r.signed_in_at,
  generation: r.generation,
  rotatedAt: r.rotated_at,
  endedAt: r.ended_at,
});

export async function insertSession(
  q: Queryable,
  s: { id: string; userId: string; apiKeyId: string; at: Date; deviceId: string | null },
): Promise<void> {
  await q.query(
    `insert into sessions (id, user_id, api_key_id, signed_in_at, created_at, device_id)
     values ($1, $2, $3, $4, $4, $5)`,
    [s.id, s.userId, s.apiKeyId, s.at, s.deviceId],
  );
}

export async function findSession(q: Queryable, id: string): Promise<SessionRow | null> {
  const { rows } = await q.query<Row>("select * from sessions where id = $1", [id]);
  return rows[0] ? toSession(rows[0]) : null;
}

/**
 * Moves a live session from `generation` to the next; null when it is not at `generation` any
 * more (another renewal came first) or has ended.
 */
export async function rotateSession(
  q: Queryable,
  id: string,
  generation: number,
  at: Date,
): Promise<number | null> {
  const { rows } = await q.query<{ generation: number }>(
    `update sessions set generation = generation + 1, rotated_at = $3
      where id = $1 and generation = $2 and ended_at is null
      returning generation`,
    [id, generation, at],
  );
  return rows[0]?.generation ?? null;
}

/** Ends the session (sign-out); idempotent. False when there is no such session of the user. */
export async function endSession(q: Queryable, id: string, userId: string, at: Date): Promise<boolean> {
  const { rowCount } = await q.query(
    "update sessions set ended_at = coalesce(ended_at, $3) where id = $1 and user_id = $2",
    [id, userId, at],
  );
  return rowCount > 0;
}

/** Ends every live session a remembered device opened (the device was revoked). */
export async function endSessionsOfDevice(q: Queryable, deviceId: string, at: Date): Promise<void> {
  await q.query("update sessions set ended_at = $2 where device_id = $1 and ended_at is null", [
    deviceId,
    at,
  ]);
}
