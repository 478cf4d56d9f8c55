import multipart, { type Multipart } from "@fastify/multipart";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Principal } from "../../auth/principal.ts";
import type { UploadTicket } from "../../uploads/admission.ts";
import { AppError, validationError } from "../../lib/app-error.ts";
import { unstorableTextReason } from "../../lib/storable-text.ts";
import { readRetryWindowField } from "../../tasks/task-input.ts";
import type { HttpDeps } from "../deps.ts";
import { idempotencyKeyOf } from "../idempotency-key.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses, NoQuery, ref } from "../schemas/common.ts";
import { CreateQuery, dryRunMoved, toUploadQuoteReply, UploadQuoteReply } from "../schemas/quote.ts";
import { documentRequest, TAG } from "../schemas/openapi.ts";
import { createdOrRefused } from "../task-denials.ts";
import { checkWebhookUrl, IdempotencyHeaders } from "../schemas/tasks.ts";
import {
  toUploadAccepted,
  toUploadDetail,
  UploadAccepted,
  UploadForm,
  UploadParams,
  UploadDetail,
} from "../schemas/uploads.ts";

/** The multipart body as read off the wire; `UploadForm` (schemas/uploads.ts) is its documented shape. */
interface ReceivedForm {
  file: { filename: string; data: Buffer } | null;
  fields: Map<string, string>;
}

const MULTIPART_ERRORS: Record<string, [field: string, reason: string]> = {
  FST_INVALID_MULTIPART_CONTENT_TYPE: ["content-type", "must be multipart/form-data"],
  FST_FILES_LIMIT: ["file", "send exactly one file"],
  FST_PARTS_LIMIT: ["body", "has too many parts"],
  FST_FIELDS_LIMIT: ["body", "has too many fields"],
};

/**
 * Multipart parts bypass the JSON input guard (plugins/input-guard.ts), so the same rule is
 * applied here: a NUL or an unpaired surrogate in a field name, the file name or a field value is
 * a 400 naming it (a NUL in the file name used to reach the database: 500).
 */
function unstorablePartProblem(part: Multipart): AppError | null {
  const nameReason = unstorableTextReason(part.fieldname);
  if (nameReason)
    return validationError("Invalid characters in a form field name", [
      { field: "body", reason: `has a form field name that ${nameReason}` },
    ]);
  const [field, text] =
    part.type === "file" ? ["filename", part.filename] : [part.fieldname, String(part.value)];
  const reason = unstorableTextReason(text);
  return reason ? validationError(`Invalid characters in ${field}`, [{ field, reason }]) : null;
}

/** Reads the whole form; the file is buffered (bounded by MAX_UPLOAD_BYTES) because it must be validated before 202. */
async function readForm(req: FastifyRequest, maxBytes: number): Promise<ReceivedForm> {
  const form: ReceivedForm = { file: null, fields: new Map() };
  try {
    for await (const part of req.parts()) {
      const problem = unstorablePartProblem(part);
      if (problem) {
        if (part.type === "file") await part.toBuffer().catch(() => undefined);
        throw problem;
      }
      if (part.type === "file") {
        if (part.fieldname !== "file" || form.file) {
          await part.toBuffer().catch(() => undefined);
          throw validationError("Send one file in the field named file", [
            { field: part.fieldname, reason: "unexpected file field" },
          ]);
        }
        form.file = { filename: part.filename, data: await part.toBuffer() };
      } else {
        form.fields.set(part.fieldname, String(part.value));
      }
    }
  } catch (error) {
    const code = (error as { code?: string }).code ?? "";
    if (code === "FST_REQ_FILE_TOO_LARGE") {
      throw validationError(`The file is larger than ${maxBytes} bytes`, [
        { field: "file", reason: `must be at most ${maxBytes} bytes (MAX_UPLOAD_BYTES)` },
      ]);
    }
    const known = MULTIPART_ERRORS[code];
    if (known) throw validationError("Invalid multipart upload", [{ field: known[0], reason: known[1] }]);
    if (error instanceof AppError) throw error;
    // Nothing but parsing happens here: busboy's own errors ("Multipart: Boundary not found",
    // "Unexpected end of multipart data") carry no code and mean a malformed request body.
    const message = error instanceof Error ? error.message : String(error);
    const noBoundary = /boundary/i.test(message);
    throw validationError("Malformed multipart/form-data body", [
      noBoundary
        ? { field: "content-type", reason: "must name the multipart boundary" }
        : { field: "body", reason: "is not a complete multipart/form-data body" },
    ]);
  }
  return form;
}

/** Reads the rest of the request's body and drops it (bounded by the server's request timeout). */
async function discardBody(req: FastifyRequest): Promise<void> {
  const raw = req.raw;
  if (raw.complete || raw.destroyed) return;
  raw.resume();
  await new Promise<void>((resolve) => {
    raw.once("end", resolve);
    raw.once("close", resolve);
    raw.once("error", resolve);
  });
}

export const uploadRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  const maxBytes = deps.settings.maxUploadBytes;
  await app.register(multipart, {
    limits: { fileSize: maxBytes, files: 1, fields: 10, fieldSize: 4096, parts: 12, headerPairs: 100 },
  });

  type Mode = "upload" | "quote";

  /**
   * Both operations take the same form through the same steps (admission, reading, checks), so
   * a file the upload would refuse is refused by its quote with the same error; only the last
   * step differs.
   */
  const receive = async (req: FastifyRequest, reply: FastifyReply, mode: Mode, dryRun?: string) => {
    const principal = principalOf(req);
    const idempotencyKey = idempotencyKeyOf(req.headers["idempotency-key"]);
    // Decided before the body is buffered: a refused upload costs neither memory nor a parse.
    // Its body is still read (and dropped) before the answer, so a client still writing its
    // file gets the 429/503 with Retry-After instead of a reset connection (EPIPE in fetch).
    let ticket;
    try {
      if (dryRun !== undefined) throw dryRunMoved("upload");
      ticket = deps.uploads.admit(principal);
    } catch (error) {
      await discardBody(req);
      throw error;
    }
    try {
      return await acceptUpload(req, reply, principal, { idempotencyKey, ticket, mode });
    } finally {
      ticket.release();
    }
  };

  app.post(
    "/api/v1/tasks/batch/upload",
    {
      schema: {
        operationId: "uploadTaskFile",
        summary: "Upload a list file",
        description:
          "Creates a batch task from a .txt, .csv or .xlsx list of at most 10,000 addresses. The file is parsed and checked before the 202; one credit per distinct address is reserved, and the credits of `unknown` results are refunded when the task finishes. Rows without an address are skipped and counted. A `user_id` field is refused. The price of the same form, without creating anything, is `POST /api/v1/tasks/batch/upload/quote`; `dry_run` (a query parameter or a form field) here is a 400 naming it.",
        tags: [TAG.uploads],
        consumes: ["multipart/form-data"],
        querystring: CreateQuery,
        response: {
          202: ref(UploadAccepted, "The upload, accepted: its task is queued"),
          ...errorResponses(400, 401, 402, 404, 409, 429, 500),
        },
      },
      // The handler reads the parts and Idempotency-Key itself; only the document describes them.
      config: {
        swaggerTransform: documentRequest({
          body: UploadForm,
          headers: IdempotencyHeaders,
          querystring: NoQuery,
        }),
      },
    },
    (req, reply) => receive(req, reply, "upload", req.query.dry_run),
  );

  app.post(
    "/api/v1/tasks/batch/upload/quote",
    {
      schema: {
        operationId: "quoteUploadTaskFile",
        summary: "Price a list file",
        description:
          "What `POST /api/v1/tasks/batch/upload` would do with the same form: the file is parsed and checked the same way (the same 400s) and the answer is the counts, the sheet and column it would read, the credits it would reserve and the balance. Nothing is created or stored, and too little credit is not an error here (`has_enough_credits: false`); the upload would answer 402. An `Idempotency-Key` header is checked but neither recorded nor replayed. A quote holds an upload place while its file arrives and is parsed, as an upload does (429/503 with Retry-After when the caller or the server is at its limit).",
        tags: [TAG.uploads],
        consumes: ["multipart/form-data"],
        querystring: NoQuery,
        response: {
          200: ref(UploadQuoteReply, "What the upload would count and cost"),
          ...errorResponses(400, 401, 404, 429, 500),
        },
      },
      config: { swaggerTransform: documentRequest({ body: UploadForm }) },
    },
    (req, reply) => receive(req, reply, "quote"),
  );

  const acceptUpload = async (
    req: FastifyRequest,
    reply: FastifyReply,
    principal: Principal,
    request: { idempotencyKey: string | null; ticket: UploadTicket; mode: Mode },
  ) => {
    const { idempotencyKey, ticket, mode } = request;
    const form = await readForm(req, maxBytes);
    if (mode === "upload" && form.fields.has("dry_run")) throw dryRunMoved("upload");
    if (form.fields.has("user_id")) {
      throw validationError("user_id is not accepted: the owner is the authenticated caller", [
        { field: "user_id", reason: "is not allowed" },
      ]);
    }
    if (!form.file) throw validationError("No file uploaded", [{ field: "file", reason: "is required" }]);
    const webhookUrl = checkWebhookUrl(form.fields.get("webhook_url"), deps.settings.allowPrivateWebhooks);
    const columnField = form.fields.has("email_column") ? "email_column" : "column";
    const column = form.fields.get(columnField);
    const input = {
      filename: form.file.filename,
      data: form.file.data,
      emailColumn: column === undefined || column.trim() === "" ? null : column.trim(),
      columnField,
      sheet: form.fields.get("sheet")?.trim() || null,
      webhookUrl,
      retryWindowMinutes: readRetryWindowField(
        form.fields.get("retry_window_minutes"),
        deps.settings.taskRetryWindowMinutes,
      ),
      idempotencyKey,
    };
    if (mode === "quote") {
      const quote = await deps.uploads.quote(principal, input, ticket);
      return reply.status(200).send(toUploadQuoteReply(input.filename, quote));
    }
    const created = createdOrRefused(await deps.uploads.upload(principal, input));
    return reply.status(202).send(toUploadAccepted(created));
  };

  app.get(
    "/api/v1/tasks/batch/uploads/:upload_id",
    {
      schema: {
        operationId: "getUpload",
        summary: "Get an upload's status",
        description: "The upload and its task. Another user's upload is a 403.",
        tags: [TAG.uploads],
        params: UploadParams,
        response: {
          200: ref(UploadDetail, "The upload"),
          ...errorResponses(400, 401, 403, 404, 429, 500),
        },
      },
    },
    async (req) => toUploadDetail(await deps.uploads.status(principalOf(req), req.params.upload_id)),
  );
};
