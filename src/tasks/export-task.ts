import type { Readable } from "node:stream";
import type { Principal } from "../auth/principal.ts";
import type { Database } from "../db/client.ts";
import { exportTaskJobs, exportUploadRows, type ExportRow } from "../db/queries/task-export.ts";
import { findTask } from "../db/queries/tasks.ts";
import { findUploadsOfTasks, type UploadRecord } from "../db/queries/uploads.ts";
import {
  buildResultHeader,
  contentTypeFor,
  downloadFilename,
  joinResultRow,
  RESULT_COLUMNS,
  TXT_RESULT_COLUMNS,
  writeCsv,
  writeTxt,
  writeXlsx,
  type ExportCell,
  type ExportFormat,
} from "../files/index.ts";
import { AppError, notFound } from "../lib/app-error.ts";
import {
  cellsInOrder,
  fieldsNamed,
  resultCells,
  type ResultCell,
  type ResultFieldKey,
  type VerificationStatus,
} from "../verify/index.ts";

const PAGE = 1_000;

export interface DownloadOptions {
  format: ExportFormat;
  /** Only rows whose result has one of these statuses (null = every row). */
  statuses: ReadonlySet<VerificationStatus> | null;
  escapeFormulas: boolean;
}

export interface Download {
  filename: string;
  contentType: string;
  body: Readable;
}

/** The result cells of one row. A job still running shows `pending`; a job that failed outright shows unknown. */
function cellsOf(row: ExportRow): Partial<Record<ResultFieldKey, ResultCell>> {
  if (row.result) return resultCells(row.result);
  if (row.email === null || row.jobStatus === null) return {}; // not an address: no job
  return row.jobStatus === "failed"
    ? { email: row.email, status: "unknown", unknownReason: "verification_failed" }
    : { email: row.email, status: "pending" };
}

const TXT_FIELDS = fieldsNamed(TXT_RESULT_COLUMNS);

const statusOf = (row: ExportRow): string | null =>
  row.result?.status ?? (row.jobStatus === "failed" ? "unknown" : null);

/** Every row of the task, page by page (keyset on position/row index: constant memory, any size). */
async function* pages(db: Database, taskId: string, upload: UploadRecord | null): AsyncGenerator<ExportRow> {
  for (let after = -1; ;) {
    const rows = upload
      ? await exportUploadRows(db, upload.id, taskId, after, PAGE)
      : await exportTaskJobs(db, taskId, after, PAGE);
    yield* rows;
    if (rows.length < PAGE) return;
    after = rows[rows.length - 1]!.key;
  }
}

/**
 * The results file of a task, streamed. File uploads come back as uploaded: every original
 * column, then the result columns, in the original row order. A task still running downloads
 * what is finished so far, its other rows marked `pending`.
 */
export async function prepareDownload(
  db: Database,
  principal: Principal,
  taskId: string,
  opts: DownloadOptions,
): Promise<Download> {
  const task = await findTask(db, taskId);
  if (!task) throw notFound("Task");
  if (task.userId !== principal.userId) throw new AppError("FORBIDDEN", "This task belongs to another user");
  const upload = (await findUploadsOfTasks(db, [task.id])).get(task.id) ?? null;

  const keep = (row: ExportRow): boolean => {
    if (!opts.statuses) return true;
    const status = statusOf(row);
    return status !== null && opts.statuses.has(status as VerificationStatus);
  };

  async function* rows(): AsyncGenerator<ExportCell[]> {
    for await (const row of pages(db, task!.id, upload)) {
      if (!keep(row)) continue;
      const cells = cellsOf(row);
      if (opts.format === "txt") {
        // txt lists addresses only: a file row that held no address has nothing to show.
        if (cells.email) yield cellsInOrder(cells, TXT_FIELDS);
      } else {
        const result = cellsInOrder(cells);
        yield upload ? joinResultRow(row.cells ?? [], upload.columnCount, result) : result;
      }
    }
  }

  const header =
    opts.format === "txt"
      ? [...TXT_RESULT_COLUMNS]
      : upload
        ? buildResultHeader(upload.header, upload.columnCount)
        : [...RESULT_COLUMNS];
  const input = { header, rows: rows(), escapeFormulas: opts.escapeFormulas };
  const body =
    opts.format === "csv" ? writeCsv(input) : opts.format === "txt" ? writeTxt(input) : writeXlsx(input);
  return {
    filename: downloadFilename(upload?.filename ?? null, task.id, opts.format),
    contentType: contentTypeFor(opts.format),
    body,
  };
}
