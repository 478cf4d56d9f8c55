import type { VerificationRecord } from "../db/queries/verifications.ts";
import type { VerificationResult } from "../verify/index.ts";

/** Who asked and how it was paid: the stored columns the engine's result doesn't have. */
export type RecordContext = Pick<
  VerificationRecord,
  | "id"
  | "userId"
  | "origin"
  | "source"
  | "apiKeyId"
  | "taskId"
  | "creditTransactionId"
  | "fromCache"
  | "createdAt"
>;

/** The one mapping from an engine result to a stored verification (realtime and batch alike). */
export const recordOfResult = (r: VerificationResult, ctx: RecordContext): VerificationRecord => ({
  ...ctx,
  email: r.email,
  status: r.status,
  isRoleBased: r.isRoleBased,
  isDisposable: r.isDisposable,
  hasMxRecords: r.hasMxRecords,
  hasReverseDns: r.hasReverseDns,
  domainName: r.domainName,
  hostName: r.hostName,
  serverType: r.serverType,
  isCatchall: r.isCatchall,
  unknownReason: r.unknownReason,
  needsPhysicalVerify: r.needsPhysicalVerify,
  evidence: r.evidence,
  validatedAt: r.validatedAt,
});

/** A stored result served again (result cache) as the engine would have answered. */
export const resultOfRecord = (r: VerificationRecord): VerificationResult => ({
  email: r.email,
  status: r.status,
  isRoleBased: r.isRoleBased,
  isDisposable: r.isDisposable,
  hasMxRecords: r.hasMxRecords,
  hasReverseDns: r.hasReverseDns,
  domainName: r.domainName,
  hostName: r.hostName,
  serverType: r.serverType,
  isCatchall: r.isCatchall,
  validatedAt: r.validatedAt,
  unknownReason: r.unknownReason as VerificationResult["unknownReason"],
  needsPhysicalVerify: r.needsPhysicalVerify,
  evidence: r.evidence ?? "",
});

/** The spec's result fields (snake_case) of an engine result or a stored record; `id` when stored. */
export const resultJson = (r: VerificationResult | VerificationRecord) => ({
  ...("id" in r ? { id: r.id } : {}),
  email: r.email,
  status: r.status,
  is_role_based: r.isRoleBased,
  is_disposable: r.isDisposable,
  has_mx_records: r.hasMxRecords,
  has_reverse_dns: r.hasReverseDns,
  domain_name: r.domainName,
  host_name: r.hostName,
  server_type: r.serverType,
  is_catchall: r.isCatchall,
  validated_at: r.validatedAt.toISOString(),
  unknown_reason: r.unknownReason,
  needs_physical_verify: r.needsPhysicalVerify,
});
