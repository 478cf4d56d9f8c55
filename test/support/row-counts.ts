// Rows in every table a task, an upload or a charge writes, for tests asserting that a call
// created nothing (dry runs): compare a snapshot before and after.
import type { Database } from "../../src/db/client.ts";

const TABLES = [
  "tasks",
  "email_jobs",
  "uploads",
  "upload_row_blocks",
  "credit_transactions",
  "idempotency_keys",
  "email_verifications",
  "address_charges",
  "webhook_deliveries",
] as const;

export type RowCounts = Record<(typeof TABLES)[number] | "balance_total", number>;

/** Row counts of every such table, and the sum of all balances. */
export async function rowCounts(db: Database): Promise<RowCounts> {
  const counts = {} as RowCounts;
  for (const table of TABLES) {
    const { rows } = await db.query<{ n: string }>(`select count(*)::text as n from ${table}`);
    counts[table] = Number(rows[0]!.n);
  }
  const { rows } = await db.query<{ n: string }>("select coalesce(sum(balance), 0)::text as n from users");
  counts.balance_total = Number(rows[0]!.n);
  return counts;
}
