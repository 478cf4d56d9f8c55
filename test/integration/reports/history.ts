// Builders of a known history for the report tests: ledger rows through the real ledger (explicit
// timestamps and metadata), verifications through insertVerification, tasks and jobs in plain SQL.
import assert from "node:assert/strict";
import type { LightMyRequestResponse } from "fastify";
import { deductCredits, grantCredits } from "../../../src/credits/ledger.ts";
import type { Database } from "../../../src/db/client.ts";
import type { CreditMetadata } from "../../../src/db/queries/credit-transactions.ts";
import { insertVerification } from "../../../src/db/queries/verifications.ts";
import { checksOfLegacyResult, type VerificationStatus } from "../../../src/verify/index.ts";
import { newId } from "../../../src/lib/ids.ts";

export interface LedgerRow {
  /** Signed: > 0 a grant, < 0 a deduction. */
  amount: number;
  at: string;
  metadata: Record<string, unknown>;
}

/** Writes each row through grantCredits / deductCredits, in order (fund the user first). */
export async function writeLedger(db: Database, userId: string, rows: LedgerRow[]): Promise<void> {
  for (const row of rows) {
    const entry = {
      userId,
      amount: Math.abs(row.amount),
      reason: row.amount > 0 ? "test_grant" : "test_deduction",
      metadata: row.metadata as CreditMetadata,
      at: new Date(row.at),
    };
    const outcome = await db.transaction((tx) =>
      row.amount > 0 ? grantCredits(tx, entry) : deductCredits(tx, entry),
    );
    assert.equal(outcome.kind, "applied", `ledger row ${JSON.stringify(row)}: ${outcome.kind}`);
  }
}

export async function insertTaskRow(
  db: Database,
  t: { userId: string; at: string; emailCount: number },
): Promise<string> {
  const id = newId();
  await db.query(
    `insert into tasks (id, user_id, source, email_count, domain_count, created_at, updated_at)
     values ($1, $2, 'api_key', $3, 1, $4, $4)`,
    [id, t.userId, t.emailCount, new Date(t.at)],
  );
  return id;
}

export interface VerificationSpec {
  email: string;
  status: VerificationStatus;
  createdAt: string;
  /** Defaults to createdAt (a cached answer keeps the original validation time). */
  validatedAt?: string;
  origin?: "realtime" | "batch";
  taskId?: string | null;
  isRoleBased?: boolean;
  isDisposable?: boolean;
  isCatchall?: boolean;
  isFreeProvider?: boolean;
}

export async function insertVerificationRow(
  db: Database,
  userId: string,
  v: VerificationSpec,
): Promise<string> {
  const record = await insertVerification(db, {
    id: newId(),
    userId,
    email: v.email,
    status: v.status,
    isRoleBased: v.isRoleBased ?? false,
    isDisposable: v.isDisposable ?? false,
    hasMxRecords: true,
    hasReverseDns: true,
    domainName: v.email.split("@")[1] ?? "",
    hostName: "mx.example.test",
    serverType: "postfix",
    isCatchall: v.isCatchall ?? false,
    unknownReason: v.status === "unknown" ? "greylisted" : null,
    needsPhysicalVerify: false,
    didYouMean: null,
    isFreeProvider: v.isFreeProvider ?? false,
    checks: checksOfLegacyResult({
      status: v.status,
      unknownReason: v.status === "unknown" ? "greylisted" : null,
      hasMxRecords: true,
      hasReverseDns: true,
      hostName: "mx.example.test",
      isDisposable: v.isDisposable ?? false,
    }),
    evidence: null,
    validatedAt: new Date(v.validatedAt ?? v.createdAt),
    origin: v.origin ?? "realtime",
    source: "api_key",
    apiKeyId: null,
    taskId: v.taskId ?? null,
    creditTransactionId: null,
    fromCache: v.validatedAt !== undefined && v.validatedAt !== v.createdAt,
    createdAt: new Date(v.createdAt),
  });
  return record.id;
}

export async function insertJobRow(
  db: Database,
  j: {
    taskId: string;
    userId: string;
    position: number;
    email: string;
    status: string;
    at: string;
    emailId?: string | null;
  },
): Promise<void> {
  await db.query(
    `insert into email_jobs (id, task_id, user_id, position, email_address, domain, status, email_id, run_after, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9)`,
    [
      newId(),
      j.taskId,
      j.userId,
      j.position,
      j.email,
      j.email.split("@")[1] ?? "",
      j.status,
      j.emailId ?? null,
      new Date(j.at),
    ],
  );
}

/** A series point of the usage reports. */
export const point = (date: string, used: number, granted: number) => ({
  date,
  used_credits: used,
  granted_credits: granted,
  net_credits: used - granted,
});

export const totals = (used: number, granted: number) => ({
  used_credits: used,
  granted_credits: granted,
  net_credits: used - granted,
});

export function okJson<T>(res: LightMyRequestResponse): T {
  assert.equal(res.statusCode, 200, res.body);
  return res.json<T>();
}
