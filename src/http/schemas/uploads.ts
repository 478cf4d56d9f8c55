import { Type } from "typebox";
import type { TaskRecord } from "../../tasks/service.ts";
import type { UploadRecord } from "../../uploads/service.ts";
import { ref, Uuid, WebhookUrlDocumented } from "./common.ts";
import { UploadStatusSchema } from "./enums.ts";

/** Additions to the spec's upload object (DESIGN §5 "Billing units"): every row accounted for. */
export const UploadCounts = {
  email_count: Type.Integer({
    description: "Distinct addresses queued (= jobs = credits reserved); same as unique_count",
  }),
  submitted_count: Type.Integer({ description: "Rows whose email cell is an address, duplicates included" }),
  unique_count: Type.Integer({ description: "Distinct addresses among them: the jobs queued" }),
  duplicate_count: Type.Integer({ description: "Rows repeating an earlier row's address (verified once)" }),
  skipped_count: Type.Integer({
    description: "Rows whose email cell is blank or not an address: no job, status `skipped` in the download",
  }),
};

export const uploadCounts = (u: UploadRecord) => ({
  email_count: u.emailCount,
  submitted_count: u.submittedCount,
  unique_count: u.emailCount,
  duplicate_count: u.submittedCount - u.emailCount,
  skipped_count: u.skippedCount,
});

export const UploadAccepted = Type.Object(
  {
    upload_id: Uuid,
    task_id: Uuid,
    filename: Type.String({ description: "Original file name" }),
    ...UploadCounts,
    status: ref(UploadStatusSchema),
    message: Type.String(),
    uploaded_at: Type.String({ format: "date-time" }),
  },
  { $id: "Upload", description: "An accepted upload: its task is queued" },
);

export const UploadParams = Type.Object({ upload_id: Uuid });

/** `UploadDetail`, not `UploadStatus`: that name is the status enum's (enums.ts). */
export const UploadDetail = Type.Object(
  {
    upload_id: Uuid,
    task_id: Uuid,
    filename: Type.String({ description: "Original file name" }),
    ...UploadCounts,
    user_id: Type.Optional(Uuid),
    status: ref(UploadStatusSchema),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
    task: Type.Object({
      id: Uuid,
      user_id: Type.Union([Uuid, Type.Null()]),
      webhook_url: Type.Union([Type.String(), Type.Null()]),
      created_at: Type.String({ format: "date-time" }),
      updated_at: Type.String({ format: "date-time" }),
    }),
  },
  { $id: "UploadDetail", description: "An upload and the task processing it" },
);

/**
 * The multipart form of `POST /api/v1/tasks/batch/upload`, for the OpenAPI document only: the
 * route reads the parts itself (routes/uploads.ts) and Fastify never validates this schema.
 */
export const UploadForm = Type.Object({
  // A multipart part's file name has no schema keyword of its own: the rule is in the words and
  // in `x-filename-pattern` (for tools that read it); the SDK's uploadForm() types it.
  file: Type.String({
    format: "binary",
    description:
      "The list, sent with a file name ending in .csv, .txt or .xlsx (any letter case): the extension picks the parser, and a part without one (a bare Blob) is a 400. .txt: one address per line; at most 10,000 addresses and MAX_UPLOAD_BYTES (default 10 MiB)",
    "x-filename-pattern": "\\.([Cc][Ss][Vv]|[Tt][Xx][Tt]|[Xx][Ll][Ss][Xx])$",
  }),
  webhook_url: Type.Optional(WebhookUrlDocumented("Absolute http(s) URL called when the task completes")),
  email_column: Type.Optional(
    Type.String({
      description:
        "csv/xlsx: header name or 1-based index of the column holding the addresses (default: found from the header or the contents)",
    }),
  ),
  column: Type.Optional(Type.String({ description: "Alias of email_column" })),
  sheet: Type.Optional(
    Type.String({
      description:
        "xlsx: the name of the sheet holding the list (default: the sheet whose email column's header says email, else the one sheet with addresses; several candidates are refused as `ambiguous_sheet`, naming them)",
    }),
  ),
  retry_window_minutes: Type.Optional(
    Type.String({
      description:
        "0 to 1440: minutes after the task starts during which deferred addresses are retried, then settled as unknown (default: TASK_RETRY_WINDOW_MINUTES)",
    }),
  ),
});

const plural = (n: number, one: string, many: string): string => `${n.toString()} ${n === 1 ? one : many}`;

/** "3 addresses queued for verification (1 duplicate row, 2 rows skipped: no address)". */
function uploadMessage(u: UploadRecord): string {
  const notes = [
    ...(u.submittedCount > u.emailCount
      ? [plural(u.submittedCount - u.emailCount, "duplicate row", "duplicate rows")]
      : []),
    ...(u.skippedCount > 0 ? [`${plural(u.skippedCount, "row", "rows")} skipped: no address`] : []),
  ];
  return `${u.emailCount.toString()} addresses queued for verification${notes.length ? ` (${notes.join(", ")})` : ""}`;
}

export const toUploadAccepted = ({ upload, task }: { upload: UploadRecord; task: TaskRecord }) => ({
  upload_id: upload.id,
  task_id: task.id,
  filename: upload.filename,
  ...uploadCounts(upload),
  status: upload.status,
  message: uploadMessage(upload),
  uploaded_at: upload.createdAt.toISOString(),
});

export const toUploadDetail = ({ upload, task }: { upload: UploadRecord; task: TaskRecord }) => ({
  upload_id: upload.id,
  task_id: upload.taskId,
  filename: upload.filename,
  ...uploadCounts(upload),
  user_id: upload.userId,
  status: upload.status,
  created_at: upload.createdAt.toISOString(),
  updated_at: upload.updatedAt.toISOString(),
  task: {
    id: task.id,
    user_id: task.userId,
    webhook_url: task.webhookUrl,
    created_at: task.createdAt.toISOString(),
    updated_at: task.updatedAt.toISOString(),
  },
});
