// The closed set of error codes the API answers with. The HTTP status of each code is decided in
// one place (http/errors.ts); domain modules throw AppError without knowing about HTTP.

export const ERROR_CODES = [
  "VALIDATION_ERROR",
  "UNAUTHORIZED",
  "INSUFFICIENT_CREDITS",
  "FORBIDDEN",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "CONFLICT",
  "VERIFICATION_TIMEOUT",
  "DEPENDENCY_FAILED",
  "DEPENDENCY_TIMEOUT",
  "DEPENDENCY_UNAVAILABLE",
  "DEPENDENCY_RATE_LIMIT",
  "RATE_LIMITED",
  "SERVICE_UNAVAILABLE",
  "INTERNAL_ERROR",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** One failing field of a request, as the spec's `details` element. */
export interface FieldError {
  field: string;
  reason: string;
}

export interface AppErrorOptions {
  /** Extra top-level members of the error response (e.g. the 408 partial `result`). */
  extra?: Record<string, unknown>;
  /** Response headers that belong to the error (e.g. Retry-After on 429). */
  headers?: Record<string, string>;
}

export class AppError extends Error {
  override name = "AppError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: FieldError[],
    readonly options: AppErrorOptions = {},
  ) {
    super(message);
  }
}

export const rateLimited = (retryAfterSeconds: number): AppError =>
  new AppError("RATE_LIMITED", "Too many requests, retry later", undefined, {
    headers: { "retry-after": String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });

/**
 * This node cannot take the request now, through no fault of the request: its database does not
 * answer, or its data directory is nearly full. 503 with Retry-After: the client retries the
 * same request later (with its Idempotency-Key where the endpoint takes one).
 */
export const serviceUnavailable = (message: string, retryAfterSeconds: number): AppError =>
  new AppError("SERVICE_UNAVAILABLE", message, undefined, {
    headers: { "retry-after": String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });

/**
 * One of our own dependencies (DNS resolvers, SOCKS proxy) failed after its retries: the spec's
 * 424 with DEPENDENCY_TIMEOUT, DEPENDENCY_UNAVAILABLE or DEPENDENCY_RATE_LIMIT. Nothing was charged.
 */
export const dependencyFailed = (failure: {
  dependency: "dns_resolver" | "smtp_proxy";
  kind: "timeout" | "unavailable" | "rate_limit";
  detail: string;
}): AppError =>
  new AppError(
    failure.kind === "timeout"
      ? "DEPENDENCY_TIMEOUT"
      : failure.kind === "rate_limit"
        ? "DEPENDENCY_RATE_LIMIT"
        : "DEPENDENCY_UNAVAILABLE",
    `The verification could not run: ${failure.detail}. Nothing was charged; retry later.`,
  );

export const validationError = (message: string, details?: FieldError[]): AppError =>
  new AppError("VALIDATION_ERROR", message, details);

export const notFound = (what: string): AppError => new AppError("NOT_FOUND", `${what} not found`);

export const forbidden = (message: string): AppError => new AppError("FORBIDDEN", message);

export const conflict = (message: string): AppError => new AppError("CONFLICT", message);
