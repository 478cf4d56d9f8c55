// What an upload costs the database is bounded by what was uploaded, and what a user keeps by
// their storage budget (docs/storage.md). Once, a 28.6 KB workbook of shared strings,
// under every text limit, stored 40.4 MB (1,481× its size), so a user with no credits filled a
// 400 MB volume in four uploads. Rows are now kept as compressed blocks (files/row-block.ts);
// what would still cost more than 20 times the file is refused; a user's kept uploads fit
// UPLOAD_STORAGE_PER_USER_MB. Both engines.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { packList, parseListFile } from "../../../src/files/index.ts";
import { STORED_BYTES_PER_FILE_BYTE } from "../../../src/files/parse/pack-list.ts";
import { multipart } from "../../support/multipart.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { storedRowsOf } from "../../support/upload-rows.ts";
import { sharedStringBomb, sharedStringsBook } from "../../unit/files/helpers.ts";
import { assertError } from "../api/helpers.ts";

const BUDGET_MB = 2;
let ctx: TestContext;

before(async () => {
  ctx = await createTestContext({ env: { UPLOAD_STORAGE_PER_USER_MB: String(BUDGET_MB) } });
});

after(async () => {
  await ctx?.close();
});

function upload(user: TestUser, filename: string, data: Buffer) {
  const { payload, contentType } = multipart([{ name: "file", filename, data }]);
  return ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks/batch/upload",
    headers: { ...ctx.bearer(user.apiKey), "content-type": contentType },
    payload,
  });
}

/** Bytes the database holds for upload rows: the table, its TOAST and its index, as pages. */
async function rowStorageBytes(): Promise<number> {
  const { rows } = await ctx.db.query<{ n: number }>(
    "select pg_total_relation_size('upload_row_blocks')::bigint as n",
  );
  return Number(rows[0]!.n);
}

async function storedBytesOf(uploadId: string): Promise<number> {
  const { rows } = await ctx.db.query<{ n: number }>("select stored_bytes as n from uploads where id = $1", [
    uploadId,
  ]);
  return Number(rows[0]!.n);
}

/** What packList keeps of `data` (the same code the parsing thread runs): its stored bytes. */
async function storedBytesFor(filename: string, data: Buffer): Promise<number> {
  const parsed = await parseListFile({ filename, data, maxEmails: 10_000, maxTextChars: 20_000_000 });
  assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.problem));
  const packed = packList(parsed.list, data.length);
  assert.ok(packed.ok);
  return packed.list.storedBytes;
}

/** The attack's shape: every row holds two references to one 1,000-character shared string. */
const attackBook = (): Buffer =>
  sharedStringBomb({ rows: 9_000, refsPerRow: 2, longChars: 1_000, addresses: true });

test("the attack's workbook (18 M characters of cells from a ~30 KB file) costs the database ≤ 20 times its size, and downloads whole", async (t) => {
  const book = attackBook();
  const user = await ctx.createUser(10_000);
  const before = await rowStorageBytes();
  const res = await upload(user, "repeats.xlsx", book);
  assert.equal(res.statusCode, 202, res.body);
  const { upload_id: uploadId } = res.json<{ upload_id: string }>();
  const grown = (await rowStorageBytes()) - before;
  const stored = await storedBytesOf(uploadId);
  t.diagnostic(
    `file ${book.length} B; blocks ${stored} B (${(stored / book.length).toFixed(2)}×); table and index grew ${grown} B (${(grown / book.length).toFixed(2)}×)`,
  );
  assert.ok(
    grown <= STORED_BYTES_PER_FILE_BYTE * book.length,
    `the table grew ${grown} B for a ${book.length} B file`,
  );
  const rows = await storedRowsOf(ctx.db, uploadId);
  assert.equal(rows.length, 9_000);
  assert.deepEqual(rows[8_999], [
    ["u9000@example.com", "x".repeat(1_000), "x".repeat(1_000)],
    "u9000@example.com",
  ]);
});

/** A workbook of `strings` random shared strings, each row referring to one of them: deflate's 32 KB window finds few repeats. */
function scatteredBook(strings: number, chars: number, rows: number): Buffer {
  const texts = Array.from({ length: strings }, () => randomBytes(chars).toString("hex").slice(0, chars));
  const sheetRows = Array.from(
    { length: rows },
    (_, i) =>
      `<row r="${i + 1}"><c r="A${i + 1}" t="inlineStr"><is><t>u${i + 1}@example.com</t></is></c><c r="B${i + 1}" t="s"><v>${((i + 1) * 7_919) % strings}</v></c></row>`,
  );
  return sharedStringsBook(texts, sheetRows, rows);
}

test("a workbook whose rows would cost more than 20 times the file to keep is refused, and nothing is written", async () => {
  // 100 random strings of 4,000 characters, 5,000 rows: ~20 M characters that deflate cannot
  // shrink much (each string's repeats lie beyond its 32 KB window), from a file of ~0.3 MB.
  const book = scatteredBook(100, 4_000, 4_900);
  const user = await ctx.createUser(10_000);
  const res = await upload(user, "scattered.xlsx", book);
  const error = assertError(res, 400, "VALIDATION_ERROR");
  assert.equal(error.details?.[0]?.field, "file");
  assert.match(error.details?.[0]?.reason ?? "", /more than 20 times the file's size/);
  const { rows } = await ctx.db.query<{ n: number }>("select count(*) as n from uploads where user_id = $1", [
    user.userId,
  ]);
  assert.equal(Number(rows[0]!.n), 0);
});

test("a user's kept uploads fit the storage budget, to the byte; deleting a task makes room again", async () => {
  const user = await ctx.createUser(100_000);
  const csv = (tag: string) =>
    Buffer.from(
      `email,notes\n${Array.from({ length: 2_000 }, (_, i) => `u${i}@${tag}.test,${randomBytes(96).toString("base64")}`).join("\n")}\n`,
    );
  const first = csv("first");
  const second = csv("second");
  const adding = await storedBytesFor("second.csv", second);
  const budget = BUDGET_MB * 1024 * 1024;

  const res = await upload(user, "first.csv", first);
  assert.equal(res.statusCode, 202, res.body);
  const { upload_id: firstUpload, task_id: firstTask } = res.json<{ upload_id: string; task_id: string }>();
  // What the first upload keeps, set so that the second one lands one byte past the budget.
  await ctx.db.query("update uploads set stored_bytes = $2 where id = $1", [
    firstUpload,
    budget - adding + 1,
  ]);
  const refused = await upload(user, "second.csv", second);
  const error = assertError(refused, 409, "CONFLICT");
  assert.match(error.message, /more than the 2\.0 MiB a user may keep/);
  assert.equal(error.details?.[0]?.reason, "storage_budget_exceeded");

  // Exactly at the budget: accepted.
  await ctx.db.query("update uploads set stored_bytes = $2 where id = $1", [firstUpload, budget - adding]);
  const fits = await upload(user, "second.csv", second);
  assert.equal(fits.statusCode, 202, fits.body);
  const { upload_id: secondUpload, task_id: secondTask } = fits.json<{
    upload_id: string;
    task_id: string;
  }>();
  assert.equal(await storedBytesOf(secondUpload), adding);

  // Full now: a third is refused until a task is deleted (cancelled first: it is still running).
  assertError(await upload(user, "third.csv", csv("third")), 409, "CONFLICT");
  for (const id of [firstTask, secondTask]) {
    await ctx.app.inject({
      method: "POST",
      url: `/api/v1/tasks/${id}/cancel`,
      headers: ctx.bearer(user.apiKey),
    });
    const deleted = await ctx.app.inject({
      method: "DELETE",
      url: `/api/v1/tasks/${id}`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.ok([200, 204].includes(deleted.statusCode), deleted.body);
  }
  assert.equal((await upload(user, "third.csv", csv("third"))).statusCode, 202);

  // Another user's budget is their own.
  const other = await ctx.createUser(100_000);
  assert.equal((await upload(other, "first.csv", first)).statusCode, 202);
});
