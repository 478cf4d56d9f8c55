import type { Queryable } from "../client.ts";

/** An upload's status follows its task: completed once the task has finished. */
export async function completeUploadOfTask(q: Queryable, taskId: string, at: Date): Promise<string | null> {
  const { rows } = await q.query<{ id: string }>(
    "update uploads set status = 'completed', updated_at = $2 where task_id = $1 and status = 'processing' returning id",
    [taskId, at],
  );
  return rows[0]?.id ?? null;
}

/** A cancelled task's upload is `cancelled`. */
export async function cancelUploadOfTask(q: Queryable, taskId: string, at: Date): Promise<void> {
  await q.query(
    "update uploads set status = 'cancelled', updated_at = $2 where task_id = $1 and status = 'processing'",
    [taskId, at],
  );
}

export async function findUploadIdOfTask(q: Queryable, taskId: string): Promise<string | null> {
  const { rows } = await q.query<{ id: string }>("select id from uploads where task_id = $1", [taskId]);
  return rows[0]?.id ?? null;
}

export type UploadState = "processing" | "completed" | "failed" | "cancelled";

export interface UploadRecord {
  id: string;
  userId: string;
  taskId: string;
  filename: string;
  format: "txt" | "csv" | "xlsx";
  /** Distinct addresses queued (= the task's jobs and credits reserved). */
  emailCount: number;
  /** Rows whose email cell is address-shaped, duplicates included. */
  submittedCount: number;
  /** Rows whose email cell is blank or not an address: kept for the download, no job. */
  skippedCount: number;
  header: string[] | null;
  emailColumn: number | null;
  columnCount: number;
  status: UploadState;
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
  submitted_count: number;
  skipped_count: number;
  header: string[] | null;
  email_column: number | null;
  column_count: number;
  status: UploadState;
  created_at: Date;
  updated_at: Date;
}

const toUpload = (r: UploadRow): UploadRecord => ({
  id: r.id,
  userId: r.user_id,
  taskId: r.task_id,
  filename: r.filename,
  format: r.format,
  emailCount: r.email_count,
  submittedCount: r.submitted_count,
  skippedCount: r.skipped_count,
  header: r.header,
  emailColumn: r.email_column,
  columnCount: r.column_count,
  status: r.status,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function findUploadsOfTasks(
  q: Queryable,
  taskIds: string[],
): Promise<Map<string, UploadRecord>> {
  if (taskIds.length === 0) return new Map();
  const { rows } = await q.query<UploadRow>("select * from uploads where task_id = any($1::uuid[])", [
    taskIds,
  ]);
  return new Map(rows.map((r) => [r.task_id, toUpload(r)]));
}

export async function insertUpload(
  q: Queryable,
  u: Omit<UploadRecord, "status" | "updatedAt"> & { storedBytes: number },
): Promise<UploadRecord> {
  const { rows } = await q.query<UploadRow>(
    `insert into uploads (id, user_id, task_id, filename, format, email_count, header, email_column, column_count, created_at, updated_at, submitted_count, skipped_count, stored_bytes)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11, $12, $13) returning *`,
    [
      u.id,
      u.userId,
      u.taskId,
      u.filename,
      u.format,
      u.emailCount,
      u.header === null ? null : JSON.stringify(u.header),
      u.emailColumn,
      u.columnCount,
      u.createdAt,
      u.submittedCount,
      u.skippedCount,
      u.storedBytes,
    ],
  );
  return toUpload(rows[0]!);
}

/** One block of an upload's original rows (files/row-block.ts), `first` onwards. */
export async function insertUploadRowBlock(
  q: Queryable,
  uploadId: string,
  block: { first: number; count: number; data: Uint8Array },
): Promise<void> {
  await q.query(
    "insert into upload_row_blocks (upload_id, first_index, row_count, encoding, data) values ($1, $2, $3, 'deflate', $4)",
    [uploadId, block.first, block.count, block.data],
  );
}

/** The original file of an xlsx upload and the sheet its list was read from (migration 0024). */
export interface UploadWorkbook {
  sheetName: string;
  data: Buffer;
}

export async function insertUploadWorkbook(
  q: Queryable,
  uploadId: string,
  workbook: UploadWorkbook,
): Promise<void> {
  await q.query("insert into upload_workbooks (upload_id, sheet_name, data) values ($1, $2, $3)", [
    uploadId,
    workbook.sheetName,
    workbook.data,
  ]);
}

/** Null for csv and txt uploads, and for xlsx uploads stored before the workbook was kept. */
export async function findUploadWorkbook(q: Queryable, uploadId: string): Promise<UploadWorkbook | null> {
  const { rows } = await q.query<{ sheet_name: string; data: Uint8Array }>(
    "select sheet_name, data from upload_workbooks where upload_id = $1",
    [uploadId],
  );
  const row = rows[0];
  return row
    ? {
        sheetName: row.sheet_name,
        data: Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength),
      }
    : null;
}

/** Bytes the user's kept uploads take (their row blocks), counted against the storage budget. */
export async function storedUploadBytesOf(q: Queryable, userId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    "select coalesce(sum(stored_bytes), 0)::bigint as n from uploads where user_id = $1",
    [userId],
  );
  return rows[0]?.n ?? 0;
}

export async function findUpload(q: Queryable, id: string): Promise<UploadRecord | null> {
  const { rows } = await q.query<UploadRow>("select * from uploads where id = $1", [id]);
  return rows[0] ? toUpload(rows[0]) : null;
}
