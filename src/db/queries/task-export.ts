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

/** A page of a file-backed task's original rows after `afterKey`, each joined to its job and result. */
export async function exportUploadRows(
  q: Queryable,
  uploadId: string,
  taskId: string,
  afterKey: number,
  limit: number,
): Promise<ExportRow[]> {
  const { rows } = await q.query<Row>(
    `select r.row_index as k, r.cells, r.email as row_email, j.status as job_status, v.*
       from upload_rows r
       left join email_jobs j on j.task_id = $2 and j.email_address = r.email
       left join email_verifications v on v.id = j.email_id
      where r.upload_id = $1 and r.row_index > $3
      order by r.row_index
      limit $4`,
    [uploadId, taskId, afterKey, limit],
  );
  return rows.map(toExportRow);
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
