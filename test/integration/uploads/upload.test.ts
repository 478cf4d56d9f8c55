// POST /api/v1/tasks/batch/upload and GET /api/v1/tasks/batch/uploads/{id} (spec: "File upload",
// Limits; DESIGN.md §5 Upload) against the real app and the real test database. Every list file
// is generated here (or is one of the committed fixtures in test/fixtures/files) and sent as a
// hand-built multipart body, so what is tested is the whole path: multipart → parser → task,
// jobs, reservation and upload rows in one transaction.
//
// The worker pool runs only inside the first test (processing → completed): every later test
// leaves its jobs pending, and nothing ever verifies them (nor sends their webhooks).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { buildZip, streamedXlsxOf, workbookParts, xlsxOf, zerosDeflated } from "../../unit/files/helpers.ts";
import { assertError, type FieldDetail } from "../../support/assert-error.ts";
import { storedRowsOf } from "../../support/upload-rows.ts";
import { multipart, type Part } from "../../support/multipart.ts";

const UPLOAD_URL = "/api/v1/tasks/batch/upload";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING_ID = "00000000-0000-4000-8000-000000000000";
/** "Refused quickly", measured loosely: the real bound is the parser's (well under 2 s). */
const QUICK_MS = 5_000;
const BLOCKED = { code: 554, text: "5.7.1 Client host rejected: blocked using zen.spamhaus.org" };

const fixture = (name: string): Buffer =>
  readFileSync(new URL(`../../fixtures/files/${name}`, import.meta.url));

let world: MailWorld;
let ctx: TestContext;

before(async () => {
  world = await startMailWorld({
    domains: [
      {
        name: "acme.test",
        hosts: [{ name: "mx1.acme.test", kind: "postfix" }],
        mailboxes: ["alice", "bob", "carol", "info"],
      },
      { name: "catch.test", hosts: [{ name: "mx.catch.test" }], catchAll: true },
      { name: "block.test", hosts: [{ name: "mx.block.test", rcptReply: BLOCKED }], mailboxes: ["bea"] },
    ],
  });
  ctx = await createTestContext({ env: worldEnv(world) });
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

// ---------------------------------------------------------------------------------------------

/** POSTs a file (and optional form fields) to the upload route. */
function upload(
  user: TestUser | null,
  filename: string,
  data: Buffer | string,
  fields: Record<string, string> = {},
) {
  return send(user, [
    ...Object.entries(fields).map(([name, value]) => ({ name, value })),
    { name: "file", filename, data },
  ]);
}

function send(user: TestUser | null, parts: readonly Part[]) {
  const { payload, contentType } = multipart(parts);
  return ctx.app.inject({
    method: "POST",
    url: UPLOAD_URL,
    headers: { ...(user ? ctx.bearer(user.apiKey) : {}), "content-type": contentType },
    payload,
  });
}

function get(user: TestUser, url: string) {
  return ctx.app.inject({ method: "GET", url, headers: ctx.bearer(user.apiKey) });
}

interface Accepted {
  upload_id: string;
  task_id: string;
  filename: string;
  email_count: number;
  submitted_count: number;
  unique_count: number;
  duplicate_count: number;
  skipped_count: number;
  status: string;
  message: string;
  uploaded_at: string;
}

async function accepted(res: Awaited<ReturnType<typeof upload>>): Promise<Accepted> {
  assert.equal(res.statusCode, 202, res.body);
  return res.json<Accepted>();
}

// ---------------------------------------------------------------------------------------------
// what the database holds

async function jobsOf(taskId: string): Promise<string[]> {
  const { rows } = await ctx.db.query<{ email_address: string }>(
    "select email_address from email_jobs where task_id = $1 order by position",
    [taskId],
  );
  return rows.map((r) => r.email_address);
}

interface StoredUpload {
  format: string;
  header: string[] | null;
  email_column: number | null;
  column_count: number;
  email_count: number;
}

async function storedUpload(uploadId: string): Promise<StoredUpload> {
  const { rows } = await ctx.db.query<StoredUpload>(
    "select format, header, email_column, column_count, email_count from uploads where id = $1",
    [uploadId],
  );
  assert.ok(rows[0], `upload ${uploadId} not stored`);
  return rows[0];
}

/** The stored original rows: [cells, canonical address or null]. */
async function rowsOf(uploadId: string): Promise<Array<[string[], string | null]>> {
  return storedRowsOf(ctx.db, uploadId);
}

async function balanceOf(user: TestUser): Promise<number> {
  return (await ctx.services.credits.balance(user.userId)).balance;
}

async function reservationsOf(user: TestUser): Promise<number[]> {
  const { rows } = await ctx.db.query<{ amount: number }>(
    "select amount from credit_transactions where user_id = $1 and reason = 'task_reservation' order by created_at",
    [user.userId],
  );
  return rows.map((r) => Number(r.amount));
}

/** Rows the user owns in every table an upload writes. */
async function writtenBy(user: TestUser): Promise<Record<string, number>> {
  const count = async (sql: string): Promise<number> =>
    Number((await ctx.db.query<{ n: number }>(sql, [user.userId])).rows[0]!.n);
  return {
    tasks: await count("select count(*) as n from tasks where user_id = $1"),
    email_jobs: await count("select count(*) as n from email_jobs where user_id = $1"),
    uploads: await count("select count(*) as n from uploads where user_id = $1"),
    upload_rows: await count(
      "select coalesce(sum(r.row_count), 0) as n from upload_row_blocks r join uploads u on u.id = r.upload_id where u.user_id = $1",
    ),
    reservations: await count(
      "select count(*) as n from credit_transactions where user_id = $1 and reason = 'task_reservation'",
    ),
  };
}

const NOTHING = { tasks: 0, email_jobs: 0, uploads: 0, upload_rows: 0, reservations: 0 };

async function elapsed<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await fn();
  return { result, ms: performance.now() - started };
}

// ---------------------------------------------------------------------------------------------
// files

const utf16le = (text: string, bom: boolean): Buffer =>
  Buffer.concat([bom ? Buffer.from([0xff, 0xfe]) : Buffer.alloc(0), Buffer.from(text, "utf16le")]);
const utf16be = (text: string, bom: boolean): Buffer =>
  Buffer.concat([bom ? Buffer.from([0xfe, 0xff]) : Buffer.alloc(0), Buffer.from(text, "utf16le").swap16()]);

/** A small contact list with accents, as csv text (CRLF, as Excel writes it). */
const CONTACTS_CSV =
  "Name,Email,City\r\nJosé Álvarez,jose@acme.test,Málaga\r\nZoë Brandt,zoe@acme.test,Zürich\r\nKim,kim@catch.test,Genève\r\n";
const CONTACT_ROWS: Array<[string[], string]> = [
  [["José Álvarez", "jose@acme.test", "Málaga"], "jose@acme.test"],
  [["Zoë Brandt", "zoe@acme.test", "Zürich"], "zoe@acme.test"],
  [["Kim", "kim@catch.test", "Genève"], "kim@catch.test"],
];

/** n distinct addresses in a csv with a header and two other columns. */
const bigCsv = (n: number): string =>
  `Name,Email,Id\n${Array.from({ length: n }, (_, i) => `Person ${String(i)},p${String(i)}@bulk.test,${String(i)}`).join("\n")}\n`;

const bigXlsx = (n: number): Promise<Buffer> =>
  streamedXlsxOf(
    [
      ["Name", "Email", "Id"],
      ...Array.from({ length: n }, (_, i) => [`Person ${String(i)}`, `p${String(i)}@bulk.test`, i]),
    ],
    { useSharedStrings: true },
  );

// =============================================================================================

describe("upload lifecycle (the first test is the only one with a running worker pool)", () => {
  test("status processing → completed once the workers finish; unknown results are refunded", async () => {
    const user = await ctx.createUser(10);
    const body = await accepted(
      await upload(
        user,
        "lifecycle.csv",
        "Email,Name\nalice@acme.test,A\nnobody@acme.test,N\nkim@catch.test,K\nbea@block.test,B\n",
      ),
    );
    assert.equal(body.email_count, 4);
    const before = await get(user, `/api/v1/tasks/batch/uploads/${body.upload_id}`);
    assert.equal(before.json().status, "processing");
    assert.equal(await balanceOf(user), 6);

    const role = createWorkerRole(ctx.services);
    role.start();
    try {
      await waitForTaskFinished(ctx.db, body.task_id, 60_000);
    } finally {
      await role.stop(1000);
    }
    const after = await get(user, `/api/v1/tasks/batch/uploads/${body.upload_id}`);
    assert.equal(after.statusCode, 200, after.body);
    const s = after.json();
    assert.equal(s.status, "completed");
    assert.equal(s.email_count, 4);
    assert.equal(s.created_at, body.uploaded_at);
    assert.ok(Date.parse(s.updated_at) > Date.parse(s.created_at), `${s.updated_at} vs ${s.created_at}`);

    const task = await get(user, `/api/v1/tasks/${body.task_id}`);
    assert.equal(task.statusCode, 200, task.body);
    assert.equal(task.json().is_file_backed, true);
    assert.equal(task.json().file.status, "completed");
    assert.deepEqual(task.json().metrics.job_status, {
      pending: 0,
      processing: 0,
      completed: 4,
      failed: 0,
      cancelled: 0,
    });
    const {
      role_based: _r,
      disposable_domain_emails: _d,
      ...statuses
    } = task.json().metrics.verification_status;
    assert.deepEqual(statuses, {
      valid: 1,
      invalid: 1,
      catchall: 1,
      invalid_syntax: 0,
      disposable_domain: 0,
      unknown: 1,
    });
    // bea@block.test ends unknown (blocklisted): its credit comes back.
    assert.equal(await balanceOf(user), 7);
  });

  test("202 body is exactly the spec's fields (+ the row counts); the status answer matches it and nests the task", async () => {
    const user = await ctx.createUser(10);
    const res = await upload(user, "Team list.csv", "email\r\nalice@acme.test\r\nbob@acme.test\r\n", {
      webhook_url: "https://hooks.example.com/mailprobe?x=1",
    });
    const body = await accepted(res);
    assert.match(body.upload_id, UUID);
    assert.match(body.task_id, UUID);
    assert.notEqual(body.upload_id, body.task_id);
    assert.ok(!Number.isNaN(Date.parse(body.uploaded_at)), body.uploaded_at);
    assert.deepEqual(body, {
      upload_id: body.upload_id,
      task_id: body.task_id,
      filename: "Team list.csv",
      email_count: 2,
      submitted_count: 2,
      unique_count: 2,
      duplicate_count: 0,
      skipped_count: 0,
      status: "processing",
      message: "2 addresses queued for verification",
      uploaded_at: body.uploaded_at,
    });

    const status = await get(user, `/api/v1/tasks/batch/uploads/${body.upload_id}`);
    assert.equal(status.statusCode, 200, status.body);
    const s = status.json();
    assert.deepEqual(s, {
      upload_id: body.upload_id,
      task_id: body.task_id,
      filename: "Team list.csv",
      email_count: 2,
      submitted_count: 2,
      unique_count: 2,
      duplicate_count: 0,
      skipped_count: 0,
      user_id: user.userId,
      status: "processing",
      created_at: body.uploaded_at,
      updated_at: body.uploaded_at,
      task: {
        id: body.task_id,
        user_id: user.userId,
        webhook_url: "https://hooks.example.com/mailprobe?x=1",
        created_at: body.uploaded_at,
        updated_at: s.task.updated_at,
      },
    });
    assert.ok(Date.parse(s.task.updated_at) >= Date.parse(body.uploaded_at));
    // Never verified (no worker runs after the first test), so the webhook is never sent.
  });

  test("GET /api/v1/tasks lists the upload's task with is_file_backed true and its file object", async () => {
    const user = await ctx.createUser(10);
    const body = await accepted(await upload(user, "listed.txt", "carol@acme.test\n"));
    const res = await get(user, "/api/v1/tasks?is_file_backed=true");
    assert.equal(res.statusCode, 200, res.body);
    const list = res.json();
    assert.equal(list.count, 1);
    const [task] = list.tasks;
    assert.equal(task.id, body.task_id);
    assert.equal(task.user_id, user.userId);
    assert.equal(task.source, "api_key");
    assert.equal(task.is_file_backed, true);
    assert.deepEqual(task.file, {
      upload_id: body.upload_id,
      task_id: body.task_id,
      filename: "listed.txt",
      email_count: 1,
      submitted_count: 1,
      unique_count: 1,
      duplicate_count: 0,
      skipped_count: 0,
      status: "processing",
      created_at: body.uploaded_at,
      updated_at: body.uploaded_at,
    });
    assert.equal(task.metrics.total_email_addresses, 1);
    const json = await get(user, "/api/v1/tasks?is_file_backed=false");
    assert.equal(json.json().count, 0);
  });
});

// =============================================================================================

describe("formats and encodings", () => {
  test("txt UTF-8: an 'email' header, blank lines and a non-address line are skipped, duplicates once", async () => {
    const user = await ctx.createUser(10);
    const text =
      "email\nalice@acme.test\n\n  Bob@ACME.test  \nnot an address\nALICE@acme.test\n\ncarol@acme.test\n";
    const body = await accepted(await upload(user, "list.txt", text));
    assert.equal(body.email_count, 3);
    assert.deepEqual(await jobsOf(body.task_id), ["alice@acme.test", "bob@acme.test", "carol@acme.test"]);
    const stored = await storedUpload(body.upload_id);
    assert.equal(stored.format, "txt");
    assert.deepEqual(stored.header, ["email"]);
    assert.deepEqual(await rowsOf(body.upload_id), [
      [["alice@acme.test"], "alice@acme.test"],
      [["Bob@ACME.test"], "bob@acme.test"],
      [["not an address"], null],
      [["ALICE@acme.test"], "alice@acme.test"],
      [["carol@acme.test"], "carol@acme.test"],
    ]);
  });

  test("txt UTF-16LE with BOM (the committed Notepad fixture)", async () => {
    const user = await ctx.createUser(10);
    const body = await accepted(await upload(user, "list-utf16le-bom.txt", fixture("list-utf16le-bom.txt")));
    assert.equal(body.email_count, 2);
    assert.deepEqual(await jobsOf(body.task_id), ["alice@example.com", "bob@example.com"]);
  });

  const encodings: Array<[string, Buffer]> = [
    ["UTF-8 without BOM", Buffer.from(CONTACTS_CSV, "utf8")],
    ["UTF-8 with BOM", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(CONTACTS_CSV, "utf8")])],
    ["UTF-16LE with BOM", utf16le(CONTACTS_CSV, true)],
    ["UTF-16LE without BOM", utf16le(CONTACTS_CSV, false)],
    ["UTF-16BE with BOM", utf16be(CONTACTS_CSV, true)],
    ["UTF-16BE without BOM", utf16be(CONTACTS_CSV, false)],
    ["Latin-1", Buffer.from(CONTACTS_CSV, "latin1")],
  ];
  for (const [name, data] of encodings) {
    test(`csv ${name}: accents decoded, header found (no BOM in it), email column by header`, async () => {
      const user = await ctx.createUser(10);
      const body = await accepted(await upload(user, "contacts.csv", data));
      assert.equal(body.email_count, 3);
      const stored = await storedUpload(body.upload_id);
      assert.equal(stored.format, "csv");
      assert.deepEqual(stored.header, ["Name", "Email", "City"]);
      assert.equal(stored.email_column, 1);
      assert.equal(stored.column_count, 3);
      assert.deepEqual(await rowsOf(body.upload_id), CONTACT_ROWS);
      assert.deepEqual(await jobsOf(body.task_id), ["jose@acme.test", "zoe@acme.test", "kim@catch.test"]);
    });
  }

  test("csv Windows-1252 with semicolons and quoted fields (committed fixture)", async () => {
    const user = await ctx.createUser(10);
    const body = await accepted(
      await upload(user, "contacts-windows1252-semicolon.csv", fixture("contacts-windows1252-semicolon.csv")),
    );
    assert.equal(body.email_count, 2);
    const stored = await storedUpload(body.upload_id);
    assert.deepEqual(stored.header, ["Nom", "Courriel", "Société"]);
    assert.equal(stored.email_column, 1);
    assert.deepEqual(await rowsOf(body.upload_id), [
      [["François Pérez", "francois.perez@example.fr", "Crédit Agricole"], "francois.perez@example.fr"],
      [["Dupont; Zoé", "zoe.dupont@example.fr", 'Société "Générale"'], "zoe.dupont@example.fr"],
      [["René", "pas une adresse", "—"], null],
    ]);
  });

  test("csv with semicolons (generated, UTF-8): the delimiter is detected", async () => {
    const user = await ctx.createUser(10);
    const csv =
      "Vorname;E-Mail;Firma\nJürgen;juergen@acme.test;Müller, Söhne & Co\nAnna;anna@acme.test;Acme\n";
    const body = await accepted(await upload(user, "kontakte.csv", csv));
    assert.equal(body.email_count, 2);
    assert.deepEqual((await storedUpload(body.upload_id)).header, ["Vorname", "E-Mail", "Firma"]);
    assert.deepEqual(await rowsOf(body.upload_id), [
      [["Jürgen", "juergen@acme.test", "Müller, Söhne & Co"], "juergen@acme.test"],
      [["Anna", "anna@acme.test", "Acme"], "anna@acme.test"],
    ]);
  });

  test("csv without a header row: every row is data, the address column is found", async () => {
    const user = await ctx.createUser(10);
    const csv = "Alice,alice@acme.test,1\nBob,bob@acme.test,2\nNo one,,3\n";
    const body = await accepted(await upload(user, "noheader.csv", csv));
    assert.equal(body.email_count, 2);
    const stored = await storedUpload(body.upload_id);
    assert.equal(stored.header, null);
    assert.equal(stored.email_column, 1);
    assert.deepEqual(await rowsOf(body.upload_id), [
      [["Alice", "alice@acme.test", "1"], "alice@acme.test"],
      [["Bob", "bob@acme.test", "2"], "bob@acme.test"],
      [["No one", "", "3"], null],
    ]);
  });

  // Two address columns: without a choice the "Email"-named one wins; a choice picks the other.
  const TWO_COLUMNS =
    "Name,Email,Work Address\nAnn,ann@home.test,ann@acme.test\nBo,bo@home.test,bo@acme.test\nCy,cy@home.test,\n";
  const columnChoices: Array<[string, Record<string, string>, string[]]> = [
    ["no choice → the Email column", {}, ["ann@home.test", "bo@home.test", "cy@home.test"]],
    ["email_column by name, other case", { email_column: "WORK address" }, ["ann@acme.test", "bo@acme.test"]],
    ["column (alias) by name", { column: "work address" }, ["ann@acme.test", "bo@acme.test"]],
    ["email_column by 1-based index", { email_column: "3" }, ["ann@acme.test", "bo@acme.test"]],
    ["column (alias) by 1-based index", { column: "3" }, ["ann@acme.test", "bo@acme.test"]],
    [
      "email_column index 2 with spaces",
      { email_column: " 2 " },
      ["ann@home.test", "bo@home.test", "cy@home.test"],
    ],
  ];
  for (const [name, fields, expected] of columnChoices) {
    test(`csv column choice: ${name}`, async () => {
      const user = await ctx.createUser(10);
      const body = await accepted(await upload(user, "two.csv", TWO_COLUMNS, fields));
      assert.equal(body.email_count, expected.length);
      assert.deepEqual(await jobsOf(body.task_id), expected);
      assert.deepEqual((await storedUpload(body.upload_id)).header, ["Name", "Email", "Work Address"]);
    });
  }

  test("csv: header and data row with an index-named header ('2' is a name before it is an index)", async () => {
    const user = await ctx.createUser(10);
    const csv = "1,2\nann@home.test,ann@acme.test\n";
    const body = await accepted(await upload(user, "digits.csv", csv, { email_column: "2" }));
    assert.deepEqual(await jobsOf(body.task_id), ["ann@acme.test"]);
  });

  test("xlsx (shared strings, as Excel saves it): typed cells become text, the Email column is found", async () => {
    const user = await ctx.createUser(10);
    const data = await xlsxOf((wb) => {
      const ws = wb.addWorksheet("Contacts");
      ws.addRow(["Name", "Email", "Joined", "Score", "Active"]);
      ws.addRow(["Ann", "ann@acme.test", new Date(Date.UTC(2024, 2, 1)), 12.5, true]);
      ws.addRow(["Bob", { text: "Bob@Acme.test", hyperlink: "mailto:bob@acme.test" }, null, 7, false]);
      ws.addRow(["No address", "n/a", null, 0, false]);
    });
    const body = await accepted(await upload(user, "contacts.xlsx", data));
    assert.equal(body.email_count, 2);
    const stored = await storedUpload(body.upload_id);
    assert.equal(stored.format, "xlsx");
    assert.deepEqual(stored.header, ["Name", "Email", "Joined", "Score", "Active"]);
    assert.deepEqual(await rowsOf(body.upload_id), [
      [["Ann", "ann@acme.test", "2024-03-01", "12.5", "TRUE"], "ann@acme.test"],
      [["Bob", "Bob@Acme.test", "", "7", "FALSE"], "bob@acme.test"],
      [["No address", "n/a", "", "0", "FALSE"], null],
    ]);
  });

  test("xlsx: a formula cell whose cached result is 0 keeps '0' in the stored row (and so in the download)", async () => {
    const user = await ctx.createUser(10);
    const data = await xlsxOf((wb) => {
      const ws = wb.addWorksheet("S");
      ws.addRow(["Email", "Qty", "Left", "Total"]);
      ws.addRow(["ann@acme.test", 3, { formula: "B2-3", result: 0 }, { formula: "B2*2", result: 6 }]);
    });
    const body = await accepted(await upload(user, "stock.xlsx", data));
    assert.deepEqual(await rowsOf(body.upload_id), [[["ann@acme.test", "3", "0", "6"], "ann@acme.test"]]);
  });

  test("xlsx with several sheets: email_column names a header found only on the second sheet", async () => {
    const data = await xlsxOf((wb) => {
      const first = wb.addWorksheet("Summary");
      first.addRow(["Email", "Region"]);
      first.addRow(["first@sheet.test", "EU"]);
      const second = wb.addWorksheet("People");
      second.addRow(["Name", "Contact", "Backup"]);
      second.addRow(["Ann", "ann@acme.test", "ann@backup.test"]);
      second.addRow(["Bo", "bo@acme.test", "bo@backup.test"]);
    });
    const user = await ctx.createUser(10);
    const named = await accepted(await upload(user, "book.xlsx", data, { email_column: "CONTACT" }));
    assert.deepEqual(await jobsOf(named.task_id), ["ann@acme.test", "bo@acme.test"]);
    assert.deepEqual((await storedUpload(named.upload_id)).header, ["Name", "Contact", "Backup"]);
    assert.deepEqual(await rowsOf(named.upload_id), [
      [["Ann", "ann@acme.test", "ann@backup.test"], "ann@acme.test"],
      [["Bo", "bo@acme.test", "bo@backup.test"], "bo@acme.test"],
    ]);
    // The alias works the same way; without a choice the first sheet is the list.
    const alias = await accepted(await upload(user, "book.xlsx", data, { column: "contact" }));
    assert.deepEqual(await jobsOf(alias.task_id), ["ann@acme.test", "bo@acme.test"]);
    const auto = await accepted(await upload(user, "book.xlsx", data));
    assert.deepEqual(await jobsOf(auto.task_id), ["first@sheet.test"]);
  });

  test("xlsx by LibreOffice (committed fixture): dates, IDN domain, invalid cell, duplicate", async () => {
    const user = await ctx.createUser(10);
    const body = await accepted(
      await upload(user, "contacts-libreoffice.xlsx", fixture("contacts-libreoffice.xlsx")),
    );
    assert.equal(body.email_count, 3);
    assert.equal(body.filename, "contacts-libreoffice.xlsx");
    assert.deepEqual(await jobsOf(body.task_id), [
      "jose.alvarez@example.com",
      "zoe.muller@example.org",
      "user@xn--bcher-kva.example",
    ]);
    const stored = await storedUpload(body.upload_id);
    assert.deepEqual(stored.header, ["Name", "E-mail", "Company", "Signed up", "Score"]);
    assert.equal(stored.email_column, 1);
    assert.deepEqual(await rowsOf(body.upload_id), [
      [
        ["José Álvarez", "jose.alvarez@example.com", "Acme Ibérica", "2024-03-01", "12.5"],
        "jose.alvarez@example.com",
      ],
      [["Zoë Müller", "ZOE.MULLER@Example.org", "Müller GmbH", "2024-03-02", "7"], "zoe.muller@example.org"],
      [["Not An Address", "not-an-address", "Nobody Inc", "", "0"], null],
      [
        ["Dup Person", "jose.alvarez@example.com", "Acme Ibérica", "2024-03-04", "3"],
        "jose.alvarez@example.com",
      ],
      [
        ["Ünïcode Name", "user@bücher.example", "Bücher AG", "2024-03-05", "99"],
        "user@xn--bcher-kva.example",
      ],
    ]);
    // The csv LibreOffice converted it from gives the same list.
    const csv = await accepted(
      await upload(user, "contacts-libreoffice.csv", fixture("contacts-libreoffice.csv")),
    );
    assert.deepEqual(await jobsOf(csv.task_id), await jobsOf(body.task_id));
    assert.deepEqual(await rowsOf(csv.upload_id), await rowsOf(body.upload_id));
  });

  test("blank and non-address cells are skipped; duplicates are verified and reserved once", async () => {
    const user = await ctx.createUser(100);
    const csv = [
      "Name,Email",
      "A,alice@acme.test",
      "B,",
      "C,   ",
      "D,not-an-address",
      "E,@acme.test",
      "F, ALICE@ACME.TEST ",
      "G,bob@acme.test",
      ",",
      "H,alice@acme.test",
      "I,Bob@Acme.Test",
      "",
    ].join("\n");
    const body = await accepted(await upload(user, "dups.csv", csv));
    assert.equal(body.email_count, 2);
    // Every stored row accounted for: 9 rows = 5 with an address (2 distinct + 3 repeats) + 4 without.
    assert.deepEqual(
      [body.submitted_count, body.unique_count, body.duplicate_count, body.skipped_count],
      [5, 2, 3, 4],
    );
    assert.equal(
      body.message,
      "2 addresses queued for verification (3 duplicate rows, 4 rows skipped: no address)",
    );
    assert.deepEqual(await jobsOf(body.task_id), ["alice@acme.test", "bob@acme.test"]);
    assert.deepEqual(await reservationsOf(user), [-2]);
    assert.equal(await balanceOf(user), 98);
    // Every non-blank row is kept for the download, linked to its (shared) address.
    assert.deepEqual(
      (await rowsOf(body.upload_id)).map(([cells, email]) => [cells[0], email]),
      [
        ["A", "alice@acme.test"],
        ["B", null],
        ["C", null],
        ["D", null],
        ["E", null],
        ["F", "alice@acme.test"],
        ["G", "bob@acme.test"],
        ["H", "alice@acme.test"],
        ["I", "bob@acme.test"],
      ],
    );
  });

  test("exactly 10,000 distinct addresses (csv) are accepted and reserve 10,000 credits", async () => {
    const user = await ctx.createUser(10_000);
    const body = await accepted(await upload(user, "tenk.csv", bigCsv(10_000)));
    assert.equal(body.email_count, 10_000);
    assert.equal(await balanceOf(user), 0);
    const w = await writtenBy(user);
    assert.deepEqual(w, { tasks: 1, email_jobs: 10_000, uploads: 1, upload_rows: 10_000, reservations: 1 });
  });
});

// =============================================================================================

describe("refusals: 400 VALIDATION_ERROR naming the field, 402, 401; nothing written", () => {
  const goodXlsx = (): Promise<Buffer> => xlsxOf((wb) => wb.addWorksheet("S").addRow(["a@acme.test"]));
  const OLE = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);

  const cases: Array<[string, () => Promise<Part[]>, FieldDetail[]]> = [
    [
      "file missing (fields only)",
      async () => [{ name: "webhook_url", value: "https://hooks.example.com/x" }],
      [{ field: "file", reason: "is required" }],
    ],
    [
      "unsupported extension .pdf",
      async () => [{ name: "file", filename: "list.pdf", data: Buffer.from("%PDF-1.4\n%âãÏÓ\n", "latin1") }],
      [
        {
          field: "file",
          reason: 'Files ending in ".pdf" are not supported; upload a .csv, .txt or .xlsx file.',
        },
      ],
    ],
    [
      "unsupported extension .docx",
      async () => [{ name: "file", filename: "list.docx", data: await goodXlsx() }],
      [
        {
          field: "file",
          reason: 'Files ending in ".docx" are not supported; upload a .csv, .txt or .xlsx file.',
        },
      ],
    ],
    [
      "no extension",
      async () => [{ name: "file", filename: "list", data: "a@acme.test\n" }],
      [{ field: "file", reason: "The file name has no extension; upload a .csv, .txt or .xlsx file." }],
    ],
    [
      "an xlsx renamed .csv",
      async () => [{ name: "file", filename: "list.csv", data: await goodXlsx() }],
      [
        {
          field: "file",
          reason:
            "The file's name ends in .csv but it is an Excel workbook (.xlsx) or another zip archive; save it as CSV from your spreadsheet program, or upload it with its real extension (.xlsx).",
        },
      ],
    ],
    [
      "a text file renamed .xlsx",
      async () => [{ name: "file", filename: "list.xlsx", data: "email\na@acme.test\n" }],
      [
        {
          field: "file",
          reason:
            "The file's name ends in .xlsx but it contains text, not a workbook; if it is a CSV, rename it to .csv.",
        },
      ],
    ],
    [
      "a corrupt zip (an xlsx cut in half)",
      async () => {
        const good = await goodXlsx();
        return [{ name: "file", filename: "list.xlsx", data: good.subarray(0, Math.floor(good.length / 2)) }];
      },
      [
        {
          field: "file",
          reason:
            "The workbook is damaged (its zip structure is unreadable); open it in Excel and save it again.",
        },
      ],
    ],
    [
      "an encrypted workbook (OLE compound file holding EncryptedPackage)",
      async () => [
        {
          name: "file",
          filename: "secret.xlsx",
          data: Buffer.concat([
            OLE,
            Buffer.alloc(504),
            Buffer.from("EncryptionInfo\0EncryptedPackage", "utf16le"),
          ]),
        },
      ],
      [
        {
          field: "file",
          reason:
            "Password-protected workbooks are not supported; remove the password in Excel (File → Info → Protect Workbook) and upload it again.",
        },
      ],
    ],
    [
      "email_column not found (csv)",
      async () => [
        { name: "email_column", value: "Phone" },
        { name: "file", filename: "list.csv", data: "Name,Email\nA,a@acme.test\n" },
      ],
      [{ field: "email_column", reason: 'No column named "Phone"; the header row has: Name, Email.' }],
    ],
    [
      "column (alias) index beyond the last column",
      async () => [
        { name: "column", value: "3" },
        { name: "file", filename: "list.csv", data: "Name,Email\nA,a@acme.test\n" },
      ],
      [{ field: "email_column", reason: "Column 3 does not exist; the file has 2 columns." }],
    ],
    [
      "email_column 0",
      async () => [
        { name: "email_column", value: "0" },
        { name: "file", filename: "list.csv", data: "Name,Email\nA,a@acme.test\n" },
      ],
      [{ field: "email_column", reason: 'Column numbers start at 1; "0" is not a column.' }],
    ],
    [
      "email_column not found on any sheet (xlsx)",
      async () => [
        { name: "email_column", value: "Correo" },
        {
          name: "file",
          filename: "book.xlsx",
          data: await xlsxOf((wb) => {
            wb.addWorksheet("One").addRows([
              ["Name", "Email"],
              ["A", "a@acme.test"],
            ]);
            wb.addWorksheet("Two").addRows([
              ["Who", "Mail"],
              ["B", "b@acme.test"],
            ]);
          }),
        },
      ],
      [
        {
          field: "email_column",
          reason: 'No sheet has a column named "Correo"; the first sheet\'s header row has: Name, Email.',
        },
      ],
    ],
    [
      "email_column for a .txt",
      async () => [
        { name: "email_column", value: "email" },
        { name: "file", filename: "list.txt", data: "email\na@acme.test\n" },
      ],
      [
        {
          field: "email_column",
          reason:
            "email_column applies to .csv and .xlsx files; a .txt file has one address per line, so leave it empty.",
        },
      ],
    ],
    [
      "no valid emails (csv)",
      async () => [{ name: "file", filename: "list.csv", data: "Name,Email\nA,not-an-address\nB,\n" }],
      [{ field: "file", reason: "No cell in the file's 2 rows is a valid email address." }],
    ],
    [
      "no valid emails (empty txt)",
      async () => [{ name: "file", filename: "list.txt", data: "" }],
      [{ field: "file", reason: "The file is empty; it needs one email address per row." }],
    ],
    [
      "header only (csv)",
      async () => [{ name: "file", filename: "list.csv", data: "Name,Email\n" }],
      [{ field: "file", reason: "The file has only a header row; add one email address per row below it." }],
    ],
    [
      "a user_id form field",
      async () => [
        { name: "user_id", value: MISSING_ID },
        { name: "file", filename: "list.csv", data: "email\na@acme.test\n" },
      ],
      [{ field: "user_id", reason: "is not allowed" }],
    ],
    [
      "webhook_url relative",
      async () => [
        { name: "webhook_url", value: "/hooks/done" },
        { name: "file", filename: "list.csv", data: "email\na@acme.test\n" },
      ],
      [{ field: "webhook_url", reason: "must be an absolute URL" }],
    ],
    [
      "webhook_url ftp:",
      async () => [
        { name: "webhook_url", value: "ftp://hooks.example.com/x" },
        { name: "file", filename: "list.csv", data: "email\na@acme.test\n" },
      ],
      [{ field: "webhook_url", reason: "must use http or https" }],
    ],
    [
      "webhook_url loopback",
      async () => [
        { name: "webhook_url", value: "http://127.0.0.1:8080/x" },
        { name: "file", filename: "list.csv", data: "email\na@acme.test\n" },
      ],
      [{ field: "webhook_url", reason: "must not point to a loopback, private or link-local address" }],
    ],
    [
      "the file in a field not named file",
      async () => [{ name: "upload", filename: "list.csv", data: "email\na@acme.test\n" }],
      [{ field: "upload", reason: "unexpected file field" }],
    ],
    [
      "two files",
      async () => [
        { name: "file", filename: "a.csv", data: "email\na@acme.test\n" },
        { name: "file", filename: "b.csv", data: "email\nb@acme.test\n" },
      ],
      [{ field: "file", reason: "send exactly one file" }],
    ],
  ];
  for (const [name, parts, details] of cases) {
    test(`${name} → 400 naming ${details[0]!.field}`, async () => {
      const user = await ctx.createUser(100);
      const res = await send(user, await parts());
      assertError(res, 400, "VALIDATION_ERROR", details);
      assert.deepEqual(await writtenBy(user), NOTHING);
      assert.equal(await balanceOf(user), 100);
    });
  }

  test("a JSON body instead of multipart → 400 naming content-type", async () => {
    const user = await ctx.createUser(100);
    const res = await ctx.app.inject({
      method: "POST",
      url: UPLOAD_URL,
      headers: ctx.bearer(user.apiKey),
      payload: { emails: ["a@acme.test"], file: "a@acme.test" },
    });
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "content-type", reason: "must be multipart/form-data" },
    ]);
    assert.deepEqual(await writtenBy(user), NOTHING);
  });

  test("multipart/form-data without a boundary → 400 naming content-type", async () => {
    const user = await ctx.createUser(100);
    const { payload } = multipart([{ name: "file", filename: "list.csv", data: "email\na@acme.test\n" }]);
    const res = await ctx.app.inject({
      method: "POST",
      url: UPLOAD_URL,
      headers: { ...ctx.bearer(user.apiKey), "content-type": "multipart/form-data" },
      payload,
    });
    assert.deepEqual(await writtenBy(user), NOTHING);
    assertError(res, 400, "VALIDATION_ERROR");
    assert.equal(res.json().error.details[0].field, "content-type");
  });

  test("a truncated multipart body (no closing boundary) → 400 naming body", async () => {
    const user = await ctx.createUser(100);
    const { payload, contentType } = multipart([
      { name: "file", filename: "list.csv", data: "email\na@acme.test\n" },
    ]);
    const res = await ctx.app.inject({
      method: "POST",
      url: UPLOAD_URL,
      headers: { ...ctx.bearer(user.apiKey), "content-type": contentType },
      payload: payload.subarray(0, payload.length - 12),
    });
    assert.deepEqual(await writtenBy(user), NOTHING);
    assertError(res, 400, "VALIDATION_ERROR");
    assert.equal(res.json().error.details[0].field, "body");
  });

  test("more than 10 form fields → 400 naming body", async () => {
    const user = await ctx.createUser(100);
    const res = await send(user, [
      ...Array.from({ length: 11 }, (_, i) => ({ name: `extra${String(i)}`, value: "x" })),
      { name: "file", filename: "list.csv", data: "email\na@acme.test\n" },
    ]);
    assertError(res, 400, "VALIDATION_ERROR", [{ field: "body", reason: "has too many fields" }]);
    assert.deepEqual(await writtenBy(user), NOTHING);
  });

  const tooMany =
    "The file has more than 10,000 addresses (stopped reading at 10,002 rows); a list holds at most 10,000. Split it into smaller files.";

  test("10,001 distinct addresses in a csv → 400 naming file, refused quickly", async (t) => {
    const user = await ctx.createUser(20_000);
    const csv = bigCsv(10_001);
    const { result, ms } = await elapsed(() => upload(user, "big.csv", csv));
    assertError(result, 400, "VALIDATION_ERROR", [{ field: "file", reason: tooMany }]);
    assert.ok(ms < QUICK_MS, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
    assert.deepEqual(await writtenBy(user), NOTHING);
    assert.equal(await balanceOf(user), 20_000);
  });

  test("10,001 distinct addresses in an xlsx → 400 naming file, refused quickly", async (t) => {
    const user = await ctx.createUser(20_000);
    const data = await bigXlsx(10_001);
    const { result, ms } = await elapsed(() => upload(user, "big.xlsx", data));
    assertError(result, 400, "VALIDATION_ERROR", [{ field: "file", reason: tooMany }]);
    assert.ok(ms < QUICK_MS, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
    assert.deepEqual(await writtenBy(user), NOTHING);
  });

  test("10,001 rows holding 10,000 distinct addresses (one duplicate) are accepted", async () => {
    const user = await ctx.createUser(10_000);
    const csv = `${bigCsv(10_000)}Again,p0@bulk.test,0\n`;
    const body = await accepted(await upload(user, "dup.csv", csv));
    assert.equal(body.email_count, 10_000);
  });

  test("a zip bomb (500 MB of zeros in a 0.5 MB workbook) → 400 naming file, refused quickly", async (t) => {
    const bomb = buildZip([
      ...workbookParts(["S"]),
      {
        name: "xl/worksheets/sheet1.xml",
        body: zerosDeflated(500),
        method: 8,
        declaredSize: 500 * 1024 * 1024,
      },
    ]);
    assert.ok(bomb.length < 1024 * 1024, `bomb is ${String(bomb.length)} bytes`);
    const user = await ctx.createUser(100);
    const { result, ms } = await elapsed(() => upload(user, "bomb.xlsx", bomb));
    assertError(result, 400, "VALIDATION_ERROR", [
      {
        field: "file",
        reason:
          "The workbook expands to more than 200 MB; that is far more than a 10,000-address list. Save only the sheet with the addresses, or upload a CSV.",
      },
    ]);
    assert.ok(ms < QUICK_MS, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
    assert.deepEqual(await writtenBy(user), NOTHING);
  });

  test("a lying zip bomb (declares 2 KB, inflates to 500 MB) → 400 naming file, refused quickly", async (t) => {
    const liar = buildZip([
      ...workbookParts(["S"]),
      { name: "xl/worksheets/sheet1.xml", body: zerosDeflated(500), method: 8, declaredSize: 2048 },
    ]);
    const user = await ctx.createUser(100);
    const { result, ms } = await elapsed(() => upload(user, "liar.xlsx", liar));
    assertError(result, 400, "VALIDATION_ERROR", [
      {
        field: "file",
        reason:
          'The workbook part "xl/worksheets/sheet1.xml" expands beyond its declared size; it was refused as a possible zip bomb.',
      },
    ]);
    assert.ok(ms < QUICK_MS, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`refused in ${ms.toFixed(0)} ms`);
    assert.deepEqual(await writtenBy(user), NOTHING);
  });

  test("402 INSUFFICIENT_CREDITS when the balance is below the distinct count; nothing written", async () => {
    const user = await ctx.createUser(2);
    const csv = "email\nalice@acme.test\nbob@acme.test\nALICE@acme.test\ncarol@acme.test\n";
    const res = await upload(user, "short.csv", csv);
    assertError(res, 402, "INSUFFICIENT_CREDITS");
    assert.equal(res.json().error.message, "Insufficient credits: the task needs 3, the balance is 2");
    assert.deepEqual(await writtenBy(user), NOTHING);
    assert.equal(await balanceOf(user), 2);
    // Exactly enough for the distinct addresses is fine.
    const ok = await accepted(
      await upload(user, "exact.csv", "email\nalice@acme.test\nALICE@acme.test\nbob@acme.test\n"),
    );
    assert.equal(ok.email_count, 2);
    assert.equal(await balanceOf(user), 0);
  });

  test("401 UNAUTHORIZED without credentials", async () => {
    assertError(await upload(null, "list.csv", "email\na@acme.test\n"), 401, "UNAUTHORIZED");
  });
});

// =============================================================================================

describe("GET /api/v1/tasks/batch/uploads/{upload_id}: errors", () => {
  test("403 FORBIDDEN for another user's upload", async () => {
    const owner = await ctx.createUser(5);
    const other = await ctx.createUser(5);
    const body = await accepted(await upload(owner, "mine.txt", "alice@acme.test\n"));
    assertError(await get(other, `/api/v1/tasks/batch/uploads/${body.upload_id}`), 403, "FORBIDDEN");
  });

  test("404 NOT_FOUND for an unknown upload (and for a task id, which is not an upload id)", async () => {
    const user = await ctx.createUser(5);
    assertError(await get(user, `/api/v1/tasks/batch/uploads/${MISSING_ID}`), 404, "NOT_FOUND");
    const body = await accepted(await upload(user, "mine.txt", "alice@acme.test\n"));
    assertError(await get(user, `/api/v1/tasks/batch/uploads/${body.task_id}`), 404, "NOT_FOUND");
  });

  test("400 VALIDATION_ERROR for an id that is not a UUID", async () => {
    const user = await ctx.createUser(5);
    assertError(await get(user, "/api/v1/tasks/batch/uploads/not-a-uuid"), 400, "VALIDATION_ERROR", [
      { field: "upload_id", reason: "must be a valid uuid" },
    ]);
  });

  test("401 UNAUTHORIZED without credentials", async () => {
    const res = await ctx.app.inject({ method: "GET", url: `/api/v1/tasks/batch/uploads/${MISSING_ID}` });
    assertError(res, 401, "UNAUTHORIZED");
  });
});
