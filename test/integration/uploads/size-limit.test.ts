// MAX_UPLOAD_BYTES (DESIGN.md §5 Limits): a file larger than the limit is refused with 400
// VALIDATION_ERROR naming `file` (not 413), and nothing is written. This file has a context of
// its own because the limit is read once, at startup.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

const LIMIT = 2048;
let ctx: TestContext;

before(async () => {
  ctx = await createTestContext({ env: { MAX_UPLOAD_BYTES: String(LIMIT) } });
});

after(async () => {
  await ctx?.close();
});

function upload(user: TestUser, filename: string, data: Buffer, fields: Record<string, string> = {}) {
  const boundary = `----mailprobe-test-${randomBytes(12).toString("hex")}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
    );
  }
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/csv\r\n\r\n`,
    ),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks/batch/upload",
    headers: { ...ctx.bearer(user.apiKey), "content-type": `multipart/form-data; boundary=${boundary}` },
    payload: Buffer.concat(parts),
  });
}

/** A csv of exactly `bytes` bytes: a header, one address per line, padded in the last line's note. */
function csvOf(bytes: number): Buffer {
  const lines = ["email,note"];
  for (let i = 0; lines.join("\n").length + 40 < bytes; i++) lines.push(`u${String(i)}@acme.test,x`);
  const body = `${lines.join("\n")}\n`;
  const pad = bytes - Buffer.byteLength(body) - "last@acme.test,".length - 1;
  assert.ok(pad >= 0);
  const data = Buffer.from(`${body}last@acme.test,${"y".repeat(pad)}\n`);
  assert.equal(data.length, bytes);
  return data;
}

async function writtenBy(user: TestUser): Promise<number[]> {
  const count = async (sql: string): Promise<number> =>
    Number((await ctx.db.query<{ n: number }>(sql, [user.userId])).rows[0]!.n);
  return [
    await count("select count(*) as n from tasks where user_id = $1"),
    await count("select count(*) as n from uploads where user_id = $1"),
    await count("select count(*) as n from email_jobs where user_id = $1"),
  ];
}

test("a file of MAX_UPLOAD_BYTES + 1 bytes → 400 VALIDATION_ERROR naming file (not 413); nothing written", async () => {
  const user = await ctx.createUser(500);
  const res = await upload(user, "big.csv", csvOf(LIMIT + 1));
  assert.equal(res.statusCode, 400, res.body);
  const body = res.json();
  assert.equal(body.error.code, "VALIDATION_ERROR");
  assert.equal(body.error.message, `The file is larger than ${String(LIMIT)} bytes`);
  assert.deepEqual(body.error.details, [
    { field: "file", reason: `must be at most ${String(LIMIT)} bytes (MAX_UPLOAD_BYTES)` },
  ]);
  assert.deepEqual(await writtenBy(user), [0, 0, 0]);
  assert.equal((await ctx.services.credits.balance(user.userId)).balance, 500);
});

test("a file far over the limit (1 MB) is refused the same way, with form fields before it", async () => {
  const user = await ctx.createUser(500);
  const res = await upload(user, "huge.csv", Buffer.alloc(1024 * 1024, "a@acme.test\n"), {
    email_column: "1",
  });
  assert.equal(res.statusCode, 400, res.body);
  assert.equal(res.json().error.code, "VALIDATION_ERROR");
  assert.equal(res.json().error.details[0].field, "file");
  assert.deepEqual(await writtenBy(user), [0, 0, 0]);
});

test("a file of exactly MAX_UPLOAD_BYTES is accepted", async () => {
  const user = await ctx.createUser(500);
  const data = csvOf(LIMIT);
  const res = await upload(user, "exact.csv", data);
  assert.equal(res.statusCode, 202, res.body);
  const lines = data.toString().trim().split("\n").length - 1;
  assert.equal(res.json().email_count, lines);
});
