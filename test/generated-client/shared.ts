// What every integrator of scripts/generated-client-test.ts shares: the plan it was handed, and
// the checks that do not depend on which generator made its client. Each integrator answers the
// `Calls` below with its own generated client, in that client's idiom (a result object, a thrown
// error, an axios error), so the generated types are what it compiles against; only the answers,
// reduced to plain values, come here to be judged the same way for every generator.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { setTimeout as delay } from "node:timers/promises";

export interface Plan {
  /** The generator's name: the integrator's output file is named after it. */
  generator: string;
  startingCredits: number;
  verify: string;
  verifyWithNewKey: string;
  task: string[];
  upload: string[];
  /** The simulator's ground truth (a verification status) for every address above. */
  expect: Record<string, string>;
  /** A key of another user whose balance is below any task: for the 402. */
  poorKey: string;
  /** A key of a third user, spent on purpose until it is refused: for the 429. */
  stormKey: string;
  /** The server's RATE_LIMIT_BURST: a key may make this many requests at once before a 429. */
  rateLimitBurst: number;
  /** Where the integrator saves the xlsx it downloaded; the harness opens it afterwards. */
  xlsxPath: string;
}

export function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`integrator: ${name} is not set`);
  return value;
}

export const baseUrl = required("MAILPROBE_URL");
export const apiKey = required("MAILPROBE_KEY");
export const plan = JSON.parse(required("INTEGRATOR_PLAN")) as Plan;

export const MEDIA_TYPES = {
  csv: "text/csv",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
} as const;
export type DownloadFormat = keyof typeof MEDIA_TYPES;

/** A download as bytes, with the two headers that say what it is. */
export interface Downloaded {
  bytes: Uint8Array;
  contentType: string | null;
  disposition: string | null;
}

/** An error answer reduced to what the checks read: the status, the envelope's code, Retry-After. */
export interface Refusal {
  status: number;
  code: string | undefined;
  retryAfter: string | null;
}

/** A task as far as polling needs it. */
export interface TaskView {
  finished_at: string | null;
  metrics: { total_email_addresses: number; job_status: { completed: number } };
}

/** What the shared flow asks of a generated client; a refusal-returning call answers null on a 2xx. */
export interface Calls {
  createTask(emails: string[]): Promise<{ id: string; email_count: number }>;
  uploadCsv(file: File): Promise<{ task_id: string; upload_id: string; email_count: number }>;
  getTask(id: string): Promise<TaskView>;
  download(id: string, format: DownloadFormat): Promise<Downloaded>;
  balance(): Promise<number>;
  /** The download of a task that does not exist: a JSON error through a binary operation. */
  downloadRefusal(id: string): Promise<Refusal | null>;
  /** A task created with `plan.poorKey`. */
  createTaskRefusal(emails: string[]): Promise<Refusal | null>;
  /** The balance read with `plan.stormKey`. */
  balanceRefusal(): Promise<Refusal | null>;
}

/** A task of a few addresses finishes in about a second; three integrators at once on a busy machine take longer. */
const TASK_DEADLINE_MS = 30_000;
const CHECK_NAMES = ["syntax", "dns", "mx", "reverse_dns", "smtp"] as const;

/** The list the upload sends: a header row, then the plan's addresses. */
export function uploadFile(): File {
  const csv = ["email", ...plan.upload].join("\n") + "\n";
  return new File([csv], "list.csv", { type: "text/csv" });
}

/** Polls a task until it has finished, bounded. */
export async function waitForTask<T extends TaskView>(
  get: () => Promise<T>,
  id: string,
): Promise<T & { finished_at: string }> {
  const deadline = Date.now() + TASK_DEADLINE_MS;
  for (;;) {
    const task = await get();
    const { finished_at: finishedAt } = task;
    if (finishedAt !== null) return { ...task, finished_at: finishedAt };
    assert.ok(Date.now() < deadline, `task ${id} did not finish within ${TASK_DEADLINE_MS.toString()} ms`);
    await delay(200);
  }
}

export function checkDownloadHeaders(file: Downloaded, format: DownloadFormat): void {
  assert.equal(file.contentType?.split(";")[0], MEDIA_TYPES[format], `download ${format}: type`);
  assert.match(file.disposition ?? "", /^attachment;/, `download ${format}: disposition`);
}

/** The csv download of the plan's task: a header with the result and check columns, a row per address. */
export function checkCsv(bytes: Uint8Array, emails: readonly string[]): void {
  const csv = new TextDecoder().decode(bytes);
  const [header, ...rows] = csv.trimEnd().split(/\r?\n/);
  const columns = header!.split(",");
  assert.equal(columns[0], "email", `csv header: ${header!}`);
  assert.ok(columns.includes("status"), `csv header: ${header!}`);
  assert.equal(rows.length, emails.length, "csv: one row per address");
  assert.deepEqual(rows.map((r) => r.split(",")[0]).sort(), [...emails].sort(), "csv: the task's addresses");
  assert.deepEqual(
    columns.slice(-5),
    CHECK_NAMES.map((n) => `check_${n}`),
    "csv: check columns",
  );
}

/**
 * The xlsx as the client handed it over: a zip (PK\3\4), saved byte for byte where the harness
 * opens it with a workbook reader (a text decode on the way would have broken the zip).
 */
export async function saveXlsx(bytes: Uint8Array): Promise<void> {
  assert.deepEqual([...bytes.subarray(0, 4)], [0x50, 0x4b, 0x03, 0x04], "xlsx: a zip (PK\\3\\4)");
  await writeFile(plan.xlsxPath, bytes);
}

/**
 * The refusals an integration has to handle: a 404's JSON envelope through the binary download,
 * a 402 when the balance is short, and a 429 with Retry-After (integer seconds) once a key has
 * spent its burst; `rateLimitBurst` + 10 requests at once are sure to overrun it.
 */
export async function checkRefusals(
  calls: Pick<Calls, "downloadRefusal" | "createTaskRefusal" | "balanceRefusal">,
) {
  const missing = await calls.downloadRefusal("00000000-0000-4000-8000-000000000000");
  assert.equal(missing?.status, 404, `download of no task: ${JSON.stringify(missing)}`);
  assert.equal(missing.code, "NOT_FOUND", "download of no task: the JSON envelope's code");

  const short = await calls.createTaskRefusal(plan.task);
  assert.equal(short?.status, 402, `task beyond the balance: ${JSON.stringify(short)}`);
  assert.equal(short.code, "INSUFFICIENT_CREDITS");

  const answers = await Promise.all(
    Array.from({ length: plan.rateLimitBurst + 10 }, () => calls.balanceRefusal()),
  );
  const limited = answers.find((a) => a !== null);
  assert.ok(limited, `${answers.length.toString()} requests at once, none refused`);
  assert.equal(limited.status, 429, `a storm of requests: ${JSON.stringify(limited)}`);
  assert.equal(limited.code, "RATE_LIMITED");
  assert.match(limited.retryAfter ?? "", /^[1-9]\d*$/, "Retry-After: integer seconds");
}

/**
 * The flow for a generator's client: a JSON task and a csv upload, both polled to the end; the
 * task downloaded as csv and as xlsx (saved for the harness); the balance after the charges;
 * then the refusals.
 */
export async function runFlow(calls: Calls): Promise<void> {
  const created = await calls.createTask(plan.task);
  assert.equal(created.email_count, plan.task.length, "create task: email_count");
  const uploaded = await calls.uploadCsv(uploadFile());
  assert.equal(uploaded.email_count, plan.upload.length, "upload: email_count");

  const task = await waitForTask(() => calls.getTask(created.id), created.id);
  assert.equal(task.metrics.job_status.completed, plan.task.length, "task: every job completed");
  const uploadTask = await waitForTask(() => calls.getTask(uploaded.task_id), uploaded.task_id);
  assert.equal(uploadTask.metrics.total_email_addresses, plan.upload.length, "upload task: addresses");

  const csv = await calls.download(created.id, "csv");
  checkDownloadHeaders(csv, "csv");
  checkCsv(csv.bytes, plan.task);
  const xlsx = await calls.download(created.id, "xlsx");
  checkDownloadHeaders(xlsx, "xlsx");
  await saveXlsx(xlsx.bytes);

  const spent = [...plan.task, ...plan.upload].filter((e) => plan.expect[e] !== "unknown").length;
  assert.equal(await calls.balance(), plan.startingCredits - spent, "balance after the charges");

  await checkRefusals(calls);
}
