import type { Queryable } from "../client.ts";

export interface User {
  id: string;
  email: string | null;
  balance: number;
  webhookSecret: string;
  createdAt: Date;
}

interface UserRow {
  id: string;
  email: string | null;
  balance: number;
  webhook_secret: string;
  created_at: Date;
}

const toUser = (r: UserRow): User => ({
  id: r.id,
  email: r.email,
  balance: r.balance,
  webhookSecret: r.webhook_secret,
  createdAt: r.created_at,
});

export async function insertUser(
  q: Queryable,
  u: { id: string; email: string | null; webhookSecret: string; at: Date },
): Promise<User> {
  const { rows } = await q.query<UserRow>(
    `insert into users (id, email, webhook_secret, created_at, updated_at)
     values ($1, $2, $3, $4, $4) returning *`,
    [u.id, u.email, u.webhookSecret, u.at],
  );
  return toUser(rows[0]!);
}

/** True once any user exists; a fresh install has none. */
export async function hasAnyUser(q: Queryable): Promise<boolean> {
  const { rows } = await q.query<{ exists: boolean }>("select exists (select 1 from users) as exists");
  return Boolean(rows[0]?.exists);
}

export async function findUser(q: Queryable, id: string): Promise<User | null> {
  const { rows } = await q.query<UserRow>("select * from users where id = $1", [id]);
  return rows[0] ? toUser(rows[0]) : null;
}

// Balance locks are FOR NO KEY UPDATE, the mode of the balance UPDATE itself: it excludes every
// other balance change of the user but not the FOR KEY SHARE that a foreign-key check takes on
// the users row whenever a row naming the user is inserted (a result, a ledger row, a job).
// FOR UPDATE conflicts with that share lock, and a recorder that had inserted its results (share
// lock held) and then asked FOR UPDATE to refund deadlocked against anyone doing the same (15
// deadlocks in 40 s with four users creating small tasks; docs/locking.md).

/** Locks the user's row for the rest of the transaction: serialises every balance change of one user. */
export async function lockUserBalance(q: Queryable, id: string): Promise<number | null> {
  const { rows } = await q.query<{ balance: number }>(
    "select balance from users where id = $1 for no key update",
    [id],
  );
  return rows[0] ? rows[0].balance : null;
}

/** Balance locks of several users in one statement, in id order (the global lock order). */
export async function lockUserBalances(q: Queryable, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await q.query("select id from users where id = any($1::uuid[]) order by id for no key update", [ids]);
}

/** Applies a signed delta; the `balance + delta >= 0` guard makes an overdraft impossible even if a caller forgot the lock. */
export async function applyBalanceDelta(
  q: Queryable,
  id: string,
  delta: number,
  at: Date,
): Promise<number | null> {
  const { rows } = await q.query<{ balance: number }>(
    `update users set balance = balance + $2, updated_at = $3
      where id = $1 and balance + $2 >= 0
      returning balance`,
    [id, delta, at],
  );
  return rows[0] ? rows[0].balance : null;
}

/**
 * Whether the user was deactivated or the key revoked since a request authenticated: checked
 * under the user's lock by writes that take seconds (an upload is parsed before it is written),
 * so that nothing is created for a credential that ended meanwhile.
 */
export async function endedCredential(
  q: Queryable,
  userId: string,
  apiKeyId: string | null,
): Promise<"user" | "key" | null> {
  const { rows } = await q.query<{ user_off: boolean; key_off: boolean | null }>(
    `select u.deactivated_at is not null as user_off,
            (select not k.is_active from api_keys k where k.id = $2::uuid) as key_off
       from users u where u.id = $1`,
    [userId, apiKeyId],
  );
  const row = rows[0];
  if (!row || row.user_off) return "user";
  return row.key_off === true ? "key" : null;
}
