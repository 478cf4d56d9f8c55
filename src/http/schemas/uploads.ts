import { Type } from "typebox";
import type { TaskRecord } from "../../tasks/service.ts";
import type { UploadRecord } from "../../uploads/service.ts";
import { Uuid } from "./common.ts";

export const UploadAccepted = Type.Object({
  upload_id: Uuid,
  task_id: Uuid,
  filename: Type.String(),
  email_count: Type.Integer(),
  status: Type.String(),
  message: Type.String(),
  uploaded_at: Type.String({ format: "date-time" }),
});

export const UploadParams = Type.Object({ upload_id: Uuid });

export const UploadStatus = Type.Object({
  upload_id: Uuid,
  task_id: Uuid,
  filename: Type.String(),
  email_count: Type.Integer(),
  user_id: Type.Optional(Uuid),
  status: Type.String(),
  created_at: Type.String({ format: "date-time" }),
  updated_at: Type.String({ format: "date-time" }),
  task: Type.Object({
    id: Uuid,
    user_id: Type.Union([Uuid, Type.Null()]),
    webhook_url: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
  }),
});

export const toUploadAccepted = ({ upload, task }: { upload: UploadRecord; task: TaskRecord }) => ({
  upload_id: upload.id,
  task_id: task.id,
  filename: upload.filename,
  email_count: upload.emailCount,
  status: upload.status,
  message: `${upload.emailCount} addresses queued for verification`,
  uploaded_at: upload.createdAt.toISOString(),
});

export const toUploadStatus = ({ upload, task }: { upload: UploadRecord; task: TaskRecord }) => ({
  upload_id: upload.id,
  task_id: upload.taskId,
  filename: upload.filename,
  email_count: upload.emailCount,
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
