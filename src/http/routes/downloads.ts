import { once } from "node:events";
import type { Readable } from "node:stream";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { contentDisposition, EXPORT_FORMATS, type ExportFormat } from "../../files/index.ts";
import { isUuid } from "../../lib/ids.ts";
import { validationError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses } from "../schemas/common.ts";
import { documentRequest, TAG } from "../schemas/openapi.ts";
import {
  DownloadParams,
  DownloadParamsDocumented,
  DownloadQuery,
  DownloadQueryDocumented,
  DownloadReply,
  statusFilterOf,
} from "../schemas/downloads.ts";

/**
 * Waits until the body has its first bytes (or has ended) before any header is sent: a writer
 * that fails that early still gets the ordinary error envelope, not an attachment header over a
 * JSON body. Once bytes are out the status line is gone; a failure after that makes Fastify
 * destroy the connection, so the client sees a truncated chunked response (no terminating
 * chunk), never a short file that looks complete. The failure is logged, not sent.
 */
async function started(body: Readable): Promise<Readable> {
  // Kept for the stream's life: Fastify's own listener is only added by send().
  body.on("error", () => undefined);
  if (body.readableLength === 0 && !body.readableEnded) {
    await Promise.race([once(body, "readable"), once(body, "end")]);
  }
  if (body.errored) throw body.errored;
  return body;
}

export const downloadRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get(
    "/api/v1/tasks/:id/download",
    {
      schema: {
        operationId: "downloadTaskResults",
        summary: "Download a task's results",
        description:
          "The results file (an attachment): csv and xlsx have a header row (a file-backed task's original columns, then the result columns), txt is `email,status` per line. Cells starting with = + - @ TAB or CR are neutralised unless escape_formulas=false. Another user's task is a 403.",
        tags: [TAG.tasks],
        params: DownloadParams,
        querystring: DownloadQuery,
        response: { 200: DownloadReply, ...errorResponses(400, 401, 403, 404, 429, 500) },
      },
      config: {
        swaggerTransform: documentRequest({
          params: DownloadParamsDocumented,
          querystring: DownloadQueryDocumented,
        }),
      },
    },
    async (req, reply) => {
      const id = req.query.task_id ?? req.params.id;
      if (!isUuid(id)) {
        throw validationError("Invalid task id", [
          { field: req.query.task_id ? "task_id" : "id", reason: "must be a UUID" },
        ]);
      }
      // Exactly the document's enum (the spec lists csv, txt, xlsx): `CSV` is a 400, as a
      // generated client's validation would refuse it before sending.
      const format = req.query.format ?? "csv";
      if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
        throw validationError("Invalid format", [
          { field: "format", reason: "must be one of csv, txt, xlsx" },
        ]);
      }
      const download = await deps.tasks.prepareDownload(principalOf(req), id.toLowerCase(), {
        format: format as ExportFormat,
        statuses: statusFilterOf(req.query.status),
        escapeFormulas: req.query.escape_formulas !== false,
      });
      const body = await started(download.body);
      return reply
        .header("content-type", download.contentType)
        .header("content-disposition", contentDisposition(download.filename))
        .header("cache-control", "no-store")
        .send(body);
    },
  );
};
