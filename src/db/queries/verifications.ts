import {
  RESULT_FIELDS,
  type ResultField,
  type ResultFieldKind,
  type ResultFieldValues,
  type VerificationResult,
} from "../../verify/index.ts";
import type { Queryable } from "../client.ts";

/** A stored verification (realtime answer or batch job result): the result fields, evidence, who asked. */
export interface VerificationRecord extends ResultFieldValues {
  id: string;
  userId: string;
  /** What decided the status (see migration 0005); null for older rows. */
  evidence: string | null;
  origin: "realtime" | "batch";
  source: "frontend" | "api_key";
  apiKeyId: string | null;
  taskId: string | null;
  creditTransactionId: string | null;
  fromCache: boolean;
  createdAt: Date;
}

// The result fields' columns are named as their JSON keys (migration 0001).
type VerificationRow = { [F in ResultField as F["name"]]: VerificationResult[F["key"]] } & {
  id: string;
  user_id: string;
  evidence: string | null;
  origin: "realtime" | "batch";
  source: "frontend" | "api_key";
  api_key_id: string | null;
  task_id: string | null;
  credit_transaction_id: string | null;
  from_cache: boolean;
  created_at: Date;
};

export const toVerificationRecord = (r: VerificationRow): VerificationRecord => ({
  id: r.id,
  userId: r.user_id,
  ...(Object.fromEntries(RESULT_FIELDS.map((f) => [f.key, r[f.name]])) as unknown as ResultFieldValues),
  evidence: r.evidence,
  origin: r.origin,
  source: r.source,
  apiKeyId: r.api_key_id,
  taskId: r.task_id,
  creditTransactionId: r.credit_transaction_id,
  fromCache: r.from_cache,
  createdAt: r.created_at,
});

const SQL_TYPE: Record<ResultFieldKind, string> = {
  string: "text",
  status: "text",
  boolean: "boolean",
  timestamp: "timestamptz",
  nullable_string: "text",
};

type Column = readonly [name: string, sqlType: string, value: (v: VerificationRecord) => unknown];

/**
 * The columns an insert writes, in order: id, user_id, the result fields (email … validated_at,
 * unknown_reason, needs_physical_verify), then who asked and how it was paid, and evidence.
 */
const COLUMNS: readonly Column[] = [
  ["id", "uuid", (v) => v.id],
  ["user_id", "uuid", (v) => v.userId],
  ...RESULT_FIELDS.map((f): Column => [f.name, SQL_TYPE[f.kind], (v) => v[f.key]]),
  ["origin", "text", (v) => v.origin],
  ["source", "text", (v) => v.source],
  ["api_key_id", "uuid", (v) => v.apiKeyId],
  ["task_id", "uuid", (v) => v.taskId],
  ["credit_transaction_id", "uuid", (v) => v.creditTransactionId],
  ["from_cache", "boolean", (v) => v.fromCache],
  ["created_at", "timestamptz", (v) => v.createdAt],
  ["evidence", "text", (v) => v.evidence],
];

const COLUMN_LIST = COLUMNS.map(([name]) => name).join(", ");
/** `$1, $2, …` */
const VALUE_LIST = COLUMNS.map((_, i) => `$${String(i + 1)}`).join(", ");
/** `$1::uuid[], $2::uuid[], $3::text[], …` */
const ARRAY_LIST = COLUMNS.map(([, type], i) => `$${String(i + 1)}::${type}[]`).join(", ");

export async function insertVerification(q: Queryable, v: VerificationRecord): Promise<VerificationRecord> {
  const { rows } = await q.query<VerificationRow>(
    `insert into email_verifications (${COLUMN_LIST}) values (${VALUE_LIST}) returning *`,
    COLUMNS.map(([, , value]) => value(v)),
  );
  return toVerificationRecord(rows[0]!);
}

/**
 * The user's newest definitive (non-unknown) result for an address validated after `since`
 * (realtime or batch). The result cache is per user: another tenant's answer is never served, as
 * its `validated_at` and the cache-hit latency would tell that someone else verified the address.
 */
export async function findCachedVerification(
  q: Queryable,
  userId: string,
  email: string,
  since: Date,
): Promise<VerificationRecord | null> {
  const { rows } = await q.query<VerificationRow>(
    `select * from email_verifications
      where user_id = $1 and email = $2 and validated_at > $3 and status <> 'unknown'
      order by validated_at desc limit 1`,
    [userId, email, since],
  );
  return rows[0] ? toVerificationRecord(rows[0]) : null;
}

/**
 * True when the user paid for a verification of this address after `since` (the free-repeat
 * window): a charged realtime answer, or a batch result that stayed billed (DESIGN §5 "Billing
 * units"). A batch result is paid through its task's reservation, so it has no
 * credit_transaction_id; its `unknown` results were refunded when the task finished, and a job
 * that failed outright has no result row, so every other batch result is a prior charge.
 * Served by email_verifications_user_email_idx (user_id, email, created_at desc).
 */
export async function hasPaidVerificationSince(
  q: Queryable,
  userId: string,
  email: string,
  since: Date,
): Promise<boolean> {
  const { rows } = await q.query(
    `select 1 from email_verifications
      where user_id = $1 and email = $2 and created_at > $3
        and (credit_transaction_id is not null or (origin = 'batch' and status <> 'unknown'))
      limit 1`,
    [userId, email, since],
  );
  return rows.length > 0;
}

/** Many results in one statement (a worker records a whole domain group at once). */
export async function insertVerifications(q: Queryable, list: VerificationRecord[]): Promise<void> {
  if (list.length === 0) return;
  await q.query(
    `insert into email_verifications (${COLUMN_LIST}) select * from unnest(${ARRAY_LIST})`,
    COLUMNS.map(([, , value]) => list.map(value)),
  );
}

export async function findVerificationsByIds(
  q: Queryable,
  ids: string[],
): Promise<Map<string, VerificationRecord>> {
  if (ids.length === 0) return new Map();
  const { rows } = await q.query<VerificationRow>(
    "select * from email_verifications where id = any($1::uuid[])",
    [ids],
  );
  return new Map(rows.map((r) => [r.id, toVerificationRecord(r)]));
}
