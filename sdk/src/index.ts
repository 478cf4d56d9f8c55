// @mailprobe/client: a typed client for the mailprobe API. The types come from the server's
// OpenAPI document (schema.ts, `npm run generate:sdk`); the HTTP calls are openapi-fetch's. This
// module uses web-platform globals only (fetch, FormData, Headers), so it runs in browsers and on
// Node 22 unchanged; the webhook helper lives in "@mailprobe/client/webhooks".
import createClient from "openapi-fetch";
import type { Client, Middleware } from "openapi-fetch";
// ".js" specifiers (resolved to the .ts sources by tsc, tsx and Vite) keep the emitted
// declarations importable by consumers on any moduleResolution.
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";

type Schemas = components["schemas"];

// The resources, named once: aliases of the document's components, so a renamed component is a
// one-line change here and nowhere else.
/** One verification result (POST /api/v1/verify; `email` of a job). */
export type VerificationResult = Schemas["VerificationResult"];
/** A task as GET /api/v1/tasks/{id} returns it (the `TaskDetail` component). */
export type Task = Schemas["TaskDetail"];
/** The answer to POST /api/v1/tasks (counts of submitted, unique and queued addresses). */
export type CreatedTask = Schemas["CreatedTask"];
/** The price of a task: POST /api/v1/tasks/quote (counts, credits required, balance; nothing created). */
export type TaskQuote = Schemas["TaskQuote"];
/** One element of GET /api/v1/tasks. */
export type TaskSummary = Schemas["TaskSummary"];
/** Aggregated progress and verdict counts of a task (also the webhook's `data.metrics`). */
export type TaskMetrics = Schemas["TaskMetrics"];
/** One email job of GET /api/v1/tasks/{id}/jobs. */
export type Job = Schemas["Job"];
/** The answer to a file upload (202). */
export type Upload = Schemas["Upload"];
/** The price of a list file: POST /api/v1/tasks/batch/upload/quote (also the sheet and column it would read). */
export type UploadQuote = Schemas["UploadQuote"];
/**
 * An upload as GET /api/v1/tasks/batch/uploads/{upload_id} shows it (the `UploadDetail` component).
 * Read from the operation, so the alias holds whatever the component is named.
 */
export type UploadDetail =
  paths["/api/v1/tasks/batch/uploads/{upload_id}"]["get"]["responses"][200]["content"]["application/json"];
/** Where an upload stands: `processing` until its task finishes, then `completed` (or `failed`, `cancelled`). */
export type UploadStatus = UploadDetail["status"];
/** One credit transaction (signed `amount`, exact `balance_after`). */
export type CreditTransaction = Schemas["CreditTransaction"];
/** An API key as listed (the plaintext `key` only with `reveal=true`). */
export type ApiKey = Schemas["ApiKey"];
/** A newly created API key, with its plaintext `key` (shown this once). */
export type CreatedApiKey = Schemas["CreatedApiKey"];
/** What a key is for: integration keys (zapier, n8n, google sheets) or `custom`. */
export type ApiKeyPurpose = ApiKey["purpose"];
/** A dashboard session: a JWT to send as `Authorization: Bearer`. */
export type Session = Schemas["Session"];
/** The body of the `task.completed` webhook. */
export type TaskCompletedEvent = Schemas["TaskCompletedEvent"];
/** One entry of the webhook log (GET /api/v1/webhooks/deliveries): a task.completed event or a ping. */
export type WebhookDelivery = Schemas["WebhookDelivery"];
/** The spec's error body: `{ error: { code, message, details? } }` (+ `result` on a 408). */
export type ErrorBody = Schemas["ErrorResponse"];
/** The body of a 408 VERIFICATION_TIMEOUT: the error envelope plus `result`, the partial result. */
export type VerificationTimeoutBody = Schemas["VerificationTimeoutError"];
/** The closed set of error codes; each has one HTTP status. */
export type ErrorCode = ErrorBody["error"]["code"];
/** One failing field of a request. */
export type FieldError = NonNullable<ErrorBody["error"]["details"]>[number];

/** Supplies the bearer token per request (e.g. read from the dashboard's session store). */
export type TokenGetter = () => string | null | undefined | Promise<string | null | undefined>;

export interface MailprobeClientOptions {
  /** Where the server answers, without `/api/v1` (e.g. "https://verify.example.com"). */
  baseUrl: string;
  /** An API key, sent as `X-API-Key` when no bearer token is set. */
  apiKey?: string;
  /** A session JWT (or a getter for one), sent as `Authorization: Bearer`; wins over `apiKey`. */
  token?: string | TokenGetter;
  /** A fetch implementation (defaults to the global one). */
  fetch?: typeof globalThis.fetch;
}

export interface MailprobeClient extends Client<paths> {
  /** Replace the bearer token (null: fall back to the API key). */
  setToken(token: string | TokenGetter | null): void;
  /**
   * Exchanges the client's API key for a session JWT (POST /api/v1/auth/session) and uses it from
   * then on. Only `custom` keys may open sessions; integration keys get 403 FORBIDDEN.
   */
  openSession(): Promise<Session>;
}

/**
 * A client for every endpoint of the API, typed from the OpenAPI document:
 * `const { data, error } = await client.POST("/api/v1/verify", { body: { email } })`.
 */
export function createMailprobeClient(options: MailprobeClientOptions): MailprobeClient {
  const { baseUrl, apiKey, fetch } = options;
  let token: string | TokenGetter | null = options.token ?? null;
  const client = createClient<paths>({ baseUrl, ...(fetch ? { fetch } : {}) });

  const auth: Middleware = {
    async onRequest({ request }) {
      // A credential set on the call itself (e.g. openSession's key) is left alone.
      if (request.headers.has("authorization") || request.headers.has("x-api-key")) return undefined;
      const bearer = typeof token === "function" ? await token() : token;
      if (bearer) request.headers.set("authorization", `Bearer ${bearer}`);
      else if (apiKey) request.headers.set("x-api-key", apiKey);
      return request;
    },
  };
  client.use(auth);

  return Object.assign(client, {
    setToken(next: string | TokenGetter | null) {
      token = next;
    },
    async openSession(): Promise<Session> {
      if (!apiKey) throw new TypeError("openSession needs the client's apiKey");
      const session = await unwrap(
        client.POST("/api/v1/auth/session", { headers: { "x-api-key": apiKey, authorization: null } }),
      );
      token = session.token;
      return session;
    },
  });
}

/** A code of the envelope, or `HTTP_<status>` when the body was not one (e.g. a proxy's 502 page). */
export type MailprobeErrorCode = ErrorCode | `HTTP_${number}`;

/**
 * The parsed body that comes with a code: the 408's carries the partial `result`, any other
 * envelope code the plain envelope, and an `HTTP_<status>` whatever the response held.
 */
export type MailprobeErrorBody<C extends MailprobeErrorCode = MailprobeErrorCode> =
  C extends "VERIFICATION_TIMEOUT" ? VerificationTimeoutBody : C extends ErrorCode ? ErrorBody : unknown;

/**
 * A MailprobeError known to carry `code` (what isMailprobeError(value, code) narrows to), with
 * the body that code comes with: `MailprobeErrorOf<"VERIFICATION_TIMEOUT">["body"]["result"]`.
 */
export type MailprobeErrorOf<C extends MailprobeErrorCode> = MailprobeError & {
  readonly code: C;
  readonly body: MailprobeErrorBody<C>;
};

/** An error answer of the API, read from the spec's envelope. */
export class MailprobeError extends Error {
  override name = "MailprobeError";
  /** The machine code (`VALIDATION_ERROR`, `INSUFFICIENT_CREDITS`, …); `HTTP_<status>` for a non-envelope body. */
  readonly code: MailprobeErrorCode;
  /** The HTTP status. */
  readonly status: number;
  /** The failing fields, when the server named them (at most 20). */
  readonly details: FieldError[];
  /** The X-Request-ID the server answered with (quote it when reporting a problem). */
  readonly requestId: string | null;
  /** Seconds to wait before retrying, from `Retry-After` (429). */
  readonly retryAfterSeconds: number | null;
  /**
   * The whole parsed body. Typed once the code is known: after
   * `isMailprobeError(error, "VERIFICATION_TIMEOUT")` (the 408), `error.body.result` is the partial
   * VerificationResult.
   */
  readonly body: unknown;

  constructor(init: {
    code: MailprobeErrorCode;
    message: string;
    status: number;
    details?: FieldError[];
    requestId?: string | null;
    retryAfterSeconds?: number | null;
    body?: unknown;
  }) {
    super(init.message);
    this.code = init.code;
    this.status = init.status;
    this.details = init.details ?? [];
    this.requestId = init.requestId ?? null;
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
    this.body = init.body;
  }

  /** Builds the error from a non-2xx response and its parsed body (openapi-fetch's `error`). */
  static fromResponse(response: Response, body: unknown): MailprobeError {
    const envelope = readEnvelope(body);
    const retryAfter = Number(response.headers.get("retry-after"));
    return new MailprobeError({
      code: envelope?.code ?? `HTTP_${response.status}`,
      message: envelope?.message ?? `HTTP ${response.status} ${response.statusText}`.trim(),
      status: response.status,
      details: envelope?.details ?? [],
      requestId: response.headers.get("x-request-id"),
      retryAfterSeconds:
        response.headers.has("retry-after") && Number.isFinite(retryAfter) ? retryAfter : null,
      body,
    });
  }
}

/**
 * True for a MailprobeError, optionally with the given code; with a code it also types `body`
 * (the 408's `body.result`).
 */
export function isMailprobeError<C extends MailprobeErrorCode>(
  value: unknown,
  code: C,
): value is MailprobeErrorOf<C>;
export function isMailprobeError(value: unknown, code?: MailprobeErrorCode): value is MailprobeError;
export function isMailprobeError(value: unknown, code?: MailprobeErrorCode): value is MailprobeError {
  return value instanceof MailprobeError && (code === undefined || value.code === code);
}

function readEnvelope(body: unknown): { code: ErrorCode; message: string; details?: FieldError[] } | null {
  if (typeof body !== "object" || body === null || !("error" in body)) return null;
  const error: unknown = body.error;
  if (typeof error !== "object" || error === null) return null;
  const { code, message, details } = error as Record<string, unknown>;
  if (typeof code !== "string" || typeof message !== "string") return null;
  // The code set is closed server-side; an unknown one (a newer server) passes through as is.
  return {
    code: code as ErrorCode,
    message,
    ...(Array.isArray(details) ? { details: details as FieldError[] } : {}),
  };
}

/** openapi-fetch's result: data on 2xx, error (the parsed body, if any) otherwise. */
export interface FetchResult {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/** One call's outcome with its data type spelled out (what the helpers here resolve to). */
export type ApiResult<T> =
  { data: T; error?: never; response: Response } | { data?: never; error?: ErrorBody; response: Response };

/** The success data of an openapi-fetch result type. */
export type DataOf<R> = R extends { data: infer D } ? D : never;

/**
 * The data of a successful call, or a thrown MailprobeError:
 * `const result = await unwrap(client.POST("/api/v1/verify", { body: { email } }))`.
 */
export async function unwrap<R extends FetchResult>(call: R | Promise<R>): Promise<DataOf<R>> {
  const { data, error, response } = await call;
  // 204 and empty error bodies leave both data and error undefined; the status decides.
  if (!response.ok) throw MailprobeError.fromResponse(response, error);
  return data as DataOf<R>;
}

/**
 * A list file's name. The server picks the parser by the extension (.csv, .txt or .xlsx, any
 * letter case) and answers 400 for any other, so a name the compiler can see is checked here; a
 * name only known at run time goes through isListFilename().
 */
export type ListFilename = `${string}.${"csv" | "txt" | "xlsx" | "CSV" | "TXT" | "XLSX"}`;

const LIST_EXTENSION = /\.(csv|txt|xlsx)$/i;

/** True when the server would take `name` as a list file's name (its extension decides). */
export const isListFilename = (name: string): name is ListFilename => LIST_EXTENSION.test(name);

/** The bytes of a list: a Blob (or File), an ArrayBuffer, a Uint8Array (Node's Buffer) or text. */
export type ListBytes = Blob | ArrayBuffer | Uint8Array<ArrayBuffer> | string;

/** Form fields of POST /api/v1/tasks/batch/upload (and its quote) besides the file. */
export interface UploadFields {
  /** The file name; its extension picks the parser. Defaults to a File's name. */
  filename?: ListFilename;
  /** Called with a signed `task.completed` event when the task finishes. */
  webhook_url?: string;
  /** The column holding the addresses: a header or a 1-based index (csv/xlsx only). */
  email_column?: string | number;
  /** xlsx: the sheet holding the list (default: the sheet whose email column says so). */
  sheet?: string;
}

/**
 * The multipart form of an upload or its quote:
 * `uploadForm("leads.csv", bytes, { email_column: "Email" })`. A name without a list extension
 * does not compile (`"leads.pdf"`), and one that reaches here anyway (a File's name, a cast)
 * throws a TypeError before anything is sent.
 */
export function uploadForm(
  filename: ListFilename,
  data: ListBytes,
  fields: Omit<UploadFields, "filename"> = {},
): FormData {
  if (!isListFilename(filename))
    throw new TypeError(`A list file's name must end in .csv, .txt or .xlsx: ${JSON.stringify(filename)}`);
  const form = new FormData();
  if (fields.webhook_url !== undefined) form.append("webhook_url", fields.webhook_url);
  if (fields.email_column !== undefined) form.append("email_column", String(fields.email_column));
  if (fields.sheet !== undefined) form.append("sheet", fields.sheet);
  form.append("file", data instanceof Blob ? data : new Blob([data]), filename);
  return form;
}

/** The form of a Blob or File with its fields; a Blob needs `fields.filename`. */
function formOf(caller: string, file: Blob, fields: UploadFields): FormData {
  const filename = fields.filename ?? ("name" in file && typeof file.name === "string" ? file.name : "");
  if (!filename) throw new TypeError(`${caller} needs a filename (.csv, .txt or .xlsx) for a Blob`);
  return uploadForm(filename as ListFilename, file, fields);
}

// The document types the multipart fields as strings (`file` is "binary"), which a FormData is
// not; it goes through a pass-through serializer, and fetch sets the multipart boundary.
const formBody = (form: FormData) => ({
  body: form as never,
  bodySerializer: (body: unknown) => body as FormData,
});

/**
 * Uploads a list file (multipart/form-data) and creates a task from it. Resolves to openapi-fetch's
 * `{ data, error, response }`; pass it to unwrap() for the 202 body.
 */
export async function uploadTaskFile(
  client: Client<paths>,
  file: Blob,
  fields: UploadFields = {},
): Promise<ApiResult<Upload>> {
  return client.POST("/api/v1/tasks/batch/upload", formBody(formOf("uploadTaskFile", file, fields)));
}

/**
 * Prices a list file as uploadTaskFile would upload it (POST /api/v1/tasks/batch/upload/quote):
 * the same checks and counts, nothing created. unwrap() gives the UploadQuote.
 */
export async function quoteUploadTaskFile(
  client: Client<paths>,
  file: Blob,
  fields: UploadFields = {},
): Promise<ApiResult<UploadQuote>> {
  return client.POST(
    "/api/v1/tasks/batch/upload/quote",
    formBody(formOf("quoteUploadTaskFile", file, fields)),
  );
}

export interface WaitForTaskOptions {
  /** Pause between polls (default 2000 ms). */
  intervalMs?: number;
  /** Stops waiting (e.g. `AbortSignal.timeout(600_000)`); the promise rejects with its reason. */
  signal?: AbortSignal;
  /** Called with each polled task (progress bars). */
  onProgress?: (task: Task) => void;
}

/** Polls GET /api/v1/tasks/{id} until the task has `finished_at`, and returns it. */
export async function waitForTask(
  client: Client<paths>,
  taskId: string,
  options: WaitForTaskOptions = {},
): Promise<Task> {
  const { intervalMs = 2000, signal, onProgress } = options;
  for (;;) {
    signal?.throwIfAborted();
    const task = await unwrap(
      client.GET("/api/v1/tasks/{id}", { params: { path: { id: taskId } }, ...(signal ? { signal } : {}) }),
    );
    onProgress?.(task);
    if (task.finished_at) return task;
    await sleep(intervalMs, signal);
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
