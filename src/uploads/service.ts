import { createHash } from "node:crypto";
import type { Principal } from "../auth/principal.ts";
import type { Database, Queryable } from "../db/client.ts";
import { findTask, type TaskRecord } from "../db/queries/tasks.ts";
import {
  findUpload,
  findUploadIdOfTask,
  insertUpload,
  insertUploadRowBlock,
  insertUploadWorkbook,
  storedUploadBytesOf,
  type UploadRecord,
  type UploadWorkbook,
} from "../db/queries/uploads.ts";
import { DEFAULT_MAX_TEXT_CHARS, type ListParser, type PackedList } from "../files/index.ts";
import { AppError, notFound, validationError } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import { yieldToEventLoop } from "../lib/sleep.ts";
import { isCreditsShort, type TaskCreditsShort } from "../tasks/billing.ts";
import { createTask, findIdempotentReplay, quoteTask, type TaskQuote } from "../tasks/create-task.ts";
import type { UploadTicket, UploadAdmission } from "./admission.ts";
import { MAX_TASK_EMAILS } from "../tasks/task-input.ts";
import type { Engine } from "../verify/index.ts";

export type { UploadRecord };

export interface UploadInput {
  filename: string;
  data: Buffer;
  emailColumn: string | null;
  /** The form field that named the column (`email_column` or its alias `column`), for error details. */
  columnField?: string;
  /** xlsx: the sheet holding the list; null lets the parser choose (files/parse/sheet-choice.ts). */
  sheet?: string | null;
  webhookUrl: string | null;
  /** Minutes after its start during which the task retries deferred addresses. */
  retryWindowMinutes: number;
  /** Makes a retry safe: the same key and the same request return the first upload, billed once. */
  idempotencyKey: string | null;
}

/** An upload and the task it created (or, replayed, the ones an earlier request created). */
export interface UploadCreated {
  upload: UploadRecord;
  task: TaskRecord;
  replayed: boolean;
}

export interface UploadsService {
  /**
   * A place among the uploads in progress, taken before the body is read; throws 429 (this user
   * has too many) or 503 (this process has too many), both with Retry-After.
   */
  admit(principal: Principal): UploadTicket;
  /** Uploads holding a place now, this process. */
  readonly inProgress: number;
  /** Parses and validates the file, then creates the task, its jobs, the reservation and the upload in one transaction. */
  upload(principal: Principal, input: UploadInput): Promise<UploadCreated | TaskCreditsShort>;
  status(principal: Principal, uploadId: string): Promise<{ upload: UploadRecord; task: TaskRecord }>;
  /**
   * A dry run of `upload`: the same parse, checks and counts, the price and the balance; creates
   * nothing. `ticket` is released as soon as the file is parsed: reading the balance holds no place.
   */
  quote(principal: Principal, input: UploadInput, ticket: UploadTicket): Promise<UploadQuote>;
}

/** What uploading a file would count and cost (DESIGN §5: dry runs create nothing). */
export interface UploadQuote extends TaskQuote {
  /** Rows whose email cell is blank or not an address. */
  skippedCount: number;
  /** xlsx: the sheet the list was read from; null for csv and txt. */
  sheet: string | null;
  /** The email column's header, or `column N`. */
  emailColumn: string;
}

/**
 * The rows an upload turns into a task: every address-shaped cell, duplicates included (the task
 * dedupes; DESIGN §5); RFC-invalid ones become `invalid_syntax` jobs, as in a JSON task. The
 * other rows are skipped.
 */
function submittedOf(list: PackedList): { submitted: string[]; skippedCount: number } {
  const submitted = list.rowEmails.filter((email): email is string => email !== null);
  return { submitted, skippedCount: list.rowCount - submitted.length };
}

/** What an xlsx upload keeps of its file: all of it, and which sheet held the list. */
const workbookOf = (list: PackedList, input: UploadInput): UploadWorkbook | null =>
  list.format === "xlsx" && list.sheetName !== undefined
    ? { sheetName: list.sheetName, data: input.data }
    : null;

const IDEMPOTENCY_SCOPE = "uploads.create";

const MIB = 1024 * 1024;
const mib = (bytes: number): string => (bytes / MIB).toFixed(1);

/**
 * The user's storage budget (docs/storage.md): the rows of the uploads they keep, this one
 * included, within UPLOAD_STORAGE_PER_USER_MB. Refused with CONFLICT: retrying does not help,
 * deleting finished tasks (or their retention) does.
 */
async function assertStorageRoom(
  tx: Queryable,
  userId: string,
  adding: number,
  budget: number,
): Promise<void> {
  const kept = await storedUploadBytesOf(tx, userId);
  if (kept + adding <= budget) return;
  throw new AppError(
    "CONFLICT",
    `Your uploaded lists take ${mib(kept)} MiB and this one ${mib(adding)} MiB, more than the ${mib(budget)} MiB a user may keep. Delete finished tasks you no longer need (DELETE /api/v1/tasks/{id}), then upload again.`,
    [{ field: "file", reason: "storage_budget_exceeded" }],
  );
}

/** Everything that decides what an upload creates: the file's bytes and the form's fields. */
function requestHashOf(input: UploadInput): string {
  const hash = createHash("sha256");
  const window = String(input.retryWindowMinutes);
  // The sheet only when given, so that a request without one hashes as it did before the field.
  const sheet = input.sheet ? [input.sheet] : [];
  for (const part of [input.filename, input.emailColumn ?? "", input.webhookUrl ?? "", window, ...sheet]) {
    hash.update(String(part.length)).update(":").update(part);
  }
  return hash.update(input.data).digest("hex");
}

interface StoredUpload {
  principal: Principal;
  input: UploadInput;
  list: PackedList;
  submitted: readonly string[];
  skippedCount: number;
  created: { id: string; emailCount: number; createdAt: Date };
  /** UPLOAD_STORAGE_PER_USER_MB in bytes. */
  budget: number;
}

/**
 * In the transaction that creates the task, the upload's original rows are kept so results can be
 * written back beside them on download, and a workbook itself, so its xlsx download is that
 * workbook (docs/api.md, "An xlsx upload comes back as your workbook").
 */
async function storeUpload(tx: Queryable, u: StoredUpload): Promise<UploadRecord> {
  const { principal, input, list, created } = u;
  const workbook = workbookOf(list, input);
  const storedBytes = list.storedBytes + (workbook?.data.byteLength ?? 0);
  // Under the user's lock (createTask took it): two uploads at once cannot both fit.
  await assertStorageRoom(tx, principal.userId, storedBytes, u.budget);
  const upload = await insertUpload(tx, {
    id: newId(),
    userId: principal.userId,
    taskId: created.id,
    filename: input.filename,
    format: list.format,
    emailCount: created.emailCount,
    submittedCount: u.submitted.length,
    skippedCount: u.skippedCount,
    header: list.header,
    emailColumn: list.emailColumn,
    columnCount: list.columnCount,
    createdAt: created.createdAt,
    storedBytes,
  });
  if (workbook) await insertUploadWorkbook(tx, upload.id, workbook);
  // One short statement per block, the event loop free in between (pack-list.ts).
  for (const block of list.blocks) {
    await insertUploadRowBlock(tx, upload.id, block);
    await yieldToEventLoop();
  }
  return upload;
}

export interface UploadsServiceOptions {
  admission: UploadAdmission;
  /** MAX_UPLOAD_BYTES: the text a file may hold is bounded in proportion. */
  maxUploadBytes: number;
  /** UPLOAD_STORAGE_PER_USER_MB in bytes: what one user's kept uploads may take together. */
  storagePerUserBytes: number;
}

export function createUploadsService(
  db: Database,
  clock: Clock,
  engine: Pick<Engine, "checkSyntax">,
  parser: Pick<ListParser, "parse">,
  options: UploadsServiceOptions,
): UploadsService {
  // A csv holds at most one character per byte; a workbook's text expands, and twice the size
  // allowed for the file keeps an operator's larger MAX_UPLOAD_BYTES meaningful for it too.
  const maxTextChars = Math.max(DEFAULT_MAX_TEXT_CHARS, 2 * options.maxUploadBytes);
  const parseList = async (input: UploadInput): Promise<PackedList> => {
    const parsed = await parser.parse({
      filename: input.filename,
      data: input.data,
      emailColumn: input.emailColumn,
      sheet: input.sheet ?? null,
      maxEmails: MAX_TASK_EMAILS,
      maxTextChars,
    });
    if (!parsed.ok) {
      throw validationError(parsed.problem.message, [
        { field: parsed.problem.field, reason: parsed.problem.message },
      ]);
    }
    return parsed.list;
  };
  const replayOf = async (taskId: string) => {
    const task = await findTask(db, taskId);
    const uploadId = task ? await findUploadIdOfTask(db, task.id) : null;
    const upload = uploadId ? await findUpload(db, uploadId) : null;
    return task && upload ? { upload, task, replayed: true } : null;
  };
  return {
    get inProgress() {
      return options.admission.inProgress;
    },
    admit(principal) {
      const admission = options.admission.enter(principal.userId);
      if (!admission.ok) throw admission.error;
      return admission.ticket;
    },

    async upload(principal, input) {
      const requestHash = input.idempotencyKey ? requestHashOf(input) : null;
      if (input.idempotencyKey && requestHash) {
        // A retry is answered before its file is parsed again; the key is checked once more
        // inside the creating transaction, under the user's lock, for retries that race.
        const prior = await findIdempotentReplay(db, clock, principal, {
          scope: IDEMPOTENCY_SCOPE,
          key: input.idempotencyKey,
          requestHash,
        });
        const replay = prior ? await replayOf(prior) : null;
        if (replay) return replay;
      }
      const list = await parseList(input);
      let upload: UploadRecord | null = null;
      const { submitted, skippedCount } = submittedOf(list);
      const created = await createTask(db, clock, engine, principal, {
        emails: submitted,
        webhookUrl: input.webhookUrl,
        retryWindowMinutes: input.retryWindowMinutes,
        idempotencyKey: input.idempotencyKey,
        ...(requestHash ? { idempotency: { scope: IDEMPOTENCY_SCOPE, requestHash } } : {}),
        isFileBacked: true,
        // The original rows are kept so results can be written back beside them on download,
        // and a workbook itself, so its xlsx download is that workbook (docs/api.md, "An xlsx upload comes back as your workbook").
        attach: async (tx, created) => {
          const budget = options.storagePerUserBytes;
          upload = await storeUpload(tx, {
            principal,
            input,
            list,
            submitted,
            skippedCount,
            created,
            budget,
          });
        },
      });
      if (isCreditsShort(created)) return created;
      const { task, replayed } = created;
      if (replayed) {
        const replay = await replayOf(task.id);
        if (replay) return replay;
      }
      return { upload: upload!, task, replayed: false };
    },

    async quote(principal, input, ticket) {
      let list: PackedList;
      try {
        list = await parseList(input);
      } finally {
        ticket.release();
      }
      const { submitted, skippedCount } = submittedOf(list);
      const emailColumn = list.header?.[list.emailColumn]?.trim() || `column ${String(list.emailColumn + 1)}`;
      return {
        ...(await quoteTask(db, engine, principal, submitted)),
        skippedCount,
        sheet: list.sheetName ?? null,
        emailColumn,
      };
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
