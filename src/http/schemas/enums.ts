// The closed sets of the API, each one named component (`#/components/schemas/<$id>`) that every
// schema using it references through ref(). One name per concept keeps generated clients to one
// type per set: openapi-python-client names an inline enum after its parent and property
// (`Upload.status` → `UploadStatus`), so inline copies both multiplied the types and collided with
// components of that name (it then dropped the `Upload` model). Each is `type` + `enum`, never an
// anyOf of one-value enums: generators make one enum of it, and fast-json-stringify writes it as a
// plain string.
import { Type, type TSchema, type TUnsafe } from "typebox";
import type { Principal } from "../../auth/principal.ts";
import type { CreditTransaction } from "../../credits/service.ts";
import { API_KEY_PURPOSES } from "../../keys/service.ts";
import { ERROR_CODES } from "../../lib/app-error.ts";
import type { JobView, TaskRecord } from "../../tasks/service.ts";
import type { UploadRecord } from "../../uploads/service.ts";
import { VERIFICATION_STATUSES } from "../../verify/index.ts";
import type { WebhookDelivery } from "../../webhooks/service.ts";

const namedEnum = <const T extends readonly string[]>(
  $id: string,
  values: T,
  description: string,
): TUnsafe<T[number]> & TSchema =>
  Type.Unsafe<T[number]>({ $id, type: "string", enum: [...values], description });

export const VerificationStatusSchema = namedEnum(
  "VerificationStatus",
  VERIFICATION_STATUSES,
  "The verdict on an address: `valid`, `invalid` (no such mailbox or no mail host), `catchall` (the domain accepts every address), `invalid_syntax`, `disposable_domain`, or `unknown` (no definitive answer; not billed)",
);

const UPLOAD_STATUSES = [
  "processing",
  "completed",
  "failed",
  "cancelled",
] as const satisfies readonly UploadRecord["status"][];

export const UploadStatusSchema = namedEnum(
  "UploadStatus",
  UPLOAD_STATUSES,
  "Follows the task: `processing` until it finishes, then `completed` (`cancelled` when the task was cancelled, `failed` only if processing could not finish)",
);

export const JOB_STATUSES = [
  "pending",
  "processing",
  "completed",
  "failed",
  "cancelled",
] as const satisfies readonly JobView["job"]["status"][];

export const JobStatusSchema = namedEnum(
  "JobStatus",
  JOB_STATUSES,
  "Where one address of a task stands: `pending` (waiting, or waiting for a retry), `processing`, `completed` (it has a result, `unknown` included), `failed` (an internal error after the last attempt) or `cancelled` (dropped by a cancel before it ran)",
);

export const TaskSourceSchema = namedEnum(
  "TaskSource",
  ["frontend", "api_key"] as const satisfies readonly NonNullable<TaskRecord["source"]>[],
  "Origin: `api_key` (an API key) or `frontend` (a dashboard session)",
);

export const TransactionTypeSchema = namedEnum(
  "TransactionType",
  ["grant", "deduction"] as const satisfies readonly CreditTransaction["type"][],
  "`grant` adds credits (operator grants, refunds), `deduction` spends them",
);

export const TransactionSourceSchema = namedEnum(
  "TransactionSource",
  ["api_key", "frontend", "operator"] as const satisfies readonly (
    Principal["source"] | NonNullable<CreditTransaction["metadata"]["source"]>
  )[],
  "Who moved the credits: `api_key` (a request with an API key), `frontend` (a dashboard session) or `operator` (a grant by the service's operator)",
);

export const ApiKeyPurposeSchema = namedEnum(
  "ApiKeyPurpose",
  API_KEY_PURPOSES,
  "Integration the key is for; `custom` keys (and sessions) may also manage keys",
);

export const WebhookDeliveryStatusSchema = namedEnum(
  "WebhookDeliveryStatus",
  ["pending", "delivering", "delivered", "failed"] as const satisfies readonly WebhookDelivery["status"][],
  "pending (waiting for its next attempt), delivering (an attempt is running), delivered (a 2xx answer), failed (given up)",
);

export const ErrorCodeSchema = namedEnum(
  "ErrorCode",
  ERROR_CODES,
  "Machine-readable code; each code has one HTTP status",
);

/** The enum components, for openapi.ts COMPONENTS. */
export const ENUM_COMPONENTS = [
  VerificationStatusSchema,
  UploadStatusSchema,
  JobStatusSchema,
  TaskSourceSchema,
  TransactionTypeSchema,
  TransactionSourceSchema,
  ApiKeyPurposeSchema,
  WebhookDeliveryStatusSchema,
  ErrorCodeSchema,
];
