import type { Queryable } from "../client.ts";

// One-time sign-in links (migration 0025, auth/sign-in-links.ts).

export async function insertSignInLink(
  q: Queryable,
  l: { tokenHash: string; userId: string; apiKeyId: string; at: Date; expiresAt: Date },
): Promise<void> {
  await q.query(
    `insert into sign_in_links (token_hash, user_id, api_key_id, created_at, expires_at)
     values ($1, $2, $3, $4, $5)`,
    [l.tokenHash, l.userId, l.apiKeyId, l.at, l.expiresAt],
  );
}

/** Forgets the user's links that expired before `at` (used or not): they can never be redeemed. */
export async function deleteExpiredSignInLinks(q: Queryable, userId: string, at: Date): Promise<void> {
  await q.query("delete from sign_in_links where user_id = $1 and expires_at <= $2", [userId, at]);
}

/**
 * Marks the link used and answers whose it is, in one statement: only when it was not used yet,
 * has not expired and its key is still an active key of its user (a key's purpose never
 * changes, and the mint took only keys that may open a session). Null otherwise (no
 * such link, used, expired, key revoked): of two concurrent redemptions one updates the row and
 * the other, re-checking `used_at is null` after the first commits, finds nothing.
 */
export async function consumeSignInLink(
  q: Queryable,
  tokenHash: string,
  at: Date,
): Promise<{ userId: string; apiKeyId: string } | null> {
  const { rows } = await q.query<{ user_id: string; api_key_id: string }>(
    `update sign_in_links l set used_at = $2
       from api_keys k
      where l.token_hash = $1 and l.used_at is null and l.expires_at > $2
        and k.id = l.api_key_id and k.user_id = l.user_id and k.is_active
     returning l.user_id, l.api_key_id`,
    [tokenHash, at],
  );
  const row = rows[0];
  return row ? { userId: row.user_id, apiKeyId: row.api_key_id } : null;
}
