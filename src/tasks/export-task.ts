import type { Readable } from "node:stream";
import type { Principal } from "../auth/principal.ts";
import type { Database } from "../db/client.ts";
import {
  exportTaskJobs,
  jobsOfAddresses,
  uploadRowBlocks,
  type ExportRow,
} from "../db/queries/task-export.ts";
import { findTask } from "../db/queries/tasks.ts";
import { findUploadWorkbook, findUploadsOfTasks, type UploadRecord } from "../db/queries/uploads.ts";
import {
  addressAsWritten,
  buildResultHeader,
  contentTypeFor,
  decodeRowBlock,
  DEFAULT_MAX_COLUMNS,
  downloadFilename,
  filledWidth,
  joinResultRow,
  patchWorkbookOrNull,
  RESULT_COLUMNS,
  TXT_RESULT_COLUMNS,
  writeExport,
  type ExportCell,
  type ExportFormat,
} from "../files/index.ts";
import { AppError, notFound, validationError } from "../lib/app-error.ts";
import {
  cellsInOrder,
  columnsNamed,
  resultCells,
  VERIFICATION_STATUSES,
  type ResultCells,
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

/**
 * Status of an upload row whose email cell is blank or not an address (no job, not billed):
 * DESIGN §5, every row of a download has a status.
 */
export const SKIPPED_STATUS = "skipped";

/** Status of a row whose job was dropped by a cancel before it ran (not billed). */
const CANCELLED_STATUS = "cancelled";

/** The result cells of an address whose verification failed outright: `unknown`, not billed. */
export const failedCells = (email: string): ResultCells => ({
  email,
  status: "unknown",
  unknown_reason: "verification_failed",
});

/**
 * The result cells of one row. A job still running shows `pending`; a job dropped by a cancel
 * shows `cancelled`; a job that failed outright
 * shows unknown; a row without an address shows `skipped`.
 */
function cellsOf(row: ExportRow): ResultCells {
  if (row.result) return resultCells(row.result);
  if (row.email === null) return { status: SKIPPED_STATUS };
  if (row.jobStatus === null) return { email: row.email, status: SKIPPED_STATUS }; // no job (not expected)
  if (row.jobStatus === "cancelled") return { email: row.email, status: CANCELLED_STATUS };
  return row.jobStatus === "failed" ? failedCells(row.email) : { email: row.email, status: "pending" };
}

const TXT_FIELDS = columnsNamed(TXT_RESULT_COLUMNS);

const statusOf = (row: ExportRow): string | null =>
  row.result?.status ?? (row.jobStatus === "failed" ? "unknown" : null);

/** One page of rows, and whether another may follow. */
interface Page {
  rows: ExportRow[];
  more: boolean;
}

/** Blocks of a file upload read at once: ≤ 4 × 256 KB of JSON (pack-list.ts), rows by the thousand. */
const BLOCKS_PER_PAGE = 4;

/** The original rows after row `after`, block by block, each with its job and result. */
async function uploadPage(db: Database, taskId: string, uploadId: string, after: number): Promise<Page> {
  const blocks = await uploadRowBlocks(db, uploadId, after, BLOCKS_PER_PAGE);
  const rows: ExportRow[] = [];
  for (const block of blocks) {
    const { cells, emails } = decodeRowBlock(block.encoding, block.data);
    const addresses = [...new Set(emails.filter((e): e is string => e !== null))];
    const jobs = await jobsOfAddresses(db, taskId, addresses);
    cells.forEach((rowCells, i) => {
      const email = emails[i] ?? null;
      const job = email === null ? undefined : jobs.get(email);
      rows.push({
        key: block.first + i,
        cells: rowCells,
        email,
        jobStatus: job?.jobStatus ?? null,
        result: job?.result ?? null,
      });
    });
  }
  return { rows, more: blocks.length === BLOCKS_PER_PAGE };
}

async function page(db: Database, taskId: string, upload: UploadRecord | null, after: number): Promise<Page> {
  if (upload) return uploadPage(db, taskId, upload.id, after);
  const rows = await exportTaskJobs(db, taskId, after, PAGE);
  return { rows, more: rows.length === PAGE };
}

/**
 * Every row of the task, page by page (keyset on position/row index: constant memory, any size),
 * starting with `first`, the first page, already read.
 */
async function* pages(
  db: Database,
  taskId: string,
  upload: UploadRecord | null,
  first: Page,
): AsyncGenerator<ExportRow> {
  for (let p = first; ;) {
    yield* p.rows;
    const last = p.rows.at(-1);
    if (!p.more || last === undefined) return;
    p = await page(db, taskId, upload, last.key);
  }
}

/**
 * How many original columns the download shows: the widest real (non-blank) header or cell.
 * Uploads since the column bound store exactly that as `columnCount` (≤ DEFAULT_MAX_COLUMNS); an
 * upload stored before it may claim a million columns for one row of empty csv fields, so its
 * width is measured on the stored rows. One that really is wider cannot be downloaded with its
 * columns: refused before anything is sent.
 */
async function originalWidth(
  db: Database,
  taskId: string,
  upload: UploadRecord,
  first: Page,
): Promise<number> {
  if (upload.columnCount <= DEFAULT_MAX_COLUMNS) return upload.columnCount;
  let width = filledWidth(upload.header);
  for await (const row of pages(db, taskId, upload, first)) width = Math.max(width, filledWidth(row.cells));
  if (width > DEFAULT_MAX_COLUMNS) {
    throw validationError("The upload is too wide to download with its original columns", [
      {
        field: "format",
        reason: `the uploaded file has ${width.toLocaleString("en-US")} columns, more than the ${DEFAULT_MAX_COLUMNS.toLocaleString("en-US")} a download holds; use format=txt`,
      },
    ]);
  }
  return width;
}

/**
 * The xlsx download of an xlsx upload: the user's workbook with the result columns appended
 * (files/export/patch-workbook.ts). Null when the upload's workbook was not kept (uploads from
 * before migration 0024) or does not match its rows: the caller writes a plain workbook.
 */
async function workbookDownload(
  db: Database,
  upload: UploadRecord,
  width: number,
  rows: AsyncIterable<ExportRow>,
  keep: ((row: ExportRow) => boolean) | null,
): Promise<Readable | null> {
  const workbook = await findUploadWorkbook(db, upload.id);
  if (!workbook) return null;
  const dataRows: Array<ExportCell[] | null> = [];
  for await (const row of rows) dataRows.push(keep && !keep(row) ? null : cellsInOrder(cellsOf(row)));
  const names = buildResultHeader(upload.header, width).slice(width);
  return patchWorkbookOrNull({
    original: workbook.data,
    sheetName: workbook.sheetName,
    resultHeader: upload.header ? names : null,
    resultWidth: names.length,
    listWidth: width,
    dataRows,
    filtered: keep !== null,
  });
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

  // Everything that can fail is tried before the stream exists, so that it is still an ordinary
  // error response: the task, the owner, the first page (the database answers) and the width.
  const first = await page(db, task.id, upload, -1);
  const width = upload && opts.format !== "txt" ? await originalWidth(db, task.id, upload, first) : 0;
  const filename = downloadFilename(
    upload?.filename ?? null,
    task.id,
    opts.format,
    VERIFICATION_STATUSES.filter((s) => opts.statuses?.has(s)),
  );
  if (upload?.format === "xlsx" && opts.format === "xlsx") {
    const rows = async function* (): AsyncGenerator<ExportRow> {
      yield* pages(db, task.id, upload, first);
    };
    const body = await workbookDownload(db, upload, width, rows(), opts.statuses ? keep : null);
    if (body) return { filename, contentType: contentTypeFor("xlsx"), body };
  }

  async function* rows(): AsyncGenerator<ExportCell[]> {
    for await (const row of pages(db, task!.id, upload, first)) {
      if (!keep(row)) continue;
      const cells = cellsOf(row);
      if (opts.format === "txt") {
        // txt lists addresses only: a file row that held no address has nothing to show. The
        // address is the one the user wrote (the csv and xlsx have the normalised one beside it).
        if (cells.email)
          yield cellsInOrder(
            { ...cells, email: addressAsWritten(row.cells, upload?.emailColumn ?? null) ?? cells.email },
            TXT_FIELDS,
          );
      } else {
        const result = cellsInOrder(cells);
        yield upload ? joinResultRow(row.cells ?? [], width, result) : result;
      }
    }
  }

  const header =
    opts.format === "txt"
      ? [...TXT_RESULT_COLUMNS]
      : upload
        ? buildResultHeader(upload.header, width)
        : [...RESULT_COLUMNS];
  const body = writeExport(opts.format, { header, rows: rows(), escapeFormulas: opts.escapeFormulas });
  return {
    filename,
    contentType: contentTypeFor(opts.format),
    body,
  };
}
