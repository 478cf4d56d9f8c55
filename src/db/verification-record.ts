import type { TaskRecord } from "./queries/tasks.ts";
import type { VerificationRecord } from "./queries/verifications.ts";
import { newId } from "../lib/ids.ts";
import { pickResultFields, resultFieldsJson, type VerificationResult } from "../verify/index.ts";

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
  ...pickResultFields(r),
  evidence: r.evidence,
});

/** The stored record of a batch job's result: billed to the job's user, attributed like its task. */
export const batchRecordOf = (
  r: VerificationResult,
  job: { userId: string | null },
  task: Pick<TaskRecord, "id" | "userId" | "source" | "apiKeyId">,
  at: Date,
): VerificationRecord =>
  recordOfResult(r, {
    id: newId(),
    userId: job.userId ?? task.userId!,
    origin: "batch",
    source: task.source,
    apiKeyId: task.apiKeyId,
    taskId: task.id,
    creditTransactionId: null,
    fromCache: false,
    createdAt: at,
  });

/** A stored result served again (result cache) as the engine would have answered. */
export const resultOfRecord = (r: VerificationRecord): VerificationResult => ({
  ...pickResultFields(r),
  evidence: r.evidence ?? "",
});

/** The spec's result fields (snake_case) of an engine result or a stored record; `id` when stored. */
export const resultJson = (r: VerificationResult | VerificationRecord) => ({
  ...("id" in r ? { id: r.id } : {}),
  ...resultFieldsJson(r),
});
