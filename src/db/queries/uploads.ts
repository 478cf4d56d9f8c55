import type { Queryable } from "../client.ts";

/** An upload's status follows its task: completed once the task has finished. */
export async function completeUploadOfTask(q: Queryable, taskId: string, at: Date): Promise<string | null> {
  const { rows } = await q.query<{ id: string }>(
    "update uploads set status = 'completed', updated_at = $2 where task_id = $1 and status = 'processing' returning id",
    [taskId, at],
  );
  return rows[0]?.id ?? null;
}

export async function findUploadIdOfTask(q: Queryable, taskId: string): Promise<string | null> {
  const { rows } = await q.query<{ id: string }>("select id from uploads where task_id = $1", [taskId]);
  return rows[0]?.id ?? null;
}

export interface UploadRecord {
  id: string;
  userId: string;
  taskId: string;
  filename: string;
  format: "txt" | "csv" | "xlsx";
  emailCount: number;
  header: string[] | null;
  emailColumn: number | null;
  status: "processing" | "completed" | "failed";
  createdAt: Date;
  updatedAt: Date;
}

interface UploadRow {
  id: string;
  user_id: string;
  task_id: string;
  filename: string;
  format: "txt" | "csv" | "xlsx";
  email_count: number;
  header: string[] | null;
  email_column: number | null;
  status: "processing" | "completed" | "failed";
  created_at: Date;
  updated_at: Date;
}

export const toUpload = (r: UploadRow): UploadRecord => ({
  id: r.id,
  userId: r.user_id,
  taskId: r.task_id,
  filename: r.filename,
  format: r.format,
  emailCount: r.email_count,
  header: r.header,
  emailColumn: r.email_column,
  status: r.status,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function findUploadsOfTasks(q: Queryable, taskIds: string[]): Promise<Map<string, UploadRecord>> {
  if (taskIds.length === 0) return new Map();
  const { rows } = await q.query<UploadRow>("select * from uploads where task_id = any($1::uuid[])", [taskIds]);
  return new Map(rows.map((r) => [r.task_id, toUpload(r)]));
}
