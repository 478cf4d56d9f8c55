import type { Queryable } from "../client.ts";

// Remembered devices (migration 0026, auth/remembered-devices.ts).

export type DeviceRevocation = "revoked" | "forgotten" | "reused" | "evicted";

export interface RememberedDeviceRow {
  id: string;
  userId: string;
  apiKeyId: string;
  series: string;
  tokenHash: string;
  previousTokenHash: string | null;
  rotatedAt: Date | null;
  userAgent: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date;
  revokedAt: Date | null;
}

interface Row {
  id: string;
  user_id: string;
  api_key_id: string;
  series: string;
  token_hash: string;
  previous_token_hash: string | null;
  rotated_at: Date | null;
  user_agent: string;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date;
  revoked_at: Date | null;
}

const toDevice = (r: Row): RememberedDeviceRow => ({
  id: r.id,
  userId: r.user_id,
  apiKeyId: r.api_key_id,
  series: r.series,
  tokenHash: r.token_hash,
  previousTokenHash: r.previous_token_hash,
  rotatedAt: r.rotated_at,
  userAgent: r.user_agent,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
});

export async function insertRememberedDevice(
  q: Queryable,
  d: {
    id: string;
    userId: string;
    apiKeyId: string;
    series: string;
    tokenHash: string;
    userAgent: string;
    at: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await q.query(
    `insert into remembered_devices (id, user_id, api_key_id, series, token_hash, user_agent, created_at, expires_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [d.id, d.userId, d.apiKeyId, d.series, d.tokenHash, d.userAgent, d.at, d.expiresAt],
  );
}

/** Forgets the user's devices that expired before `at`: they can never open a session again. */
export async function deleteExpiredDevices(q: Queryable, userId: string, at: Date): Promise<void> {
  await q.query("delete from remembered_devices where user_id = $1 and expires_at <= $2", [userId, at]);
}

/**
 * Revokes the key's least recently used live devices beyond the newest `keep` (most recently
 * used first), as `evicted`.
 */
export async function evictDevicesBeyond(
  q: Queryable,
  apiKeyId: string,
  keep: number,
  at: Date,
): Promise<void> {
  await q.query(
    `update remembered_devices set revoked_at = $3, revoked_reason = 'evicted'
      where id in (
        select id from remembered_devices
         where api_key_id = $1 and revoked_at is null and expires_at > $3
         order by coalesce(last_used_at, created_at) desc, created_at desc
         offset $2)`,
    [apiKeyId, keep, at],
  );
}

/** The device of a cookie's series, whatever its state (the service judges it). */
export async function findDeviceBySeries(q: Queryable, series: string): Promise<RememberedDeviceRow | null> {
  const { rows } = await q.query<Row>("select * from remembered_devices where series = $1", [series]);
  return rows[0] ? toDevice(rows[0]) : null;
}

/**
 * Replaces the device's secret, in one statement: only while it still holds `tokenHash` (of two
 * concurrent uses of one cookie, one rotates and the other finds nothing), is not revoked, has
 * not expired, and its key is an active key of its active user. False otherwise.
 */
export async function rotateDeviceToken(
  q: Queryable,
  r: { id: string; tokenHash: string; nextHash: string; at: Date },
): Promise<boolean> {
  const { rowCount } = await q.query(
    `update remembered_devices d
        set token_hash = $3, previous_token_hash = $2, rotated_at = $4, last_used_at = $4
       from api_keys k, users u
      where d.id = $1 and d.token_hash = $2 and d.revoked_at is null and d.expires_at > $4
        and k.id = d.api_key_id and k.user_id = d.user_id and k.is_active
        and u.id = d.user_id and u.deactivated_at is null`,
    [r.id, r.tokenHash, r.nextHash, r.at],
  );
  return rowCount > 0;
}

/** Revokes a device (idempotent: the first reason stays). False when it is not this key's of this user. */
export async function revokeDevice(
  q: Queryable,
  r: { id: string; userId: string; apiKeyId: string; reason: DeviceRevocation; at: Date },
): Promise<boolean> {
  const { rowCount } = await q.query(
    `update remembered_devices
        set revoked_at = coalesce(revoked_at, $4), revoked_reason = coalesce(revoked_reason, $5)
      where id = $1 and user_id = $2 and api_key_id = $3`,
    [r.id, r.userId, r.apiKeyId, r.at, r.reason],
  );
  return rowCount > 0;
}

/** The key's devices that may still open a session, most recently used first. */
export async function listLiveDevicesOfKey(
  q: Queryable,
  userId: string,
  apiKeyId: string,
  at: Date,
): Promise<RememberedDeviceRow[]> {
  const { rows } = await q.query<Row>(
    `select d.* from remembered_devices d
       join api_keys k on k.id = d.api_key_id and k.is_active
      where d.user_id = $1 and d.api_key_id = $2 and d.revoked_at is null and d.expires_at > $3
      order by coalesce(d.last_used_at, d.created_at) desc, d.created_at desc`,
    [userId, apiKeyId, at],
  );
  return rows.map(toDevice);
}
