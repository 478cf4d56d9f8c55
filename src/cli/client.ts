// `mailprobe client …`: the command-line client of a running server, over its public API with an
// API key (MAILPROBE_URL, MAILPROBE_KEY), through the generated SDK (@mailprobe/client: calls typed
// from the OpenAPI document). A server error is printed as `mailprobe: <code>: <message>` (the
// spec's error envelope) and exits 1.
import { readFile, stat } from "node:fs/promises";
import { basename } from "node:path";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { setTimeout as sleep } from "node:timers/promises";
import {
  createMailprobeClient,
  isListFilename,
  MailprobeError,
  quoteUploadTaskFile,
  uploadTaskFile,
  type DataOf,
  type FetchResult,
  type MailprobeClient,
  type Task,
  type TaskMetrics,
  type Upload,
  type UploadFields,
  type UploadQuote,
  type VerificationResult,
  type VerificationTimeoutBody,
} from "@mailprobe/client";
import { signInLinkUrl } from "../auth/sign-in-links.ts";
import { loadClientConfig, requireClientKey } from "../config/client-config.ts";
import { downloadFilename } from "../files/export/result-filename.ts";
import { askYesNo } from "./confirm.ts";
import { createProgress } from "./progress.ts";
import { confirmQuestion, priceLine, REFUSE_MESSAGE, shortMessage, uploadStep } from "./upload-price.ts";
import {
  checkOutPath,
  CliError,
  columnLetterToNumber,
  withSheetOption,
  defaultOutPath,
  outputFormat,
  shellWord,
  writeFileAtomically,
  type FileFormat as Format,
} from "./cli-support.ts";

/** A failure to show the user: the server's error, or why the server could not be asked. */
export class ClientError extends Error {
  override name = "ClientError";
  constructor(
    message: string,
    readonly status: number | null = null,
    readonly code: string | null = null,
    readonly fields: readonly string[] = [],
  ) {
    super(message);
  }
}

/** Every request has a deadline; a verification, uploads and downloads get longer ones. */
const REQUEST_TIMEOUT_MS = 30_000;
const VERIFY_TIMEOUT_MS = 120_000;
const TRANSFER_TIMEOUT_MS = 10 * 60_000;
/** Polling while waiting: every second, then every 2 s after the first minute. */
const POLL_FAST_MS = 1_000;
const POLL_SLOW_MS = 2_000;
/** Consecutive failed polls (network, 5xx) tolerated while waiting. */
const MAX_POLL_FAILURES = 5;
/** Exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it. */
const INTERRUPTED_EXIT = 130;

const say = (line: string): void => void process.stdout.write(line + "\n");
const note = (line: string): void => void process.stderr.write(`mailprobe: ${line}\n`);

function connection(): { url: string; key: string } {
  const config = loadClientConfig(process.env);
  return { url: config.url, key: requireClientKey(config) };
}

/**
 * The SDK's client with a deadline on each of its requests (`timeoutMs`), which also end with
 * `signal` (Ctrl-C while waiting). The deadline lives in the client's `fetch` rather than in
 * each call's options because uploadTaskFile takes none, and so that one place turns a request
 * that could not be made into the user's message.
 */
function api(timeoutMs = REQUEST_TIMEOUT_MS, signal?: AbortSignal): MailprobeClient {
  const { url, key } = connection();
  const client = createMailprobeClient({
    baseUrl: url,
    // As `Authorization: Bearer`: the server takes an API key there as it takes a session.
    token: key,
    fetch: (input, init) => send(url, input, init, timeoutMs, signal),
  });
  // The error envelope is what the CLI reads from any failed answer, a download's included.
  client.use({
    onRequest: ({ request }) => {
      request.headers.set("accept", "application/json");
      return request;
    },
  });
  return client;
}

/** fetch under the deadline; a request that could not be made becomes the user's message. */
async function send(
  url: string,
  input: Request | string | URL,
  init: RequestInit | undefined,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Response> {
  try {
    return await fetch(input, {
      ...init,
      signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])]),
    });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    const err = error as { name?: string; cause?: { code?: string; message?: string }; message?: string };
    if (err.name === "TimeoutError") {
      const target = input instanceof Request ? input.url : String(input);
      const { pathname, search } = new URL(target);
      const path = target.startsWith(url) ? target.slice(url.length) : pathname + search;
      throw new ClientError(`${url} did not answer in time (${path})`);
    }
    const cause = err.cause?.code ?? err.cause?.message ?? err.message ?? String(error);
    throw new ClientError(`cannot reach ${url}: ${cause} (is the server running? set MAILPROBE_URL)`);
  }
}

/**
 * A non-2xx answer as the user sees it, read by the SDK (MailprobeError: code, message, field
 * details). A body that is not the envelope (a proxy's page) is named by its status line.
 */
function clientError(response: Response, body: unknown): ClientError {
  const error = MailprobeError.fromResponse(response, body);
  const message = error.code.startsWith("HTTP_")
    ? response.statusText || `the server answered ${response.status}`
    : error.message;
  // The SDK hands the body's details over unchecked: each field is checked here before it is shown.
  const details = error.details as Array<{ field?: unknown; reason?: unknown }>;
  const lines = details
    .slice(0, 5)
    .map(
      (d) =>
        `\n  ${typeof d.field === "string" ? d.field : "?"}: ${typeof d.reason === "string" ? d.reason : JSON.stringify(d.reason)}`,
    );
  const fields = details.flatMap((d) => (typeof d.field === "string" ? [d.field] : []));
  return new ClientError(`${error.code}: ${message}${lines.join("")}`, response.status, error.code, fields);
}

/** The data of a 2xx answer; any other answer becomes a ClientError. */
async function dataOf<R extends FetchResult>(call: R | Promise<R>): Promise<DataOf<R>> {
  const { data, error, response } = await call;
  if (!response.ok) throw clientError(response, error);
  return data as DataOf<R>;
}

// --- credits -----------------------------------------------------------------------------------

export async function clientCredits(opts: { json?: boolean }): Promise<void> {
  const body = await dataOf(api().GET("/api/v1/credits/balance"));
  say(opts.json ? JSON.stringify(body) : `balance: ${body.balance}`);
}

// --- sign-in link -------------------------------------------------------------------------------

/**
 * A one-time link into the dashboard for MAILPROBE_KEY (a `custom` key): open it in a browser to
 * sign in without pasting the key there. Built on MAILPROBE_URL, the address this machine uses.
 */
export async function clientSignInLink(opts: { json?: boolean }): Promise<void> {
  const body = await dataOf(api().POST("/api/v1/auth/sign-in-links"));
  const url = signInLinkUrl(connection().url, body.token);
  if (opts.json) {
    say(JSON.stringify({ ...body, url }));
    return;
  }
  say(url);
  note(`one use, until ${body.expires_at}; it opens a session of this key (revoking the key ends both)`);
}

// --- verify ------------------------------------------------------------------------------------

const TABLE = ["email", "status", "unknown_reason", "host_name", "is_catchall"] as const;

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

export async function clientVerify(addresses: string[], opts: { json?: boolean }): Promise<void> {
  const client = api(VERIFY_TIMEOUT_MS);
  const results: Array<VerificationResult | VerificationTimeoutBody> = [];
  for (const email of addresses) {
    const answer = await client.POST("/api/v1/verify", { body: { email } });
    // 408: the server's deadline passed; its body (the envelope with the partial `result`) is
    // shown as it is.
    const body =
      answer.response.status === 408 ? (answer.error as VerificationTimeoutBody) : await dataOf(answer);
    results.push(body);
    if (opts.json) say(JSON.stringify(body));
  }
  if (opts.json) return;
  // A 408's body is the envelope, not a result: its row stays blank (--json shows the result).
  const rows = results.map((r) => TABLE.map((f) => ("error" in r ? "" : String(r[f] ?? ""))));
  say(table([[...TABLE], ...rows]));
}

// --- tasks -------------------------------------------------------------------------------------

export async function clientTasks(opts: { limit: number; json?: boolean }): Promise<void> {
  const limit = Math.min(100, opts.limit);
  const body = await dataOf(api().GET("/api/v1/tasks", { params: { query: { limit } } }));
  if (opts.json) {
    say(JSON.stringify(body));
    return;
  }
  if (body.tasks.length === 0) {
    say("no tasks yet");
    return;
  }
  const rows = body.tasks.map((t) => [
    t.id,
    t.created_at,
    String(t.metrics.total_email_addresses),
    `${t.metrics.progress_percent}%`,
    t.file?.filename ?? "(json)",
  ]);
  say(table([["id", "created_at", "addresses", "progress", "file"], ...rows]));
  if (body.count > body.tasks.length) say(`(${body.tasks.length} of ${body.count}; --limit for more)`);
}

// --- upload, wait, download --------------------------------------------------------------------

/** Which part of the file is the list: its email column and, in a workbook, its sheet. */
interface ListChoice {
  column: string | null;
  sheet: string | null;
}

/**
 * The form fields of the upload and of its quote, the same for both so the price is the upload's.
 * The SDK refuses a name without a list extension before sending; said here in the CLI's words.
 */
function uploadFieldsOf(file: string, choice: ListChoice): UploadFields {
  const filename = basename(file);
  if (!isListFilename(filename))
    throw new ClientError(`${filename}: upload a .csv, .txt or .xlsx file (the extension picks the reader)`);
  return {
    filename,
    ...(choice.column !== null ? { email_column: choice.column } : {}),
    ...(choice.sheet !== null ? { sheet: choice.sheet } : {}),
  };
}

async function postUpload(file: string, data: Buffer, choice: ListChoice): Promise<Upload> {
  const list = new Blob([new Uint8Array(data)]);
  return dataOf(uploadTaskFile(api(TRANSFER_TIMEOUT_MS), list, uploadFieldsOf(file, choice)));
}

/** The server names its form field (`sheet=Contacts`); here the choice is the --sheet option. */
function asSheetOption(error: unknown): unknown {
  if (!(error instanceof ClientError) || !error.fields.includes("sheet")) return error;
  return new ClientError(withSheetOption(error.message), error.status, error.code, error.fields);
}

/**
 * The upload's quote (POST /api/v1/tasks/batch/upload/quote): the server reads the file as the
 * upload would and answers its counts, the credits it would reserve and the balance, creating
 * nothing.
 */
async function priceUpload(file: string, data: Buffer, choice: ListChoice): Promise<UploadQuote> {
  const list = new Blob([new Uint8Array(data)]);
  return dataOf(quoteUploadTaskFile(api(TRANSFER_TIMEOUT_MS), list, uploadFieldsOf(file, choice))).catch(
    (error: unknown) => {
      throw asSheetOption(error);
    },
  );
}

/**
 * `call` with the column as given; when the server refuses it as email_column and it is a column
 * letter (E) naming no header, again with the letter's number, as `mailprobe verify --file` reads
 * it (the server takes a header name or a number). Also says which column answered, so the upload
 * sends the column its price was for.
 */
async function withColumn<T>(
  column: string | null,
  call: (column: string | null) => Promise<T>,
): Promise<{ answer: T; column: string | null }> {
  try {
    return { answer: await call(column), column };
  } catch (error) {
    const letter = column === null ? null : columnLetterToNumber(column);
    const columnRefused =
      error instanceof ClientError && error.status === 400 && error.fields.includes("email_column");
    if (letter === null || !columnRefused) throw error;
    return { answer: await call(String(letter)), column: String(letter) };
  }
}

/**
 * The price step before an upload: the quote's line (stdout with --dry-run, where it is the
 * answer; stderr otherwise, where stdout is the task id), then upload, ask, or stop. Returns the
 * column to upload with, or null when nothing is to be uploaded (--dry-run).
 */
async function confirmPrice(
  file: string,
  data: Buffer,
  choice: ListChoice,
  opts: { dryRun?: boolean; yes?: boolean; json?: boolean },
): Promise<ListChoice | null> {
  const priced = await withColumn(choice.column, (column) => priceUpload(file, data, { ...choice, column }));
  const quote = priced.answer;
  if (opts.dryRun) say(opts.json ? JSON.stringify(quote) : priceLine(quote));
  else note(priceLine(quote));
  switch (uploadStep(quote, opts, process.stdin.isTTY === true)) {
    case "short":
      throw new ClientError(shortMessage(quote));
    case "priced":
      return null;
    case "refuse":
      throw new ClientError(REFUSE_MESSAGE);
    case "ask": {
      const answer = await askYesNo(confirmQuestion(quote));
      if (answer === "interrupted") throw new CliError("interrupted; nothing was uploaded", INTERRUPTED_EXIT);
      if (answer === "no") throw new ClientError("not uploaded");
      break;
    }
    case "upload":
      break;
  }
  return { ...choice, column: priced.column };
}

const doneOf = (m: TaskMetrics): number =>
  m.job_status.completed + m.job_status.failed + m.job_status.cancelled;

/** The command that downloads a task's results into `out` (format from its extension, else --format). */
export function downloadCommand(taskId: string, out: string, format: Format): string {
  const formatFlag = outputFormat(out, undefined) === format ? "" : ` --format ${format}`;
  return `mailprobe client download ${taskId} --out ${shellWord(out)}${formatFlag}`;
}

/**
 * Polls the task until it has finished (null: the wait is over first), with progress on stderr.
 * Not the SDK's waitForTask, which polls at one pace and stops at the first failed poll: this one
 * slows down after a minute, waits out a restarting server and ends at the deadline.
 */
async function waitForTask(
  taskId: string,
  timeoutMinutes: number,
  signal: AbortSignal,
): Promise<Task | null> {
  const deadline = Date.now() + timeoutMinutes * 60_000;
  const started = Date.now();
  const client = api(REQUEST_TIMEOUT_MS, signal);
  let progress: ReturnType<typeof createProgress> | null = null;
  let failures = 0;
  try {
    for (;;) {
      let task: Task | null = null;
      try {
        task = await dataOf(client.GET("/api/v1/tasks/{id}", { params: { path: { id: taskId } } }));
        failures = 0;
      } catch (error) {
        if (signal.aborted) throw error;
        // A restart or a hiccup of the server is waited out; a 4xx (key revoked, task gone) is not.
        const status = error instanceof ClientError ? error.status : null;
        const transient = status === null || status >= 500 || status === 429;
        if (!transient || ++failures > MAX_POLL_FAILURES) throw error;
      }
      if (task) {
        const total = task.metrics.total_email_addresses;
        progress ??= createProgress({ total, unit: "addresses", label: "verifying", plainLines: "changes" });
        progress.update(doneOf(task.metrics), total);
        if (task.finished_at) return task;
      }
      if (Date.now() >= deadline) return null;
      await sleep(Date.now() - started < 60_000 ? POLL_FAST_MS : POLL_SLOW_MS, undefined, { signal });
    }
  } finally {
    progress?.finish();
  }
}

async function download(
  taskId: string,
  format: Format,
  out: string | ((res: Response) => Promise<string>),
  opts: { force: boolean; signal?: AbortSignal },
): Promise<string> {
  // parseAs "stream": the body is left unread and streamed to the file. It is taken from the
  // response, not `data`, which openapi-fetch leaves undefined for an empty (Content-Length: 0) body.
  const answer = await api(TRANSFER_TIMEOUT_MS, opts.signal).GET("/api/v1/tasks/{id}/download", {
    params: { path: { id: taskId }, query: { format } },
    parseAs: "stream",
  });
  if (!answer.response.ok) throw clientError(answer.response, answer.error);
  const { response } = answer;
  if (!response.body) throw new ClientError(`the download of task ${taskId} came back empty`);
  const path = typeof out === "string" ? out : await out(response);
  try {
    const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    await writeFileAtomically(path, body, opts.force);
  } catch (error) {
    if (error instanceof ClientError || error instanceof CliError || opts.signal?.aborted) throw error;
    throw new ClientError(
      `downloading task ${taskId} failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return path;
}

export async function clientUpload(
  file: string,
  opts: {
    column?: string;
    sheet?: string;
    wait?: boolean;
    out?: string;
    format?: Format;
    timeout: number;
    json?: boolean;
    force?: boolean;
    yes?: boolean;
    dryRun?: boolean;
  },
): Promise<void> {
  connection(); // a missing MAILPROBE_KEY is said before the file is read
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) throw new ClientError(`cannot read ${file}: no such file`);
  const format = outputFormat(opts.out, opts.format);
  const out = opts.out ?? defaultOutPath(file, format);
  const force = opts.force === true;
  // A results file that would be refused is said before the price is asked (and before any spend).
  if (opts.wait && !opts.dryRun) await checkOutPath(file, out, force);
  else if (!opts.wait && (opts.out !== undefined || opts.format !== undefined || opts.force !== undefined))
    note("warning: --out, --format and --force apply with --wait only");

  const data = await readFile(file);
  const choice = { column: opts.column?.trim() || null, sheet: opts.sheet?.trim() || null };
  const confirmed = await confirmPrice(file, data, choice, opts);
  if (!confirmed) return;
  const accepted = await postUpload(file, data, confirmed);
  if (!opts.wait) {
    say(opts.json ? JSON.stringify(accepted) : accepted.task_id);
    if (!opts.json)
      note(
        `uploaded ${accepted.filename}: ${accepted.email_count} addresses, task ${accepted.task_id} (follow it with: mailprobe client tasks)`,
      );
    return;
  }
  note(`uploaded ${accepted.filename}: ${accepted.email_count} addresses, task ${accepted.task_id}`);
  // Ctrl-C (or the timeout) leaves the task running on the server: say how to fetch it later.
  const later = `download the results later with: ${downloadCommand(accepted.task_id, out, format)}`;
  const interrupted = new AbortController();
  const onSigint = (): void => interrupted.abort();
  process.once("SIGINT", onSigint);
  let task: Task | null;
  try {
    task = await waitForTask(accepted.task_id, opts.timeout, interrupted.signal);
    if (task) await download(accepted.task_id, format, out, { force, signal: interrupted.signal });
  } catch (error) {
    if (interrupted.signal.aborted) {
      throw new CliError(
        `interrupted; task ${accepted.task_id} keeps running on the server; ${later}`,
        INTERRUPTED_EXIT,
      );
    }
    throw error;
  } finally {
    process.off("SIGINT", onSigint);
  }
  if (!task)
    throw new ClientError(`task ${accepted.task_id} has not finished after ${opts.timeout} min; ${later}`);
  const counts = Object.entries(task.metrics.verification_status)
    .filter(([k, n]) => n > 0 && k !== "role_based" && k !== "disposable_domain_emails")
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
  note(`task ${task.id} finished${counts ? ` (${counts})` : ""}; results in ${out}`);
  say(opts.json ? JSON.stringify(task) : out);
}

/**
 * The server's file name from Content-Disposition (filename*, else filename), reduced to a bare
 * name: a server is not trusted with a path. Null when there is none usable.
 */
export function serverFilename(disposition: string | null): string | null {
  if (!disposition) return null;
  let name: string | null = null;
  const star = /filename\*\s*=\s*utf-8''([^;]+)/i.exec(disposition);
  if (star?.[1]) {
    try {
      name = decodeURIComponent(star[1].trim());
    } catch {
      name = null;
    }
  }
  name ??= /filename\s*=\s*"([^"]*)"/i.exec(disposition)?.[1] ?? null;
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (!name || /[/\\\u0000-\u001f]/.test(name) || /^\.+$/.test(name)) return null;
  return name;
}

export async function clientDownload(
  taskId: string,
  opts: { out?: string; format?: Format; force?: boolean },
): Promise<void> {
  const format = outputFormat(opts.out, opts.format);
  const force = opts.force === true;
  if (opts.out !== undefined) await checkOutPath(null, opts.out, force);
  // Without --out: the name the dashboard saves under, the server's Content-Disposition.
  const named = async (res: Response): Promise<string> => {
    const name =
      serverFilename(res.headers.get("content-disposition")) ?? downloadFilename(null, taskId, format);
    await checkOutPath(null, name, force);
    return name;
  };
  say(await download(taskId, format, opts.out ?? named, { force }));
}
