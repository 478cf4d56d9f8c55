import type { Queryable } from "../client.ts";

export type ApiKeyPurpose = "zapier" | "n8n" | "google sheets" | "custom";

export interface ApiKeyRecord {
  id: string;
  userId: string;
  name: string;
  purpose: ApiKeyPurpose;
  keyHash: string;
  keyPrefix: string;
  keyCiphertext: string;
  isActive: boolean;
  createdAt: Date;
  lastUsedAt: Date | null;
}

interface ApiKeyRow {
  id: string;
  user_id: string;
  name: string;
  purpose: ApiKeyPurpose;
  key_hash: string;
  key_prefix: string;
  key_ciphertext: string;
  is_active: boolean;
  created_at: Date;
  last_used_at: Date | null;
}

const toApiKey = (r: ApiKeyRow): ApiKeyRecord => ({
  id: r.id,
  userId: r.user_id,
  name: r.name,
  purpose: r.purpose,
  keyHash: r.key_hash,
  keyPrefix: r.key_prefix,
  keyCiphertext: r.key_ciphertext,
  isActive: r.is_active,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
});

export async function insertApiKey(
  q: Queryable,
  k: Omit<ApiKeyRecord, "isActive" | "lastUsedAt">,
): Promise<ApiKeyRecord> {
  const { rows } = await q.query<ApiKeyRow>(
    `insert into api_keys (id, user_id, name, purpose, key_hash, key_prefix, key_ciphertext, created_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8) returning *`,
    [k.id, k.userId, k.name, k.purpose, k.keyHash, k.keyPrefix, k.keyCiphertext, k.createdAt],
  );
  return toApiKey(rows[0]!);
}

export async function findApiKeyByHash(q: Queryable, keyHash: string): Promise<ApiKeyRecord | null> {
  const { rows } = await q.query<ApiKeyRow>("select * from api_keys where key_hash = $1", [keyHash]);
  return rows[0] ? toApiKey(rows[0]) : null;
}

export async function listApiKeysOfUser(q: Queryable, userId: string): Promise<ApiKeyRecord[]> {
  const { rows } = await q.query<ApiKeyRow>(
    "select * from api_keys where user_id = $1 order by created_at desc, id desc",
    [userId],
  );
  return rows.map(toApiKey);
}

/** Returns false when the key does not exist or belongs to another user. */
export async function deactivateApiKey(q: Queryable, userId: string, id: string, at: Date): Promise<boolean> {
  const { rowCount } = await q.query(
    `update api_keys set is_active = false, deactivated_at = coalesce(deactivated_at, $3)
      where id = $1 and user_id = $2`,
    [id, userId, at],
  );
  return rowCount > 0;
}

/** Best effort, at most once a minute per key, so the hot auth path rarely writes. */
export async function touchApiKey(q: Queryable, id: string, at: Date): Promise<void> {
  await q.query(
    `update api_keys set last_used_at = $2
      where id = $1 and (last_used_at is null or last_used_at < $2::timestamptz - interval '1 minute')`,
    [id, at],
  );
}

export async function findApiKeyPurpose(q: Queryable, id: string): Promise<ApiKeyPurpose | null> {
  const { rows } = await q.query<{ purpose: ApiKeyPurpose }>("select purpose from api_keys where id = $1", [
    id,
  ]);
  return rows[0]?.purpose ?? null;
}

export async function findApiKeyById(q: Queryable, id: string): Promise<ApiKeyRecord | null> {
  const { rows } = await q.query<ApiKeyRow>("select * from api_keys where id = $1", [id]);
  return rows[0] ? toApiKey(rows[0]) : null;
}

export async function countActiveApiKeysOfUser(q: Queryable, userId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    "select count(*)::int as n from api_keys where user_id = $1 and is_active",
    [userId],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Locks the user's row for the rest of the transaction, so the checks of the key cap and of the
 * last active key cannot race with another create or delete. False when the user does not exist.
 */
export async function lockKeyOwner(q: Queryable, userId: string): Promise<boolean> {
  const { rows } = await q.query("select id from users where id = $1 for update", [userId]);
  return rows.length > 0;
}
