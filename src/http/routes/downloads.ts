import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Services } from "../../app/services.ts";
import { contentDisposition, EXPORT_FORMATS, type ExportFormat } from "../../files/index.ts";
import { isUuid } from "../../lib/ids.ts";
import { validationError } from "../../lib/app-error.ts";
import { prepareDownload } from "../../tasks/export-task.ts";
import { VERIFICATION_STATUSES, type VerificationStatus } from "../../verify/index.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses } from "../schemas/common.ts";

const DownloadQuery = Type.Object({
  format: Type.Optional(Type.String({ description: "csv (default), txt or xlsx" })),
  task_id: Type.Optional(Type.String({ description: "UUID; overrides the path id" })),
  status: Type.Optional(
    Type.String({ description: "Comma-separated statuses to keep, e.g. valid,catchall" }),
  ),
  escape_formulas: Type.Optional(
    Type.Boolean({
      default: true,
      description: "Prefix cells starting with = + - @ TAB CR with ' (set false for machine use)",
    }),
  ),
});

function readStatuses(raw: string | undefined): Set<VerificationStatus> | null {
  if (raw === undefined || raw.trim() === "") return null;
  const wanted = raw.split(",").map((s) => s.trim().toLowerCase());
  const unknown = wanted.filter((s) => !(VERIFICATION_STATUSES as readonly string[]).includes(s));
  if (unknown.length > 0) {
    throw validationError("Invalid status filter", [
      {
        field: "status",
        reason: `unknown status ${unknown.join(", ")}; use ${VERIFICATION_STATUSES.join(", ")}`,
      },
    ]);
  }
  return new Set(wanted as VerificationStatus[]);
}

export const downloadRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (
  app,
  { services },
) => {
  app.get(
    "/api/v1/tasks/:id/download",
    {
      schema: {
        tags: ["tasks"],
        params: Type.Object({ id: Type.String() }),
        querystring: DownloadQuery,
        produces: [
          "text/csv",
          "text/plain",
          "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ],
        response: {
          200: Type.Unsafe<NodeJS.ReadableStream>({
            type: "string",
            format: "binary",
            description: "The results file",
          }),
          ...errorResponses(400, 401, 403, 404, 429, 500),
        },
      },
    },
    async (req, reply) => {
      const id = req.query.task_id ?? req.params.id;
      if (!isUuid(id)) {
        throw validationError("Invalid task id", [
          { field: req.query.task_id ? "task_id" : "id", reason: "must be a UUID" },
        ]);
      }
      const format = (req.query.format ?? "csv").toLowerCase();
      if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
        throw validationError("Invalid format", [
          { field: "format", reason: "must be one of csv, txt, xlsx" },
        ]);
      }
      const download = await prepareDownload(services.db, principalOf(req), id.toLowerCase(), {
        format: format as ExportFormat,
        statuses: readStatuses(req.query.status),
        escapeFormulas: req.query.escape_formulas !== false,
      });
      return reply
        .header("content-type", download.contentType)
        .header("content-disposition", contentDisposition(download.filename))
        .header("cache-control", "no-store")
        .send(download.body);
    },
  );
};
