// An integrator's script written against a client that @hey-api/openapi-ts generated from our
// OpenAPI document (./client/, made fresh by `npm run test:clients`, never committed). Every
// call to mailprobe goes through that client: if the document lies about a path, a parameter, a
// body or a response, this fails to compile or fails here. It covers what an integration does:
// verify, a JSON task with a webhook, a csv upload, polling, jobs, downloads as bytes, a new key
// and the ledger, then the refusals (a download's 404, a 402, a 429 with Retry-After). The only
// code that is not the generated client is the integrator's own webhook receiver (node:http), its
// signature check (the standardwebhooks package), as in a customer's service, and the checks it
// shares with the other generators' integrators (./shared.ts).
//
// Input (from scripts/generated-client-test.ts): MAILPROBE_URL, MAILPROBE_KEY and INTEGRATOR_PLAN
// (./shared.ts: the addresses and keys to use and the simulator's ground truth for each address).
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { Webhook } from "standardwebhooks";
import {
  apiKey,
  baseUrl,
  checkCsv,
  checkDownloadHeaders,
  checkRefusals,
  plan,
  saveXlsx,
  waitForTask,
  type DownloadFormat,
  type Downloaded,
  type Refusal,
} from "./shared.ts";
import { createClient, type Client } from "./client/client/index.ts";
import {
  createApiKey,
  createTask,
  downloadTaskResults,
  getCreditBalance,
  getTask,
  getUpload,
  getWebhookSecret,
  listApiKeys,
  listCreditTransactions,
  listTaskJobs,
  uploadTaskFile,
  verifyEmail,
  type TaskCompletedEvent,
  type TaskDetail,
  type VerificationResult,
} from "./client/index.ts";

const WEBHOOK_DEADLINE_MS = 10_000;
const CHECK_NAMES = ["syntax", "dns", "mx", "reverse_dns", "smtp"] as const;
const CHECK_STATUSES = ["passed", "failed", "skipped", "error"];

/** What every generated call resolves to (responseStyle "fields", throwOnError false). */
interface Outcome {
  data?: unknown;
  error?: unknown;
  response?: Response;
}

/** The body of a successful answer with exactly this status, or a failure that shows the error body. */
function expectStatus<O extends Outcome>(outcome: O, status: number, what: string): NonNullable<O["data"]> {
  const got = outcome.response?.status;
  assert.equal(got, status, `${what}: HTTP ${String(got)} ${JSON.stringify(outcome.error)}`);
  assert.ok(outcome.data !== undefined && outcome.data !== null, `${what}: no body`);
  return outcome.data;
}

/**
 * A client for one API key. The document offers bearer OR X-API-Key (two security
 * alternatives), and the generated client fills every scheme it has a token for, so the
 * callback answers for the bearer scheme only: one credential per request.
 */
function clientFor(apiKey: string): Client {
  return createClient({ baseUrl, auth: (auth) => (auth.scheme === "bearer" ? apiKey : undefined) });
}

const isoDate = (value: string) => !Number.isNaN(Date.parse(value)) && /T.*(Z|[+-]\d\d:\d\d)$/.test(value);

/**
 * `checks` (per-check status) is optional in the document, like every field beyond the spec's
 * table (clients made from an older document do without it), but this server always sends it.
 */
function assertChecks(result: VerificationResult, what: string): void {
  assert.ok(result.checks !== undefined, `${what}: checks`);
  for (const name of CHECK_NAMES) {
    const check = result.checks[name];
    assert.ok(CHECK_STATUSES.includes(check.status), `${what}: checks.${name}.status ${check.status}`);
    assert.ok(check.reason === null || typeof check.reason === "string", `${what}: checks.${name}.reason`);
  }
  assert.equal(result.checks.syntax.status, "passed", `${what}: syntax check`);
}

// The result's fields by their generated types: a field the document renames or retypes breaks
// the compile (`satisfies`), a value the server sends with another type fails at run time.
const BOOLEAN_FIELDS = [
  "is_role_based",
  "is_disposable",
  "has_mx_records",
  "has_reverse_dns",
  "is_catchall",
  "needs_physical_verify",
] as const satisfies ReadonlyArray<
  {
    [K in keyof VerificationResult]: VerificationResult[K] extends boolean ? K : never;
  }[keyof VerificationResult]
>;
const STRING_FIELDS = [
  "id",
  "email",
  "domain_name",
  "host_name",
  "server_type",
  "validated_at",
] as const satisfies ReadonlyArray<
  {
    [K in keyof VerificationResult]: VerificationResult[K] extends string ? K : never;
  }[keyof VerificationResult]
>;

function assertResult(result: VerificationResult, email: string, what: string): void {
  for (const field of BOOLEAN_FIELDS) assert.equal(typeof result[field], "boolean", `${what}: ${field}`);
  for (const field of STRING_FIELDS) assert.equal(typeof result[field], "string", `${what}: ${field}`);
  assert.equal(result.email, email, `${what}: email`);
  assert.equal(result.status, plan.expect[email], `${what}: status of ${email}`);
  assert.equal(result.domain_name, email.slice(email.indexOf("@") + 1), `${what}: domain_name`);
  assert.equal(result.has_mx_records, true, `${what}: the world's domains have MX records`);
  assert.equal(result.is_catchall, plan.expect[email] === "catchall", `${what}: is_catchall`);
  assert.equal(result.unknown_reason, null, `${what}: unknown_reason`);
  assert.ok(isoDate(result.validated_at), `${what}: validated_at ${result.validated_at}`);
  assertChecks(result, what);
}

/** Polls a task until it has finished, bounded. */
function waitForFinish(client: Client, id: string): Promise<TaskDetail & { finished_at: string }> {
  return waitForTask(async () => expectStatus(await getTask({ client, path: { id } }), 200, "get task"), id);
}

/** An error answer (the envelope typed per status), or null for a 2xx. */
function refusalOf(outcome: { error?: { error: { code: string } }; response?: Response }): Refusal | null {
  const status = outcome.response?.status ?? 0;
  if (status >= 200 && status < 300) return null;
  return {
    status,
    code: outcome.error?.error.code,
    retryAfter: outcome.response?.headers.get("retry-after") ?? null,
  };
}

/** A receiver as a customer would run it: collects each delivery's raw body and headers, answers 204. */
async function startReceiver() {
  const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port.toString()}/hooks/mailprobe`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function download(client: Client, id: string, format: DownloadFormat): Promise<Uint8Array> {
  // parseAs "blob": the document types the 200 as binary (Blob | File), but the fetch client
  // picks a parser from the Content-Type at run time and would hand text/csv back as a string.
  const outcome = await downloadTaskResults({ client, path: { id }, query: { format }, parseAs: "blob" });
  const file = expectStatus(outcome, 200, `download ${format}`);
  assert.ok(file instanceof Blob, `download ${format}: a Blob`);
  const downloaded: Downloaded = {
    bytes: new Uint8Array(await file.arrayBuffer()),
    contentType: outcome.response?.headers.get("content-type") ?? null,
    disposition: outcome.response?.headers.get("content-disposition") ?? null,
  };
  checkDownloadHeaders(downloaded, format);
  return downloaded.bytes;
}

async function main(): Promise<void> {
  const client = clientFor(apiKey);
  const taskCount = plan.task.length;
  const charged = (statuses: string[]) => statuses.filter((s) => s !== "unknown").length;

  // Realtime verification, and a refused body with the typed error envelope.
  const verified = expectStatus(await verifyEmail({ client, body: { email: plan.verify } }), 200, "verify");
  assertResult(verified, plan.verify, "verify");
  const refused = await verifyEmail({ client, body: { email: "" } });
  assert.equal(refused.response?.status, 400, "verify with an empty email");
  assert.equal(refused.error?.error.code, "VALIDATION_ERROR");

  // A task with a completion webhook, polled until it finishes.
  const receiver = await startReceiver();
  try {
    const created = expectStatus(
      await createTask({ client, body: { emails: plan.task, webhook_url: receiver.url } }),
      201,
      "create task",
    );
    assert.equal(created.email_count, taskCount);
    assert.equal(created.domain_count, new Set(plan.task.map((e) => e.split("@")[1])).size);
    assert.equal(created.webhook_url, receiver.url);
    assert.equal(created.source, "api_key");

    // A csv upload (multipart through the generated form-data serializer), verified meanwhile.
    const csvList = ["email", ...plan.upload].join("\n") + "\n";
    const uploaded = expectStatus(
      await uploadTaskFile({
        client,
        body: { file: new File([csvList], "list.csv", { type: "text/csv" }) },
      }),
      202,
      "upload",
    );
    assert.equal(uploaded.filename, "list.csv");
    assert.equal(uploaded.email_count, plan.upload.length);
    assert.ok(["processing", "completed"].includes(uploaded.status), `upload status ${uploaded.status}`);

    const task = await waitForFinish(client, created.id);
    const uploadTask = await waitForFinish(client, uploaded.task_id);
    assert.equal(uploadTask.is_file_backed, true);
    assert.equal(uploadTask.file?.upload_id, uploaded.upload_id);
    assert.equal(uploadTask.metrics.job_status.completed, plan.upload.length);
    const upload = expectStatus(
      await getUpload({ client, path: { upload_id: uploaded.upload_id } }),
      200,
      "upload status",
    );
    assert.equal(upload.task_id, uploaded.task_id);
    assert.equal(upload.status, "completed");

    assert.ok(isoDate(task.finished_at), "finished_at");
    assert.equal(task.metrics.total_email_addresses, taskCount);
    assert.equal(task.metrics.job_status.completed, taskCount);
    assert.equal(task.metrics.progress, 1);
    for (const status of ["valid", "invalid", "catchall"] as const) {
      const want = plan.task.filter((e) => plan.expect[e] === status).length;
      assert.equal(task.metrics.verification_status[status], want, `metrics: ${status}`);
    }

    const jobs = expectStatus(
      await listTaskJobs({ client, path: { id: created.id }, query: { limit: 100 } }),
      200,
      "list jobs",
    );
    assert.equal(jobs.count, taskCount);
    assert.deepEqual(jobs.jobs.map((j) => j.email_address).sort(), [...plan.task].sort());
    for (const job of jobs.jobs) {
      assert.equal(job.task_id, created.id);
      assert.equal(job.status, "completed", `job ${job.email_address}`);
      assert.ok(job.email, `job ${job.email_address}: its result`);
      assertResult(job.email, job.email_address, `job ${job.email_address}`);
    }

    checkCsv(await download(client, created.id, "csv"), plan.task);
    await saveXlsx(await download(client, created.id, "xlsx"));

    // The completion webhook, verified with the secret the API hands out.
    const { secret } = expectStatus(await getWebhookSecret({ client }), 200, "webhook secret");
    const hookDeadline = Date.now() + WEBHOOK_DEADLINE_MS;
    while (receiver.received.length === 0) {
      assert.ok(Date.now() < hookDeadline, `no webhook within ${WEBHOOK_DEADLINE_MS.toString()} ms`);
      await delay(100);
    }
    const [delivery] = receiver.received;
    const header_ = (name: string) => String(delivery!.headers[name]);
    const event = new Webhook(secret).verify(delivery!.body, {
      "webhook-id": header_("webhook-id"),
      "webhook-timestamp": header_("webhook-timestamp"),
      "webhook-signature": header_("webhook-signature"),
    }) as TaskCompletedEvent;
    assert.equal(event.type, "task.completed");
    assert.equal(event.data.task_id, created.id);
    assert.equal(event.data.status, "completed");
    assert.equal(event.data.metrics.total_email_addresses, taskCount);
    assert.equal(receiver.received.length, 1, "one delivery: the upload's task has no webhook_url");
  } finally {
    await receiver.close();
  }

  // A new key for the same account, used for a charged call attributed to it.
  const key = expectStatus(
    await createApiKey({ client, body: { name: "generated-client", purpose: "custom" } }),
    201,
    "create key",
  );
  assert.ok(key.key.length > 0, "the plaintext key, shown once");
  assert.equal(key.purpose, "custom");
  const { api_keys: keys } = expectStatus(await listApiKeys({ client }), 200, "list keys");
  const listed = keys.find((k) => k.id === key.id);
  assert.ok(listed, "the new key is listed");
  assert.equal(listed.is_active, true);
  assert.ok(key.key.startsWith(listed.prefix), "the listed prefix is the key's start");
  const second = clientFor(key.key);
  const viaNewKey = expectStatus(
    await verifyEmail({ client: second, body: { email: plan.verifyWithNewKey } }),
    200,
    "verify with the new key",
  );
  assertResult(viaNewKey, plan.verifyWithNewKey, "verify with the new key");

  // The ledger: the balance equals the grant minus what was charged, and the new key's charge is attributed to it.
  const balance = expectStatus(await getCreditBalance({ client: second }), 200, "balance");
  assert.equal(balance.user_id, key.user_id);
  const spent = charged(
    [plan.verify, plan.verifyWithNewKey, ...plan.task, ...plan.upload].map((e) => plan.expect[e]!),
  );
  assert.equal(balance.balance, plan.startingCredits - spent, "balance after the charges");
  const ledger = expectStatus(
    await listCreditTransactions({ client, query: { limit: 100 } }),
    200,
    "credit transactions",
  );
  assert.ok(ledger.transactions.length >= 5, "the grant, two verifications, the task and the upload");
  for (const t of ledger.transactions) {
    assert.ok(t.type === "grant" || t.type === "deduction", `transaction type ${t.type}`);
    assert.ok(isoDate(t.created_at), "transaction created_at");
  }
  assert.equal(ledger.transactions[0]!.balance_after, balance.balance, "the newest row carries the balance");
  const attributed = ledger.transactions.filter(
    (t) => t.type === "deduction" && t.metadata?.api_key_id === key.id && t.metadata.source === "api_key",
  );
  assert.equal(attributed.length, 1, "one deduction attributed to the new key");
  assert.equal(attributed[0]!.amount, -1);

  const poor = clientFor(plan.poorKey);
  const storm = clientFor(plan.stormKey);
  await checkRefusals({
    downloadRefusal: async (id) =>
      refusalOf(
        await downloadTaskResults({ client, path: { id }, query: { format: "xlsx" }, parseAs: "blob" }),
      ),
    createTaskRefusal: async (emails) => refusalOf(await createTask({ client: poor, body: { emails } })),
    balanceRefusal: async () => refusalOf(await getCreditBalance({ client: storm })),
  });
}

await main();
console.log(`integrator (${plan.generator}): every step passed`);
