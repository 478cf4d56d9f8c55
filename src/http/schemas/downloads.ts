import { Type } from "typebox";
import { contentTypeFor, EXPORT_FORMATS } from "../../files/index.ts";
import { validationError } from "../../lib/app-error.ts";
import { VERIFICATION_STATUSES, type VerificationStatus } from "../../verify/index.ts";
import { documented, StringEnum } from "./common.ts";

// The id is checked in the handler, not by the schema: `task_id` in the query overrides it, and
// each names its own field in the VALIDATION_ERROR.
export const DownloadParams = Type.Object({ id: Type.String() });

export const DownloadQuery = Type.Object(
  {
    format: Type.Optional(Type.String({ description: "csv (default), txt or xlsx, in lower case" })),
    task_id: Type.Optional(Type.String({ description: "UUID; overrides the path id" })),
    status: Type.Optional(
      Type.String({ description: "Comma-separated statuses to keep, e.g. valid,catchall" }),
    ),
    escape_formulas: Type.Optional(
      Type.Boolean({
        default: true,
        description:
          "csv/txt: prefix with ' the cells a spreadsheet would evaluate: starting with = @ TAB CR, or with + or - unless a number or phone number follows (set false for machine use; xlsx never escapes)",
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * The parameters as the document states them: the handler checks each (an id, then `format`,
 * exactly as the enum lists it), naming the field in its own words and letting `task_id` override the
 * path id, so Fastify validates the plain strings above.
 */
export const DownloadParamsDocumented = documented(DownloadParams, {
  id: Type.String({ format: "uuid", description: "The task's id" }),
});
export const DownloadQueryDocumented = documented(DownloadQuery, {
  format: StringEnum(EXPORT_FORMATS, "The file format (default csv), in lower case as listed"),
  task_id: Type.String({ format: "uuid", description: "Overrides the path id" }),
});

const FileBody = Type.Unsafe<NodeJS.ReadableStream>({ type: "string", format: "binary" });

/**
 * The 200 of a download: `application/octet-stream` first, then a file body per format's media
 * type (csv → text/csv, txt → text/plain, xlsx → the spreadsheetml type; the Content-Type header
 * adds `charset=utf-8` to the text ones). Generators read the body as the first media type they
 * know: a `text/*` one first made openapi-python-client decode the file as text and then fail to
 * wrap it as bytes, and @hey-api/openapi-ts parse it as text; octet-stream makes both return the
 * bytes, whichever format was asked for. A body per media type keeps the route's error responses
 * in JSON in the document; the handler streams the file, so none of these schemas serialises
 * anything.
 */
export const DownloadReply = {
  description:
    "The results file, as an attachment. The Content-Type header names its format (text/csv, text/plain or the xlsx type, as listed); `application/octet-stream` stands for any of them read as bytes.",
  headers: {
    "Content-Disposition": {
      type: "string",
      description: "`attachment; filename=\"<ascii name>\"; filename*=UTF-8''<name>`",
    },
  },
  content: Object.fromEntries([
    ["application/octet-stream", { schema: FileBody }],
    ...EXPORT_FORMATS.map((f) => [contentTypeFor(f).split(";")[0]!, { schema: FileBody }]),
  ]) as Record<string, { schema: typeof FileBody }>,
};

/** `?status=valid,catchall` → the statuses to keep; null keeps every row. */
export function statusFilterOf(raw: string | undefined): Set<VerificationStatus> | null {
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
