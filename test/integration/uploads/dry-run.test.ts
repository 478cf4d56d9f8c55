// POST /api/v1/tasks/batch/upload/quote (DESIGN §5: a quote prices an upload without creating
// it): the counts equal the real upload's on the same file, nothing is written to any table, too
// little credit is a 200 with the figures (the real call's 402), bad input gets the real call's
// 400, the quote passes through the same admission and size limits, and `dry_run` on the upload
// (its former way in, query or form field) is a 400 naming the quote.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { assertError } from "../../support/assert-error.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { rowCounts } from "../../support/row-counts.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { multipart, type Part } from "../../support/multipart.ts";
import { xlsxOf } from "../../unit/files/helpers.ts";
import type { UploadQuote } from "../../../sdk/src/index.ts";

const UPLOAD_URL = "/api/v1/tasks/batch/upload";
const MAX_UPLOAD_BYTES = 64 * 1024;

let world: MailWorld;
let ctx: TestContext;

before(async () => {
  world = await startMailWorld({
    domains: [
      {
        name: "acme.test",
        hosts: [{ name: "mx1.acme.test", kind: "postfix" }],
        mailboxes: ["alice", "bob", "carol"],
      },
    ],
  });
  ctx = await createTestContext({
    env: worldEnv(world, {
      MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES),
      UPLOADS_MAX_IN_PROGRESS_PER_USER: "1",
    }),
  });
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

// Two rows skipped (blank, not an address), two duplicates (case), two RFC-invalid addresses,
// two distinct sandbox addresses: 9 submitted, 7 unique, 5 billable.
const LIST_CSV = [
  "name,email,phone",
  "Alice,alice@acme.test,+1 555 0100",
  "Alice again,ALICE@acme.test,+1 555 0101",
  "Bob,bob@acme.test,",
  "No address,,+1 555 0102",
  "Junk,not an address,",
  "Dots,john..doe@acme.test,",
  "Lead,.lead@acme.test,",
  "Sandbox,valid@sandbox.mailprobe.invalid,",
  "Sandbox again,VALID@sandbox.mailprobe.invalid,",
  "Sandbox two,invalid@sandbox.mailprobe.invalid,",
  "Carol,carol@acme.test,",
  "",
].join("\n");

interface Request {
  /** UPLOAD_URL unless given. */
  url?: string;
  filename?: string;
  data?: Buffer | string;
  fields?: Record<string, string>;
  query?: string;
  key?: string | null;
  headers?: Record<string, string>;
}

function send(user: TestUser | null, r: Request) {
  const parts: Part[] = Object.entries(r.fields ?? {}).map(([name, value]) => ({ name, value }));
  if (r.data !== undefined) parts.push({ name: "file", filename: r.filename ?? "list.csv", data: r.data });
  const { payload, contentType } = multipart(parts);
  const key = r.key === undefined ? user?.apiKey : r.key;
  return ctx.app.inject({
    method: "POST",
    url: `${r.url ?? UPLOAD_URL}${r.query ?? ""}`,
    headers: { ...(key ? ctx.bearer(key) : {}), "content-type": contentType, ...r.headers },
    payload,
  });
}

const QUOTE_URL = `${UPLOAD_URL}/quote`;
const priceOf = (user: TestUser | null, r: Request) => send(user, { ...r, url: QUOTE_URL });

/** The 200 of the quote, as the SDK types it from the document. */
type QuoteReply = UploadQuote;

describe("upload quote", () => {
  test("counts equal the real upload's on the same file, and the quote creates nothing", async () => {
    const user = await ctx.createUser(100);
    const before = await rowCounts(ctx.db);
    const priced = await priceOf(user, {
      data: LIST_CSV,
      fields: { webhook_url: "https://hooks.example.com/x" },
    });
    assert.equal(priced.statusCode, 200, priced.body);
    const quote = priced.json<QuoteReply>();
    assert.deepEqual(await rowCounts(ctx.db), before);
    assert.deepEqual(quote, {
      filename: "list.csv",
      email_count: 7,
      submitted_count: 9,
      unique_count: 7,
      duplicate_count: 2,
      skipped_count: 2,
      domain_count: 2,
      invalid_syntax_count: 2,
      sandbox_count: 2,
      credits_required: 5,
      balance: 100,
      has_enough_credits: true,
      sheet: null,
      email_column: "email",
    });

    const real = await send(user, { data: LIST_CSV, fields: { webhook_url: "https://hooks.example.com/x" } });
    assert.equal(real.statusCode, 202, real.body);
    const accepted = real.json<Record<string, unknown>>();
    for (const field of [
      "email_count",
      "submitted_count",
      "unique_count",
      "duplicate_count",
      "skipped_count",
    ] as const) {
      assert.equal(accepted[field], quote[field], field);
    }
    const { rows } = await ctx.db.query<{ amount: number }>(
      "select amount from credit_transactions where user_id = $1 and reason = 'task_reservation'",
      [user.userId],
    );
    assert.deepEqual(
      rows.map((r) => -Number(r.amount)),
      [quote.credits_required],
    );

    const role = createWorkerRole(ctx.services);
    role.start();
    try {
      await waitForTaskFinished(ctx.db, String(accepted.task_id), 60_000);
    } finally {
      await role.stop(1000);
    }
    const task = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${String(accepted.task_id)}`,
      headers: ctx.bearer(user.apiKey),
    });
    const metrics = task.json<{ metrics: { verification_status: { invalid_syntax: number } } }>();
    assert.equal(metrics.metrics.verification_status.invalid_syntax, quote.invalid_syntax_count);
    const stored = await ctx.db.query<{ domain_count: number }>(
      "select domain_count from tasks where id = $1",
      [accepted.task_id],
    );
    assert.equal(Number(stored.rows[0]!.domain_count), quote.domain_count);
  });

  test("a workbook: the quote names the sheet and column; two lists are refused naming them; sheet chooses", async () => {
    const user = await ctx.createUser(100);
    const data = await xlsxOf((wb) => {
      wb.addWorksheet("Read me").addRow(["Questions: help@acme.test"]);
      const contacts = wb.addWorksheet("Contacts");
      contacts.addRow(["Name", "E-mail"]);
      contacts.addRow(["Alice", "alice@acme.test"]);
      contacts.addRow(["Bob", "bob@acme.test"]);
      const old = wb.addWorksheet("Old leads");
      old.addRow(["Email"]);
      old.addRow(["carol@acme.test"]);
    });
    const before = await rowCounts(ctx.db);
    const ambiguous = await priceOf(user, { filename: "crm.xlsx", data });
    assertError(ambiguous, 400, "VALIDATION_ERROR", [
      {
        field: "sheet",
        reason:
          'The workbook has addresses on 2 sheets: "Contacts" (column E-mail), "Old leads" (column Email). ' +
          "Choose one with the sheet field (sheet=Contacts), or save the list on a sheet of its own.",
      },
    ]);
    const real = await send(user, { filename: "crm.xlsx", data });
    assert.equal(real.statusCode, 400, real.body);
    assert.deepEqual(await rowCounts(ctx.db), before);

    const priced = await priceOf(user, { filename: "crm.xlsx", data, fields: { sheet: "Contacts" } });
    assert.equal(priced.statusCode, 200, priced.body);
    const quote = priced.json<QuoteReply>();
    assert.equal(quote.sheet, "Contacts");
    assert.equal(quote.email_column, "E-mail");
    assert.equal(quote.credits_required, 2);
    const missing = await priceOf(user, { filename: "crm.xlsx", data, fields: { sheet: "Leads" } });
    assertError(missing, 400, "VALIDATION_ERROR", [
      {
        field: "sheet",
        reason: 'The workbook has no sheet named "Leads"; its sheets are "Read me", "Contacts", "Old leads".',
      },
    ]);
    const csv = await priceOf(user, { data: LIST_CSV, fields: { sheet: "Contacts" } });
    assertError(csv, 400, "VALIDATION_ERROR", [
      {
        field: "sheet",
        reason: "sheet applies to .xlsx workbooks; a .csv file has no sheets, so leave it empty.",
      },
    ]);
    const accepted = await send(user, { filename: "crm.xlsx", data, fields: { sheet: "Old leads" } });
    assert.equal(accepted.statusCode, 202, accepted.body);
    assert.equal(accepted.json<{ email_count: number }>().email_count, 1);
  });

  test("dry_run on the upload, as a query parameter or a form field of any value, is a 400 naming the quote", async () => {
    const user = await ctx.createUser(100);
    const before = await rowCounts(ctx.db);
    const moved = [
      {
        field: "dry_run",
        reason:
          "was replaced by POST /api/v1/tasks/batch/upload/quote (same request, answers the price and creates nothing)",
      },
    ];
    for (const value of ["true", "false", "yes"]) {
      assertError(
        await send(user, { data: LIST_CSV, fields: { dry_run: value } }),
        400,
        "VALIDATION_ERROR",
        moved,
      );
      assertError(
        await send(user, { data: LIST_CSV, query: `?dry_run=${value}` }),
        400,
        "VALIDATION_ERROR",
        moved,
      );
    }
    assert.deepEqual(await rowCounts(ctx.db), before);
    // The place the refused uploads held is free again: an ordinary upload goes through.
    assert.equal((await send(user, { data: LIST_CSV })).statusCode, 202);
  });

  test("too little credit: 200 with the figures, where the real upload is a 402", async () => {
    const user = await ctx.createUser(3);
    const before = await rowCounts(ctx.db);
    const priced = await priceOf(user, { data: LIST_CSV });
    assert.equal(priced.statusCode, 200, priced.body);
    const quote = priced.json<QuoteReply>();
    assert.equal(quote.credits_required, 5);
    assert.equal(quote.balance, 3);
    assert.equal(quote.has_enough_credits, false);
    assert.deepEqual(await rowCounts(ctx.db), before);
    assertError(await send(user, { data: LIST_CSV }), 402, "INSUFFICIENT_CREDITS");
    assert.deepEqual(await rowCounts(ctx.db), before);
  });

  test("an Idempotency-Key is neither recorded nor replayed by a quote", async () => {
    const user = await ctx.createUser(100);
    const headers = { "idempotency-key": `dry-${randomBytes(6).toString("hex")}` };
    const before = await rowCounts(ctx.db);
    assert.equal((await priceOf(user, { data: LIST_CSV, headers })).statusCode, 200);
    assert.deepEqual(await rowCounts(ctx.db), before);
    // The key is still unused: the real upload with it creates a task.
    assert.equal((await send(user, { data: LIST_CSV, headers })).statusCode, 202);
    assertError(
      await priceOf(user, { data: LIST_CSV, headers: { "idempotency-key": " " } }),
      400,
      "VALIDATION_ERROR",
    );
  });

  test("bad input gets the real upload's error, and creates nothing", async () => {
    const user = await ctx.createUser(100);
    const cases: Array<[string, Request]> = [
      ["no file", { fields: { webhook_url: "https://hooks.example.com/x" } }],
      ["user_id field", { data: LIST_CSV, fields: { user_id: user.userId } }],
      ["loopback webhook", { data: LIST_CSV, fields: { webhook_url: "http://127.0.0.1:9/hook" } }],
      ["localhost webhook", { data: LIST_CSV, fields: { webhook_url: "http://localhost/hook" } }],
      ["not a URL", { data: LIST_CSV, fields: { webhook_url: "hooks.example.com" } }],
      ["unknown column", { data: LIST_CSV, fields: { email_column: "mail" } }],
      ["no address at all", { data: "name,phone\nAlice,+1 555 0100\n" }],
      ["not a list format", { filename: "list.pdf", data: "%PDF-1.4\n" }],
      ["over MAX_UPLOAD_BYTES", { data: `email\n${"a@acme.test\n".repeat(MAX_UPLOAD_BYTES / 10)}` }],
      ["no credentials", { data: LIST_CSV, key: null }],
      ["unknown key", { data: LIST_CSV, key: "mp_live_not-a-real-key" }],
    ];
    const before = await rowCounts(ctx.db);
    for (const [name, r] of cases) {
      const real = await send(user, r);
      const priced = await priceOf(user, r);
      assert.ok(real.statusCode >= 400, `${name}: the real upload answered ${real.statusCode}`);
      assert.equal(priced.statusCode, real.statusCode, `${name}: ${priced.body}`);
      const errorOf = (res: typeof priced) =>
        res.json<{ error: { code: string; message: string; details?: unknown } }>().error;
      const { code, message, details } = errorOf(real);
      assert.deepEqual(errorOf(priced), { code, message, ...(details ? { details } : {}) }, name);
    }
    assert.deepEqual(await rowCounts(ctx.db), before);
  });

  test("integration keys may ask for a quote as they may upload (DESIGN §5 key scopes)", async () => {
    const user = await ctx.createUser(100);
    const created = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/api-keys",
      headers: ctx.bearer(user.apiKey),
      payload: { name: "sheets", purpose: "google sheets" },
    });
    assert.equal(created.statusCode, 201, created.body);
    const key = created.json<{ key: string }>().key;
    const priced = await priceOf(user, { data: LIST_CSV, key });
    assert.equal(priced.statusCode, 200, priced.body);
    assert.equal(priced.json<QuoteReply>().balance, 100);
  });

  test("a quote holds an upload place while its file arrives and is parsed, and frees it", async () => {
    const user = await ctx.createUser(100);
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = ctx.app.server.address() as AddressInfo;
    const { payload, contentType } = multipart([{ name: "file", filename: "list.csv", data: LIST_CSV }]);
    let answered!: (v: { statusCode: number; body: string }) => void;
    const answer = new Promise<{ statusCode: number; body: string }>((r) => (answered = r));
    const slow = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path: QUOTE_URL,
        method: "POST",
        headers: {
          ...ctx.bearer(user.apiKey),
          "content-type": contentType,
          "content-length": payload.length,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => answered({ statusCode: res.statusCode ?? 0, body: text }));
      },
    );
    slow.write(payload.subarray(0, 40));
    for (let i = 0; i < 200 && ctx.services.uploads.inProgress === 0; i++) await delay(10);
    assert.equal(ctx.services.uploads.inProgress, 1);
    // UPLOADS_MAX_IN_PROGRESS_PER_USER=1: the place is the quote's, as a real upload's would be.
    assertError(await priceOf(user, { data: LIST_CSV }), 429, "RATE_LIMITED");
    slow.end(payload.subarray(40));
    const done = await answer;
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(ctx.services.uploads.inProgress, 0);
    assert.equal((await priceOf(user, { data: LIST_CSV })).statusCode, 200);
  });
});
