import type { FastifyError } from "fastify";
import { AppError, serviceUnavailable, type ErrorCode, type FieldError } from "../lib/app-error.ts";

/** The one place that decides the HTTP status of every error code. */
export const STATUS_BY_CODE = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  INSUFFICIENT_CREDITS: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  VERIFICATION_TIMEOUT: 408,
  // The spec's 424, "final failure of a downstream dependency", for every dependency code.
  DEPENDENCY_FAILED: 424,
  DEPENDENCY_TIMEOUT: 424,
  DEPENDENCY_UNAVAILABLE: 424,
  DEPENDENCY_RATE_LIMIT: 424,
  RATE_LIMITED: 429,
  SERVICE_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500,
} as const satisfies Record<ErrorCode, number>;

export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: FieldError[]; details_truncated?: number };
  [extra: string]: unknown;
}

/**
 * Most `details` one error response lists; `error.details_truncated` counts the rest. Before this
 * cap a 5 MB body of 2.6 M non-strings answered a 140 MB error listing every item.
 */
export const MAX_ERROR_DETAILS = 20;

export interface MappedError {
  status: number;
  body: ErrorBody;
  headers?: Record<string, string>;
  /** Server faults are logged with their stack; client errors are not. */
  isServerFault: boolean;
  /** The node cannot serve for now (SERVICE_UNAVAILABLE): a warning without a stack, not a fault. */
  isOutage?: boolean;
}

const GENERIC_500 = "An internal error occurred";

/**
 * Retry-After of a request refused because the database does not answer. A restart is over in
 * seconds, a failover in tens of seconds: a client that comes back after 5 s often finds it back,
 * without hammering a node that cannot serve it meanwhile.
 */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

export interface AjvIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** "/emails/3" → "emails[3]"; required/additional-property errors name the property itself. */
function fieldOf(issue: AjvIssue, context: string | undefined): string {
  const parts = issue.instancePath.split("/").slice(1);
  const missing = issue.params.missingProperty ?? issue.params.additionalProperty;
  if (typeof missing === "string") parts.push(missing);
  const path = parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), "");
  return path || (context === "body" ? "body" : (context ?? "request"));
}

function reasonOf(issue: AjvIssue): string {
  switch (issue.keyword) {
    case "required":
      return "is required";
    case "additionalProperties":
      return "is not allowed";
    case "format":
      return `must be a valid ${String(issue.params.format)}`;
    default:
      return issue.message ?? "is invalid";
  }
}

/** One detail per bad field (the first problem found for it). */
function validationDetails(issues: AjvIssue[], context: string | undefined): FieldError[] {
  const seen = new Map<string, FieldError>();
  // A union of literals (purpose, format, source…) fails with one `const` issue per option, the
  // first of which alone reads "must be equal to constant"; name all the options instead.
  const options = new Map<string, unknown[]>();
  for (const issue of issues) {
    const field = fieldOf(issue, context);
    if (!seen.has(field)) seen.set(field, { field, reason: reasonOf(issue) });
    if (issue.keyword === "const")
      options.set(field, [...(options.get(field) ?? []), issue.params.allowedValue]);
  }
  for (const [field, allowed] of options) {
    if (allowed.length > 1)
      seen.set(field, { field, reason: `must be one of ${allowed.map(String).join(", ")}` });
  }
  return [...seen.values()];
}

const body = (
  code: ErrorCode,
  message: string,
  details?: FieldError[],
  extra?: Record<string, unknown>,
): ErrorBody => ({
  ...extra,
  error: { code, message, ...cappedDetails(details) },
});

function cappedDetails(
  details: FieldError[] | undefined,
): Pick<ErrorBody["error"], "details" | "details_truncated"> {
  if (!details || details.length === 0) return {};
  if (details.length <= MAX_ERROR_DETAILS) return { details };
  return {
    details: details.slice(0, MAX_ERROR_DETAILS),
    details_truncated: details.length - MAX_ERROR_DETAILS,
  };
}

/**
 * Maps anything thrown in a request to the spec's error body. `isDatabaseOutage` (the storage
 * adapter's classifier, supplied by the composition root: http/ does not know db/) picks out a
 * database that could not be reached or dropped the connection: 503 SERVICE_UNAVAILABLE with
 * Retry-After, since the same request succeeds once it is back, instead of a 500.
 */
export function mapError(
  error: unknown,
  isDatabaseOutage: (error: unknown) => boolean = () => false,
): MappedError {
  if (!(error instanceof AppError) && isDatabaseOutage(error))
    return mapError(
      serviceUnavailable("The database is not reachable; retry later", DATABASE_RETRY_AFTER_SECONDS),
    );
  if (error instanceof AppError) {
    const status = STATUS_BY_CODE[error.code];
    const isOutage = error.code === "SERVICE_UNAVAILABLE";
    return {
      status,
      body: body(error.code, error.message, error.details, error.options.extra),
      headers: error.options.headers,
      isServerFault: status >= 500 && !isOutage,
      ...(isOutage ? { isOutage } : {}),
    };
  }
  const fe = error as Partial<FastifyError> & { validation?: AjvIssue[]; validationContext?: string };
  if (Array.isArray(fe.validation)) {
    const details = validationDetails(fe.validation, fe.validationContext);
    return {
      status: 400,
      body: body("VALIDATION_ERROR", "Request validation failed", details),
      isServerFault: false,
    };
  }
  switch (fe.code) {
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return clientError(
        fe.code === "FST_ERR_CTP_EMPTY_JSON_BODY" ? "Request body is empty" : "Malformed JSON body",
        "body",
        "must be valid JSON",
      );
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return clientError(
        "Unsupported Content-Type",
        "content-type",
        "must be application/json (multipart/form-data for file uploads)",
      );
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return clientError(
        "Content-Length does not match the body",
        "content-length",
        "must match the body size",
      );
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return clientError("Request body is too large", "body", "exceeds the size limit");
    // Router errors (Fastify's frameworkErrors): the default answers echo the raw path in a
    // non-spec body. A too-long path segment can only be an invalid id, hence 400 like one.
    case "FST_ERR_BAD_URL":
      return clientError("Malformed URL", "url", "must be valid percent-encoded UTF-8");
    case "FST_ERR_MAX_PARAM_LENGTH":
      return clientError("A path segment is too long", "url", "has a path parameter that is too long");
    default:
      break;
  }
  // A JSON SyntaxError raised by the content-type parser carries statusCode 400.
  if (fe.statusCode === 400 && error instanceof SyntaxError) {
    return clientError("Malformed JSON body", "body", "must be valid JSON");
  }
  if (typeof fe.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500) {
    return clientError(fe.message ?? "Bad request", "request", "is invalid");
  }
  return { status: 500, body: body("INTERNAL_ERROR", GENERIC_500), isServerFault: true };
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (the socket's `clientError`):
 * headers over http.maxHeaderSize (Node answers 431 by default), malformed HTTP, a request that
 * did not arrive in time. Answered in the spec's envelope as 400 VALIDATION_ERROR, like an
 * over-limit body, so VALIDATION_ERROR keeps its one status (no 431 or 414 beside it).
 */
export function mapClientError(error: { code?: string }, maxHeaderBytes: number): MappedError {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return clientError(
        "Request headers are too large",
        "headers",
        `must total at most ${maxHeaderBytes} bytes`,
      );
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return clientError(
        "The request did not arrive in time",
        "request",
        "must be sent within the request timeout",
      );
    default:
      return clientError("Malformed HTTP request", "request", "is not a valid HTTP/1.1 request");
  }
}

function clientError(message: string, field: string, reason: string): MappedError {
  return { status: 400, body: body("VALIDATION_ERROR", message, [{ field, reason }]), isServerFault: false };
}
