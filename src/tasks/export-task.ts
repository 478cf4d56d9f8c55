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
import type { VerificationStatus } from "../verify/index.ts";

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

/** The result columns of one row. A job still running shows `pending`; a job that failed outright shows unknown. */
function resultCells(row: ExportRow): ExportCell[] {
  const r = row.result;
  if (r) {
    return [
      r.email,
      r.status,
      r.isRoleBased,
      r.isDisposable,
      r.hasMxRecords,
      r.hasReverseDns,
      r.domainName,
      r.hostName,
      r.serverType,
      r.isCatchall,
      r.unknownReason ?? "",
      r.needsPhysicalVerify,
      r.validatedAt.toISOString(),
    ];
  }
  const blank = RESULT_COLUMNS.map(() => "");
  if (row.email === null || row.jobStatus === null) return blank; // not an address: no job
  blank[0] = row.email;
  if (row.jobStatus === "failed") {
    blank[1] = "unknown";
    blank[10] = "verification_failed";
  } else {
    blank[1] = "pending";
  }
  return blank;
}

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
      const result = resultCells(row);
      if (opts.format === "txt") {
        // txt lists addresses only: a file row that held no address has nothing to show.
        if (result[0] !== "") yield [result[0] ?? "", result[1] ?? ""];
      } else yield upload ? joinResultRow(row.cells ?? [], upload.columnCount, result) : result;
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
