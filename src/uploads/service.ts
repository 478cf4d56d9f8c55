import type { Principal } from "../auth/principal.ts";
import type { Database } from "../db/client.ts";
import { findTask, type TaskRecord } from "../db/queries/tasks.ts";
import { findUpload, insertUpload, insertUploadRows, type UploadRecord } from "../db/queries/uploads.ts";
import type { ListParser } from "../files/index.ts";
import { AppError, notFound, validationError } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import { unstorableTextReason } from "../lib/storable-text.ts";
import { createTask } from "../tasks/create-task.ts";
import { MAX_TASK_EMAILS } from "../tasks/task-input.ts";
import type { Engine } from "../verify/index.ts";

export type { UploadRecord };

export interface UploadInput {
  filename: string;
  data: Buffer;
  emailColumn: string | null;
  /** The form field that named the column (`email_column` or its alias `column`), for error details. */
  columnField?: string;
  webhookUrl: string | null;
}

export interface UploadsService {
  /** Parses and validates the file, then creates the task, its jobs, the reservation and the upload in one transaction. */
  upload(principal: Principal, input: UploadInput): Promise<{ upload: UploadRecord; task: TaskRecord }>;
  status(principal: Principal, uploadId: string): Promise<{ upload: UploadRecord; task: TaskRecord }>;
}

/**
 * The parser sniffs only the first KB for binary content, so a NUL further in reached the
 * database as cell text (a 500 before issue 11): any cell PostgreSQL cannot store refuses the file.
 */
function refuseUnstorableCells(list: { header: string[] | null; rows: string[][] }): void {
  for (const cells of list.header ? [list.header, ...list.rows] : list.rows) {
    for (const cell of cells) {
      const reason = unstorableTextReason(cell);
      if (!reason) continue;
      throw validationError(
        reason.includes("NUL")
          ? "The file contains a NUL character (a zero byte), which a text list cannot hold: it is binary or corrupt. Upload a .csv, .txt or .xlsx list."
          : "The file contains text that is not valid Unicode. Save it again as UTF-8 and upload it.",
        [{ field: "file", reason: `cells ${reason}` }],
      );
    }
  }
}

export function createUploadsService(
  db: Database,
  clock: Clock,
  engine: Pick<Engine, "checkSyntax">,
  parser: Pick<ListParser, "parse">,
): UploadsService {
  return {
    async upload(principal, input) {
      const parsed = await parser.parse({
        filename: input.filename,
        data: input.data,
        emailColumn: input.emailColumn,
        maxEmails: MAX_TASK_EMAILS,
      });
      if (!parsed.ok) {
        throw validationError(parsed.problem.message, [
          { field: parsed.problem.field, reason: parsed.problem.message },
        ]);
      }
      const list = parsed.list;
      refuseUnstorableCells(list);
      let upload: UploadRecord | null = null;
      // Every address-shaped cell, duplicates included (the task dedupes; DESIGN §5): RFC-invalid
      // ones become `invalid_syntax` jobs, as in a JSON task. The other rows are skipped.
      const submitted = list.entries.flatMap((e) => (e.email === null ? [] : [e.email]));
      const { task } = await createTask(db, clock, engine, principal, {
        emails: submitted,
        webhookUrl: input.webhookUrl,
        idempotencyKey: null,
        isFileBacked: true,
        // The original rows are kept so results can be written back beside them on download.
        attach: async (tx, created) => {
          upload = await insertUpload(tx, {
            id: newId(),
            userId: principal.userId,
            taskId: created.id,
            filename: input.filename,
            format: list.format,
            emailCount: created.emailCount,
            submittedCount: submitted.length,
            skippedCount: list.rows.length - submitted.length,
            header: list.header,
            emailColumn: list.emailColumn,
            columnCount: list.columnCount,
            createdAt: created.createdAt,
          });
          const emailOfRow = new Map(list.entries.map((e) => [e.rowIndex, e.email]));
          await insertUploadRows(
            tx,
            upload.id,
            list.rows.map((cells, i) => ({ rowIndex: i, cells, email: emailOfRow.get(i) ?? null })),
          );
        },
      });
      return { upload: upload!, task };
    },

    async status(principal, uploadId) {
      const upload = await findUpload(db, uploadId);
      if (!upload) throw notFound("Upload");
      if (upload.userId !== principal.userId)
        throw new AppError("FORBIDDEN", "This upload belongs to another user");
      const task = await findTask(db, upload.taskId);
      if (!task) throw notFound("Task");
      return { upload, task };
    },
  };
}
