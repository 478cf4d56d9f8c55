import type { Queryable } from "../client.ts";

export type CreditTransactionType = "grant" | "deduction";

/** Attribution written into every ledger row. */
export interface CreditMetadata {
  /**
   * "operator": a grant an operator made (`mailprobe users create --credits`, `mailprobe credits
   * grant`, the admin API, the ADMIN_TOKEN console). Missing on legacy rows only: migration 0016
   * labelled the operator grants written before with `{}`.
   */
  source?: "api_key" | "frontend" | "operator";
  api_key_id?: string;
  api_key_purpose?: string;
  [key: string]: unknown;
}

export interface CreditTransaction {
  id: string;
  userId: string;
  type: CreditTransactionType;
  amount: number;
  balanceAfter: number;
  reason: string | null;
  metadata: CreditMetadata;
  idempotencyKey: string | null;
  createdAt: Date;
}

interface CreditTransactionRow {
  id: string;
  user_id: string;
  type: CreditTransactionType;
  amount: number;
  balance_after: number;
  reason: string | null;
  metadata: CreditMetadata;
  idempotency_key: string | null;
  created_at: Date;
}

const toCreditTransaction = (r: CreditTransactionRow): CreditTransaction => ({
  id: r.id,
  userId: r.user_id,
  type: r.type,
  amount: r.amount,
  balanceAfter: r.balance_after,
  reason: r.reason,
  metadata: r.metadata,
  idempotencyKey: r.idempotency_key,
  createdAt: r.created_at,
});

export async function insertCreditTransaction(
  q: Queryable,
  t: Omit<CreditTransaction, "createdAt"> & { createdAt: Date },
): Promise<CreditTransaction> {
  const { rows } = await q.query<CreditTransactionRow>(
    `insert into credit_transactions
       (id, user_id, type, amount, balance_after, reason, metadata, idempotency_key, created_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     returning *`,
    [
      t.id,
      t.userId,
      t.type,
      t.amount,
      t.balanceAfter,
      t.reason,
      JSON.stringify(t.metadata),
      t.idempotencyKey,
      t.createdAt,
    ],
  );
  return toCreditTransaction(rows[0]!);
}

export async function findCreditTransactionByKey(
  q: Queryable,
  userId: string,
  idempotencyKey: string,
): Promise<CreditTransaction | null> {
  const { rows } = await q.query<CreditTransactionRow>(
    "select * from credit_transactions where user_id = $1 and idempotency_key = $2",
    [userId, idempotencyKey],
  );
  return rows[0] ? toCreditTransaction(rows[0]) : null;
}

/** Newest first, in the order the rows were written (so balance_after reads as a running balance). */
export async function listCreditTransactions(
  q: Queryable,
  userId: string,
  limit: number,
  offset: number,
  taskId: string | null = null,
): Promise<{ rows: CreditTransaction[]; total: number }> {
  // A task's rows (reservation, refunds, late charges) all carry its id in metadata; the filter
  // runs within the user's rows, which the (user_id, seq) index already narrows to.
  const filter = "where user_id = $1 and ($2::text is null or metadata->>'task_id' = $2)";
  const [page, count] = await Promise.all([
    q.query<CreditTransactionRow>(
      `select * from credit_transactions ${filter} order by seq desc limit $3 offset $4`,
      [userId, taskId, limit, offset],
    ),
    q.query<{ total: number }>(`select count(*) as total from credit_transactions ${filter}`, [
      userId,
      taskId,
    ]),
  ]);
  return { rows: page.rows.map(toCreditTransaction), total: count.rows[0]?.total ?? 0 };
}
