import type { Queryable } from "../client.ts";

export type VerificationStatus =
  "valid" | "invalid" | "catchall" | "invalid_syntax" | "disposable_domain" | "unknown";

/** A stored verification (realtime answer or batch job result). */
export interface VerificationRecord {
  id: string;
  userId: string;
  email: string;
  status: VerificationStatus;
  isRoleBased: boolean;
  isDisposable: boolean;
  hasMxRecords: boolean;
  hasReverseDns: boolean;
  domainName: string;
  hostName: string;
  serverType: string;
  isCatchall: boolean;
  unknownReason: string | null;
  needsPhysicalVerify: boolean;
  /** What decided the status (see migration 0005); null for older rows. */
  evidence: string | null;
  validatedAt: Date;
  origin: "realtime" | "batch";
  source: "frontend" | "api_key";
  apiKeyId: string | null;
  taskId: string | null;
  creditTransactionId: string | null;
  fromCache: boolean;
  createdAt: Date;
}

interface VerificationRow {
  id: string;
  user_id: string;
  email: string;
  status: VerificationStatus;
  is_role_based: boolean;
  is_disposable: boolean;
  has_mx_records: boolean;
  has_reverse_dns: boolean;
  domain_name: string;
  host_name: string;
  server_type: string;
  is_catchall: boolean;
  unknown_reason: string | null;
  needs_physical_verify: boolean;
  evidence: string | null;
  validated_at: Date;
  origin: "realtime" | "batch";
  source: "frontend" | "api_key";
  api_key_id: string | null;
  task_id: string | null;
  credit_transaction_id: string | null;
  from_cache: boolean;
  created_at: Date;
}

export const toVerificationRecord = (r: VerificationRow): VerificationRecord => ({
  id: r.id,
  userId: r.user_id,
  email: r.email,
  status: r.status,
  isRoleBased: r.is_role_based,
  isDisposable: r.is_disposable,
  hasMxRecords: r.has_mx_records,
  hasReverseDns: r.has_reverse_dns,
  domainName: r.domain_name,
  hostName: r.host_name,
  serverType: r.server_type,
  isCatchall: r.is_catchall,
  unknownReason: r.unknown_reason,
  needsPhysicalVerify: r.needs_physical_verify,
  evidence: r.evidence,
  validatedAt: r.validated_at,
  origin: r.origin,
  source: r.source,
  apiKeyId: r.api_key_id,
  taskId: r.task_id,
  creditTransactionId: r.credit_transaction_id,
  fromCache: r.from_cache,
  createdAt: r.created_at,
});

export async function insertVerification(q: Queryable, v: VerificationRecord): Promise<VerificationRecord> {
  const { rows } = await q.query<VerificationRow>(
    `insert into email_verifications
       (id, user_id, email, status, is_role_based, is_disposable, has_mx_records, has_reverse_dns,
        domain_name, host_name, server_type, is_catchall, unknown_reason, needs_physical_verify,
        validated_at, origin, source, api_key_id, task_id, credit_transaction_id, from_cache, created_at, evidence)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
     returning *`,
    [
      v.id,
      v.userId,
      v.email,
      v.status,
      v.isRoleBased,
      v.isDisposable,
      v.hasMxRecords,
      v.hasReverseDns,
      v.domainName,
      v.hostName,
      v.serverType,
      v.isCatchall,
      v.unknownReason,
      v.needsPhysicalVerify,
      v.validatedAt,
      v.origin,
      v.source,
      v.apiKeyId,
      v.taskId,
      v.creditTransactionId,
      v.fromCache,
      v.createdAt,
      v.evidence,
    ],
  );
  return toVerificationRecord(rows[0]!);
}

/** The newest definitive (non-unknown) result for an address validated after `since`, whoever asked. */
export async function findCachedVerification(
  q: Queryable,
  email: string,
  since: Date,
): Promise<VerificationRecord | null> {
  const { rows } = await q.query<VerificationRow>(
    `select * from email_verifications
      where email = $1 and validated_at > $2 and status <> 'unknown'
      order by validated_at desc limit 1`,
    [email, since],
  );
  return rows[0] ? toVerificationRecord(rows[0]) : null;
}

/** True when the user paid for a verification of this address after `since` (the free-repeat window). */
export async function hasPaidVerificationSince(
  q: Queryable,
  userId: string,
  email: string,
  since: Date,
): Promise<boolean> {
  const { rows } = await q.query(
    `select 1 from email_verifications
      where user_id = $1 and email = $2 and created_at > $3 and credit_transaction_id is not null
      limit 1`,
    [userId, email, since],
  );
  return rows.length > 0;
}

/** Many results in one statement (a worker records a whole domain group at once). */
export async function insertVerifications(q: Queryable, list: VerificationRecord[]): Promise<void> {
  if (list.length === 0) return;
  const col = <T>(f: (v: VerificationRecord) => T): T[] => list.map(f);
  await q.query(
    `insert into email_verifications
       (id, user_id, email, status, is_role_based, is_disposable, has_mx_records, has_reverse_dns,
        domain_name, host_name, server_type, is_catchall, unknown_reason, needs_physical_verify,
        validated_at, origin, source, api_key_id, task_id, credit_transaction_id, from_cache, created_at, evidence)
     select * from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::boolean[], $6::boolean[],
                          $7::boolean[], $8::boolean[], $9::text[], $10::text[], $11::text[], $12::boolean[],
                          $13::text[], $14::boolean[], $15::timestamptz[], $16::text[], $17::text[], $18::uuid[],
                          $19::uuid[], $20::uuid[], $21::boolean[], $22::timestamptz[], $23::text[])`,
    [
      col((v) => v.id),
      col((v) => v.userId),
      col((v) => v.email),
      col((v) => v.status),
      col((v) => v.isRoleBased),
      col((v) => v.isDisposable),
      col((v) => v.hasMxRecords),
      col((v) => v.hasReverseDns),
      col((v) => v.domainName),
      col((v) => v.hostName),
      col((v) => v.serverType),
      col((v) => v.isCatchall),
      col((v) => v.unknownReason),
      col((v) => v.needsPhysicalVerify),
      col((v) => v.validatedAt),
      col((v) => v.origin),
      col((v) => v.source),
      col((v) => v.apiKeyId),
      col((v) => v.taskId),
      col((v) => v.creditTransactionId),
      col((v) => v.fromCache),
      col((v) => v.createdAt),
      col((v) => v.evidence),
    ],
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
