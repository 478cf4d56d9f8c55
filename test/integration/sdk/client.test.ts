// The SDK (sdk/src, imported as source) against the real app listening on a loopback port, the
// real test database, the real worker pool and the mail-world simulator: every call goes through
// openapi-fetch and Node's fetch over HTTP, exactly as a customer's script or the dashboard would.
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import {
  createMailprobeClient,
  isListFilename,
  isMailprobeError,
  MailprobeError,
  quoteUploadTaskFile,
  unwrap,
  uploadForm,
  uploadTaskFile,
  waitForTask,
  type MailprobeClient,
  type VerificationResult,
} from "../../../sdk/src/index.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

let world: MailWorld;
let ctx: TestContext;
let worker: WorkerRole;
let baseUrl: string;

before(async () => {
  world = await startMailWorld({
    domains: [
      {
        name: "acme.test",
        hosts: [{ name: "mx1.acme.test", kind: "postfix" }],
        mailboxes: ["alice", "bob", "carol"],
      },
      // Its banner comes after the realtime budget of the 408 test's server has run out.
      { name: "slow.test", hosts: [{ name: "mx.slow.test", bannerDelayMs: 3000 }], mailboxes: ["sam"] },
    ],
  });
  ctx = await createTestContext({ env: worldEnv(world) });
  await ctx.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  worker = createWorkerRole(ctx.services);
  worker.start();
});

after(async () => {
  await worker?.stop(5_000);
  await ctx?.close();
  await world?.close();
});

/** A client for a user's key, recording the credential headers of every request it sends. */
function clientOf(apiKey: string) {
  const sent: Array<{ authorization: string | null; apiKey: string | null }> = [];
  const client = createMailprobeClient({
    baseUrl,
    apiKey,
    fetch: (input, init) => {
      const request = new Request(input, init);
      sent.push({
        authorization: request.headers.get("authorization"),
        apiKey: request.headers.get("x-api-key"),
      });
      return fetch(request);
    },
  });
  return { client, sent };
}

async function caught(call: Promise<unknown>): Promise<MailprobeError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof MailprobeError, `expected a MailprobeError, got ${String(error)}`);
    return error;
  }
  assert.fail("expected the call to fail");
}

async function lastTransaction(client: MailprobeClient) {
  const { transactions } = await unwrap(
    client.GET("/api/v1/credits/transactions", { params: { query: { limit: 1, offset: 0 } } }),
  );
  assert.ok(transactions[0]);
  return transactions[0];
}

describe("credentials", () => {
  test("a key is sent as X-API-Key; the verification is billed to the key (source api_key)", async () => {
    const user = await ctx.createUser(5);
    const { client, sent } = clientOf(user.apiKey);
    const result = await unwrap(client.POST("/api/v1/verify", { body: { email: "alice@acme.test" } }));
    assert.equal(result.status, "valid");
    assert.equal(result.email, "alice@acme.test");
    assert.equal(result.has_mx_records, true);
    assert.equal(result.host_name, "mx1.acme.test");
    assert.deepEqual(sent[0], { authorization: null, apiKey: user.apiKey });
    const tx = await lastTransaction(client);
    assert.equal(tx.type, "deduction");
    assert.equal(tx.amount, -1);
    assert.equal(tx.balance_after, 4);
    assert.equal(tx.metadata?.source, "api_key");
  });

  test("openSession exchanges the key for a JWT, then every call is a bearer call (source frontend)", async () => {
    const user = await ctx.createUser(5);
    const { client, sent } = clientOf(user.apiKey);
    const session = await client.openSession();
    assert.equal(session.token_type, "Bearer");
    assert.equal(session.user_id, user.userId);
    assert.equal(session.token.split(".").length, 3);
    assert.ok(Date.parse(session.expires_at) > Date.now());
    assert.deepEqual(
      sent[0],
      { authorization: null, apiKey: user.apiKey },
      "the exchange itself uses the key",
    );

    const result = await unwrap(client.POST("/api/v1/verify", { body: { email: "bob@acme.test" } }));
    assert.equal(result.status, "valid");
    assert.deepEqual(sent[1], { authorization: `Bearer ${session.token}`, apiKey: null });
    assert.equal((await lastTransaction(client)).metadata?.source, "frontend");

    client.setToken(null);
    await unwrap(client.GET("/api/v1/credits/balance"));
    assert.deepEqual(sent.at(-1), { authorization: null, apiKey: user.apiKey }, "no token: back to the key");
  });

  test("a token getter is asked on every request (a dashboard reading its session store)", async () => {
    const user = await ctx.createUser(1);
    const session = await createMailprobeClient({ baseUrl, apiKey: user.apiKey }).openSession();
    let reads = 0;
    const client = createMailprobeClient({
      baseUrl,
      token: async () => {
        reads++;
        return session.token;
      },
    });
    const balance = await unwrap(client.GET("/api/v1/credits/balance"));
    assert.deepEqual(balance, { user_id: user.userId, balance: 1 });
    await unwrap(client.GET("/api/v1/credits/balance"));
    assert.equal(reads, 2);
  });

  test("an explicit credential on a call wins over the client's", async () => {
    const a = await ctx.createUser(1);
    const b = await ctx.createUser(2);
    const { client } = clientOf(a.apiKey);
    const balance = await unwrap(
      client.GET("/api/v1/credits/balance", { headers: { "x-api-key": b.apiKey } }),
    );
    assert.equal(balance.user_id, b.userId);
  });
});

describe("errors surface as MailprobeError with the spec's code", () => {
  test("401 UNAUTHORIZED for an unknown key, with the echoed request id", async () => {
    const { client } = clientOf("mpk_not_a_real_key_0000000000000000");
    const error = await caught(
      unwrap(
        client.POST("/api/v1/verify", {
          body: { email: "alice@acme.test" },
          headers: { "x-request-id": "req-sdk-401" },
        }),
      ),
    );
    assert.equal(error.status, 401);
    assert.equal(error.code, "UNAUTHORIZED");
    assert.equal(error.requestId, "req-sdk-401");
    assert.match(error.message, /credentials/i);
    assert.ok(isMailprobeError(error, "UNAUTHORIZED"));
    assert.ok(!isMailprobeError(error, "FORBIDDEN"));
  });

  test("408 VERIFICATION_TIMEOUT: the partial result is on the error's body, typed, and not billed", async (t) => {
    // A second server on the same database whose realtime budget ends before slow.test's banner.
    const slow = await createTestContext({ env: worldEnv(world, { VERIFY_TIMEOUT_MS: "400" }), db: ctx.db });
    t.after(() => slow.close());
    await slow.app.listen({ port: 0, host: "127.0.0.1" });
    const user = await ctx.createUser(2);
    const client = createMailprobeClient({
      baseUrl: `http://127.0.0.1:${(slow.app.server.address() as AddressInfo).port}`,
      apiKey: user.apiKey,
    });
    const error = await caught(unwrap(client.POST("/api/v1/verify", { body: { email: "sam@slow.test" } })));
    assert.equal(error.status, 408);
    assert.ok(isMailprobeError(error, "VERIFICATION_TIMEOUT"));
    // No cast: the code types the body (this line does not compile if `body` stays unknown).
    const partial: VerificationResult = error.body.result;
    assert.equal(partial.email, "sam@slow.test");
    assert.equal(partial.status, "unknown");
    assert.equal(partial.host_name, "mx.slow.test");
    assert.equal(error.body.error.code, "VERIFICATION_TIMEOUT");
    assert.equal((await unwrap(client.GET("/api/v1/credits/balance"))).balance, 2);
  });

  test("401 for a client with no credential at all", async () => {
    const client = createMailprobeClient({ baseUrl });
    const error = await caught(unwrap(client.GET("/api/v1/credits/balance")));
    assert.equal(error.code, "UNAUTHORIZED");
    assert.ok(error.requestId, "the server generates a request id");
  });

  test("402 INSUFFICIENT_CREDITS when the balance is spent, on verify and on a task", async () => {
    const user = await ctx.createUser(0);
    const { client } = clientOf(user.apiKey);
    const verify = await caught(
      unwrap(client.POST("/api/v1/verify", { body: { email: "carol@acme.test" } })),
    );
    assert.equal(verify.status, 402);
    assert.equal(verify.code, "INSUFFICIENT_CREDITS");
    const task = await caught(
      unwrap(client.POST("/api/v1/tasks", { body: { emails: ["carol@acme.test"] } })),
    );
    assert.equal(task.code, "INSUFFICIENT_CREDITS");
  });

  test("400 VALIDATION_ERROR names the field in details", async () => {
    const user = await ctx.createUser(1);
    const { client } = clientOf(user.apiKey);
    const error = await caught(unwrap(client.POST("/api/v1/verify", { body: { email: "no-at-sign" } })));
    assert.equal(error.status, 400);
    assert.equal(error.code, "VALIDATION_ERROR");
    assert.deepEqual(
      error.details.map((d) => d.field),
      ["email"],
    );
  });

  test("404 NOT_FOUND for another user's task (no existence leak)", async () => {
    const owner = clientOf((await ctx.createUser(2)).apiKey).client;
    const other = clientOf((await ctx.createUser(0)).apiKey).client;
    // One success body per operation: unwrap gives the task itself, no narrowing.
    const created = await unwrap(owner.POST("/api/v1/tasks", { body: { emails: ["alice@acme.test"] } }));
    const error = await caught(
      unwrap(other.GET("/api/v1/tasks/{id}", { params: { path: { id: created.id } } })),
    );
    assert.equal(error.code, "NOT_FOUND");
  });
});

describe("batch tasks", () => {
  let user: TestUser;
  let client: MailprobeClient;
  before(async () => {
    user = await ctx.createUser(20);
    client = clientOf(user.apiKey).client;
  });

  test("create from JSON, read back, wait, list jobs, download csv and txt", async () => {
    const body = { emails: ["alice@acme.test", "nobody@acme.test", "alice@acme.test"] };
    const quote = await unwrap(client.POST("/api/v1/tasks/quote", { body }));
    assert.deepEqual([quote.unique_count, quote.credits_required, quote.has_enough_credits], [2, 2, true]);
    const created = await unwrap(client.POST("/api/v1/tasks", { body }));
    assert.equal(created.source, "api_key");
    assert.equal(created.email_count, 3, "email_count is the emails submitted (spec)");
    assert.equal(created.unique_count, 2, "duplicates are queued once");
    assert.equal(created.domain_count, 1);

    const read = await unwrap(client.GET("/api/v1/tasks/{id}", { params: { path: { id: created.id } } }));
    assert.equal(read.id, created.id);
    assert.equal(read.is_file_backed, false);

    const seen: number[] = [];
    const done = await waitForTask(client, created.id, {
      intervalMs: 100,
      signal: AbortSignal.timeout(30_000),
      onProgress: (t) => seen.push(t.metrics.progress),
    });
    assert.ok(done.finished_at);
    assert.equal(done.metrics.progress, 1);
    assert.equal(seen.at(-1), 1);
    assert.equal(done.metrics.verification_status.valid, 1);
    assert.equal(done.metrics.verification_status.invalid, 1);

    const jobs = await unwrap(
      client.GET("/api/v1/tasks/{id}/jobs", {
        params: { path: { id: created.id }, query: { limit: 10, offset: 0 } },
      }),
    );
    assert.equal(jobs.count, 2);
    const statuses = Object.fromEntries(jobs.jobs.map((j) => [j.email_address, j.email?.status]));
    assert.deepEqual(statuses, { "alice@acme.test": "valid", "nobody@acme.test": "invalid" });

    const { data: csv, response } = await client.GET("/api/v1/tasks/{id}/download", {
      params: { path: { id: created.id }, query: { format: "csv" } },
      parseAs: "text",
    });
    assert.equal(response.status, 200);
    assert.match(String(response.headers.get("content-disposition")), /^attachment/);
    const [header, ...rows] = String(csv).trim().split(/\r?\n/);
    assert.match(String(header), /^email,status,/);
    assert.deepEqual(rows.map((r) => r.split(",").slice(0, 2).join(",")).sort(), [
      "alice@acme.test,valid",
      "nobody@acme.test,invalid",
    ]);

    const txt = await unwrap(
      client.GET("/api/v1/tasks/{id}/download", {
        params: { path: { id: created.id }, query: { format: "txt", status: "valid" } },
        parseAs: "text",
      }),
    );
    assert.equal(txt.trim(), "alice@acme.test,valid");

    const listed = await unwrap(
      client.GET("/api/v1/tasks", { params: { query: { limit: 100, offset: 0 } } }),
    );
    assert.ok(listed.tasks.some((t) => t.id === created.id));
  });

  test("upload a csv through uploadTaskFile, check its status, download with the original columns", async () => {
    const csv = "name,address\nAlice,alice@acme.test\nCarol,carol@acme.test\nNobody,ghost@acme.test\n";
    const accepted = await unwrap(
      uploadTaskFile(client, new Blob([csv], { type: "text/csv" }), {
        filename: "leads.csv",
        email_column: "address",
      }),
    );
    assert.equal(accepted.filename, "leads.csv");
    assert.equal(accepted.email_count, 3);
    assert.equal(accepted.status, "processing");

    await waitForTask(client, accepted.task_id, { intervalMs: 100, signal: AbortSignal.timeout(30_000) });
    const upload = await unwrap(
      client.GET("/api/v1/tasks/batch/uploads/{upload_id}", {
        params: { path: { upload_id: accepted.upload_id } },
      }),
    );
    assert.equal(upload.status, "completed");
    assert.equal(upload.task_id, accepted.task_id);

    const file = await unwrap(
      client.GET("/api/v1/tasks/{id}/download", {
        params: { path: { id: accepted.task_id } },
        parseAs: "text",
      }),
    );
    const [header, ...rows] = file.trim().split(/\r?\n/);
    assert.match(String(header), /^name,address,email,status,/);
    assert.deepEqual(
      rows.map((r) => r.split(",").slice(0, 4).join(",")),
      [
        "Alice,alice@acme.test,alice@acme.test,valid",
        "Carol,carol@acme.test,carol@acme.test,valid",
        "Nobody,ghost@acme.test,ghost@acme.test,invalid",
      ],
    );
  });

  test("a File's own name is used; a bare Blob without a filename is refused before any request", async () => {
    const file = new File(["alice@acme.test\n"], "one.txt", { type: "text/plain" });
    const accepted = await unwrap(uploadTaskFile(client, file));
    assert.equal(accepted.filename, "one.txt");
    await assert.rejects(uploadTaskFile(client, new Blob(["x"])), TypeError);
  });

  test("an upload refused by the server is a MailprobeError too", async () => {
    const error = await caught(
      unwrap(uploadTaskFile(client, new Blob(["name,phone\nAlice,+1 555 0100\n"]), { filename: "list.csv" })),
    );
    assert.equal(error.code, "VALIDATION_ERROR");
    assert.equal(error.status, 400);
  });

  test("a list's name must end in .csv, .txt or .xlsx: a type error, and a TypeError before any request", async () => {
    // @ts-expect-error: "list.pdf" is not a ListFilename
    assert.throws(() => uploadForm("list.pdf", "a@acme.test\n"), TypeError);
    await assert.rejects(uploadTaskFile(client, new File(["x"], "list.pdf")), TypeError);
    await assert.rejects(quoteUploadTaskFile(client, new File(["x"], "list")), TypeError);
    assert.equal(isListFilename("Leads.XLSX"), true);
    assert.equal(isListFilename("leads.csv.pdf"), false);
    const form = uploadForm("leads.txt", new TextEncoder().encode("alice@acme.test\n"), {
      webhook_url: "https://hooks.example.com/x",
    });
    assert.deepEqual([...form.keys()], ["webhook_url", "file"]);
    assert.equal((form.get("file") as File).name, "leads.txt");
  });

  test("quoteUploadTaskFile prices the list as uploadTaskFile uploads it, creating nothing", async () => {
    const csv = "email\nalice@acme.test\nALICE@acme.test\nbob@acme.test\n";
    const list = new Blob([csv]);
    const quote = await unwrap(quoteUploadTaskFile(client, list, { filename: "q.csv" }));
    assert.equal(quote.filename, "q.csv");
    assert.deepEqual([quote.submitted_count, quote.unique_count, quote.credits_required], [3, 2, 2]);
    assert.equal(quote.email_column, "email");
    const tasks = await unwrap(client.GET("/api/v1/tasks", { params: { query: { limit: 100, offset: 0 } } }));
    assert.ok(!tasks.tasks.some((t) => t.file?.filename === "q.csv"), "the quote created no task");
    const accepted = await unwrap(uploadTaskFile(client, list, { filename: "q.csv" }));
    assert.equal(accepted.email_count, quote.email_count);
  });
});

describe("API keys", () => {
  test("a custom key lists and creates keys; an n8n key may verify but not manage keys or open sessions", async () => {
    const user = await ctx.createUser(3);
    const { client } = clientOf(user.apiKey);
    const created = await unwrap(
      client.POST("/api/v1/api-keys", { body: { name: "my flow", purpose: "n8n" } }),
    );
    assert.equal(created.purpose, "n8n");
    assert.ok(created.key);

    const { api_keys } = await unwrap(client.GET("/api/v1/api-keys"));
    assert.deepEqual(api_keys.map((k) => k.id).sort(), [user.apiKeyId, created.id].sort());
    const listed = api_keys.find((k) => k.id === created.id);
    assert.equal(listed?.name, "my flow");
    assert.equal(listed?.is_active, true);
    assert.equal(listed?.key ?? null, null, "no plaintext without reveal");

    const n8n = clientOf(created.key).client;
    assert.equal(
      (await unwrap(n8n.POST("/api/v1/verify", { body: { email: "alice@acme.test" } }))).status,
      "valid",
    );
    assert.equal((await caught(unwrap(n8n.GET("/api/v1/api-keys")))).code, "FORBIDDEN");
    const session = await caught(n8n.openSession());
    assert.equal(session.status, 403);
    assert.equal(session.code, "FORBIDDEN");

    const deleted = await unwrap(
      client.DELETE("/api/v1/api-keys/{id}", { params: { path: { id: created.id } } }),
    );
    assert.equal(deleted, undefined);
    assert.equal((await caught(unwrap(n8n.GET("/api/v1/credits/balance")))).code, "UNAUTHORIZED");
  });
});
