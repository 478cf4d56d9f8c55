import {
  checksOfLegacyResult,
  isResultChecks,
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

// A row written before migration 0015 has no checks: read with what its other columns prove.
const resultFieldsOfRow = (r: VerificationRow): ResultFieldValues => {
  const fields = Object.fromEntries(
    RESULT_FIELDS.map((f) => [f.key, r[f.name]]),
  ) as unknown as ResultFieldValues;
  return isResultChecks(fields.checks) ? fields : { ...fields, checks: checksOfLegacyResult(fields) };
};

export const toVerificationRecord = (r: VerificationRow): VerificationRecord => ({
  id: r.id,
  userId: r.user_id,
  ...resultFieldsOfRow(r),
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
  checks: "jsonb",
};

// jsonb goes as its JSON text (cast by the statement), the same way on pg and PGlite, single
// values and arrays alike; every other kind as its own value.
const sqlValueOf = (kind: ResultFieldKind, value: unknown): unknown =>
  kind === "checks" ? JSON.stringify(value) : value;

type Column = readonly [name: string, sqlType: string, value: (v: VerificationRecord) => unknown];

/**
 * The columns an insert writes, in order: id, user_id, the result fields (email … validated_at,
 * unknown_reason, needs_physical_verify), then who asked and how it was paid, and evidence.
 */
const COLUMNS: readonly Column[] = [
  ["id", "uuid", (v) => v.id],
  ["user_id", "uuid", (v) => v.userId],
  ...RESULT_FIELDS.map((f): Column => [f.name, SQL_TYPE[f.kind], (v) => sqlValueOf(f.kind, v[f.key])]),
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
/** `$1::uuid, $2::uuid, …` */
const VALUE_LIST = COLUMNS.map(([, type], i) => `$${String(i + 1)}::${type}`).join(", ");
/** `$1::uuid[], $2::uuid[], $3::text[], …` */
const ARRAY_LIST = COLUMNS.map(([, type], i) => `$${String(i + 1)}::${type}[]`).join(", ");

/**
 * The parts of an `insert into email_verifications (…) select …` whose parameters start at
 * `$first`, for statements that compute some columns from other CTEs: `computed` maps a column
 * name to the SQL expression that replaces its parameter.
 */
export function verificationInsertParts(
  v: VerificationRecord,
  first: number,
  computed: Readonly<Record<string, string>> = {},
): { columns: string; selectList: string; params: unknown[] } {
  const params: unknown[] = [];
  const selectList = COLUMNS.map(([name, type, value]) => {
    const expression = computed[name];
    if (expression !== undefined) return expression;
    params.push(value(v));
    return `$${String(first + params.length - 1)}::${type}`;
  }).join(", ");
  return { columns: COLUMN_LIST, selectList, params };
}

export type { VerificationRow };

export async function insertVerification(q: Queryable, v: VerificationRecord): Promise<VerificationRecord> {
  const { rows } = await q.query<VerificationRow>(
    `insert into email_verifications (${COLUMN_LIST}) values (${VALUE_LIST}) returning *`,
    COLUMNS.map(([, , value]) => value(v)),
  );
  return toVerificationRecord(rows[0]!);
}

/**
 * The user's newest definitive (non-unknown) result for an address validated after `since`
 * (realtime or batch), and when the user last paid for the address (address_charges), in one
 * round trip: together they decide a cached answer. The result cache is per user: another
 * tenant's answer is never served, as its `validated_at` and the cache-hit latency would tell
 * that someone else verified the address.
 */
export async function findCachedVerification(
  q: Queryable,
  userId: string,
  email: string,
  since: Date,
): Promise<{ record: VerificationRecord | null; lastChargedAt: Date | null }> {
  const { rows } = await q.query<VerificationRow & { mp_charged_at: Date | null }>(
    `select v.*, c.charged_at as mp_charged_at
       from (values (1)) as one (x)
       left join lateral (
         select * from email_verifications
          where user_id = $1 and email = $2 and validated_at > $3 and status <> 'unknown'
          order by validated_at desc limit 1
       ) v on true
       left join address_charges c on c.user_id = $1 and c.email = $2`,
    [userId, email, since],
  );
  const row = rows[0]!;
  return { record: row.id ? toVerificationRecord(row) : null, lastChargedAt: row.mp_charged_at };
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
