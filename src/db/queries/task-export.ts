import type { Queryable } from "../client.ts";
import type { JobStatus } from "./jobs.ts";
import { toVerificationRecord, type VerificationRecord } from "./verifications.ts";

/** One line of a results download: the original cells (file uploads), the job, and its result. */
export interface ExportRow {
  /** Row index (file uploads) or list position (JSON tasks): the keyset of the next page. */
  key: number;
  cells: string[] | null;
  email: string | null;
  jobStatus: JobStatus | null;
  result: VerificationRecord | null;
}

type Row = Record<string, unknown> & {
  k: number;
  cells: string[] | null;
  row_email: string | null;
  job_status: JobStatus | null;
};

const toExportRow = (r: Row): ExportRow => ({
  key: r.k,
  cells: r.cells,
  email: r.row_email,
  jobStatus: r.job_status,
  result: r.id ? toVerificationRecord(r as unknown as Parameters<typeof toVerificationRecord>[0]) : null,
});

/** One stored block of an upload's original rows (files/row-block.ts decodes `data`). */
export interface StoredRowBlock {
  first: number;
  count: number;
  encoding: "deflate" | "json";
  data: Uint8Array;
}

/** Up to `limit` blocks of an upload whose first row comes after `afterIndex`, in row order. */
export async function uploadRowBlocks(
  q: Queryable,
  uploadId: string,
  afterIndex: number,
  limit: number,
): Promise<StoredRowBlock[]> {
  const { rows } = await q.query<{
    first_index: number;
    row_count: number;
    encoding: "deflate" | "json";
    data: Uint8Array;
  }>(
    `select first_index, row_count, encoding, data from upload_row_blocks
      where upload_id = $1 and first_index > $2
      order by first_index
      limit $3`,
    [uploadId, afterIndex, limit],
  );
  return rows.map((r) => ({ first: r.first_index, count: r.row_count, encoding: r.encoding, data: r.data }));
}

/** The task's job and result of each of `emails` that has one, by address. */
export async function jobsOfAddresses(
  q: Queryable,
  taskId: string,
  emails: readonly string[],
): Promise<Map<string, Pick<ExportRow, "jobStatus" | "result">>> {
  if (emails.length === 0) return new Map();
  const { rows } = await q.query<Row>(
    `select j.email_address as row_email, j.status as job_status, v.*
       from email_jobs j
       left join email_verifications v on v.id = j.email_id
      where j.task_id = $1 and j.email_address = any($2::text[])`,
    [taskId, emails],
  );
  return new Map(rows.map((r) => [r.row_email!, { jobStatus: r.job_status, result: toExportRow(r).result }]));
}

/** A page of a JSON task's jobs after `afterKey` (list position), each with its result. */
export async function exportTaskJobs(
  q: Queryable,
  taskId: string,
  afterKey: number,
  limit: number,
): Promise<ExportRow[]> {
  const { rows } = await q.query<Row>(
    `select j.position as k, null::jsonb as cells, j.email_address as row_email, j.status as job_status, v.*
       from email_jobs j
       left join email_verifications v on v.id = j.email_id
      where j.task_id = $1 and j.position > $2
      order by j.position
      limit $3`,
    [taskId, afterKey, limit],
  );
  return rows.map(toExportRow);
}
