import type { Queryable } from "../client.ts";

/** A user as the operator console lists it: balance, keys and recent usage. */
export interface OperatorUserRow {
  id: string;
  email: string | null;
  balance: number;
  createdAt: Date;
  deactivatedAt: Date | null;
  activeKeys: number;
  lastUsedAt: Date | null;
  /** Addresses verified (realtime and tasks) since the usage window's start. */
  verifications: number;
  /** Credits charged (deduction rows, refunds not netted) since the usage window's start. */
  creditsCharged: number;
}

interface Row {
  id: string;
  email: string | null;
  balance: string | number;
  created_at: Date;
  deactivated_at: Date | null;
  active_keys: number;
  last_used_at: Date | null;
  verifications: number;
  credits_charged: string | number;
}

const toOperatorUser = (r: Row): OperatorUserRow => ({
  id: r.id,
  email: r.email,
  balance: Number(r.balance),
  createdAt: r.created_at,
  deactivatedAt: r.deactivated_at,
  activeKeys: r.active_keys,
  lastUsedAt: r.last_used_at,
  verifications: r.verifications,
  creditsCharged: Number(r.credits_charged),
});

// Per-user subqueries over the (user_id, created_at) indexes: a page is at most 100 users.
const SELECT_USERS = `
  select u.id, u.email, u.balance, u.created_at, u.deactivated_at,
         (select count(*)::int from api_keys k where k.user_id = u.id and k.is_active) as active_keys,
         (select max(k.last_used_at) from api_keys k where k.user_id = u.id) as last_used_at,
         (select count(*)::int from email_verifications v
           where v.user_id = u.id and v.created_at >= $1) as verifications,
         (select coalesce(-sum(t.amount), 0) from credit_transactions t
           where t.user_id = u.id and t.type = 'deduction' and t.created_at >= $1) as credits_charged
    from users u`;

/** One page of users, newest first; `email` matches case-insensitively anywhere in the address. */
export async function listOperatorUsers(
  q: Queryable,
  page: { email: string | null; limit: number; offset: number; usageSince: Date },
): Promise<{ rows: OperatorUserRow[]; total: number }> {
  const where = "where ($2::text is null or strpos(lower(coalesce(u.email, '')), lower($2::text)) > 0)";
  const { rows } = await q.query<Row>(
    `${SELECT_USERS} ${where} order by u.created_at desc, u.id desc limit $3 offset $4`,
    [page.usageSince, page.email, page.limit, page.offset],
  );
  const count = await q.query<{ n: number }>(
    `select count(*)::int as n from users u where ($1::text is null or strpos(lower(coalesce(u.email, '')), lower($1::text)) > 0)`,
    [page.email],
  );
  return { rows: rows.map(toOperatorUser), total: count.rows[0]?.n ?? 0 };
}

/** One user by id or by exact email (case-insensitive), or null. */
export async function findOperatorUser(
  q: Queryable,
  by: { id: string } | { email: string },
  usageSince: Date,
): Promise<OperatorUserRow | null> {
  const { rows } =
    "id" in by
      ? await q.query<Row>(`${SELECT_USERS} where u.id = $2::uuid`, [usageSince, by.id])
      : await q.query<Row>(`${SELECT_USERS} where lower(u.email) = lower($2::text)`, [usageSince, by.email]);
  return rows[0] ? toOperatorUser(rows[0]) : null;
}

/** Marks the user deactivated (first time only) and returns the ids of the keys it deactivated. */
export async function deactivateUser(q: Queryable, id: string, at: Date): Promise<string[] | null> {
  const user = await q.query("update users set deactivated_at = coalesce(deactivated_at, $2) where id = $1", [
    id,
    at,
  ]);
  if (user.rowCount === 0) return null;
  const { rows } = await q.query<{ id: string }>(
    `update api_keys set is_active = false, deactivated_at = coalesce(deactivated_at, $2)
      where user_id = $1 and is_active returning id`,
    [id, at],
  );
  return rows.map((r) => r.id);
}

/** Whether an operator deactivated the user (false for a user id not in the table). */
export async function isUserDeactivated(q: Queryable, id: string): Promise<boolean> {
  const { rows } = await q.query("select 1 from users where id = $1 and deactivated_at is not null", [id]);
  return rows.length > 0;
}
