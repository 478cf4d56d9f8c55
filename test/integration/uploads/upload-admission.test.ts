// Uploads a client can retry safely: an Idempotency-Key makes a retry return the first upload
// (billed once, even when the retries race), and the uploads in progress are capped per user
// (429) and per process (503), both answered with Retry-After before the body is read.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import { assertError } from "../../support/assert-error.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

const UPLOAD_URL = "/api/v1/tasks/batch/upload";

let ctx: TestContext;
let base = "";

before(async () => {
  ctx = await createTestContext({
    env: { UPLOADS_MAX_IN_PROGRESS: "2", UPLOADS_MAX_IN_PROGRESS_PER_USER: "1" },
  });
  await ctx.app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
});

after(async () => {
  await ctx?.close();
});

function form(filename: string, data: string, fields: Record<string, string> = {}) {
  const boundary = `----mailprobe-admission-${randomBytes(8).toString("hex")}`;
  const parts = Object.entries(fields).map(
    ([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
  );
  const body = Buffer.from(
    parts.join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
      `Content-Type: text/csv\r\n\r\n${data}\r\n--${boundary}--\r\n`,
  );
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

async function upload(user: TestUser, data: string, headers: Record<string, string> = {}) {
  const { body, type } = form("list.csv", data);
  const res = await fetch(base + UPLOAD_URL, {
    method: "POST",
    headers: { authorization: `Bearer ${user.apiKey}`, "content-type": type, ...headers },
    body,
  });
  return { statusCode: res.status, headers: res.headers, body: await res.text() };
}

const asInject = (r: Awaited<ReturnType<typeof upload>>) => ({
  statusCode: r.statusCode,
  headers: Object.fromEntries(r.headers),
  body: r.body,
  json: <T>() => JSON.parse(r.body) as T,
});

async function ledgerOf(user: TestUser): Promise<{ reservations: number; tasks: number; exact: boolean }> {
  const q = async (sql: string) => Number((await ctx.db.query<{ n: number }>(sql, [user.userId])).rows[0]!.n);
  const sum = await q("select coalesce(sum(amount), 0) as n from credit_transactions where user_id = $1");
  const balance = await q("select balance as n from users where id = $1");
  return {
    reservations: await q(
      "select count(*) as n from credit_transactions where user_id = $1 and reason = 'task_reservation'",
    ),
    tasks: await q("select count(*) as n from tasks where user_id = $1"),
    exact: sum === balance,
  };
}

/**
 * Starts an upload whose body stays unfinished until `finish` is called: the upload holds its
 * place among those in progress meanwhile.
 */
function slowUpload(user: TestUser, data: string) {
  const { body, type } = form("slow.csv", data);
  const url = new URL(base + UPLOAD_URL);
  let resolveAnswer!: (v: { statusCode: number; body: string }) => void;
  const answer = new Promise<{ statusCode: number; body: string }>((r) => (resolveAnswer = r));
  const req = request(
    {
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      headers: {
        authorization: `Bearer ${user.apiKey}`,
        "content-type": type,
        "content-length": body.length,
      },
    },
    (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolveAnswer({ statusCode: res.statusCode ?? 0, body: text }));
    },
  );
  req.write(body.subarray(0, 40));
  return {
    answer,
    finish() {
      req.end(body.subarray(40));
    },
  };
}

/** Waits until the server counts `n` uploads in progress (the slow one reached the handler). */
async function untilInProgress(n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (ctx.services.uploads.inProgress === n) return;
    await delay(10);
  }
  assert.fail(`uploads in progress: ${String(ctx.services.uploads.inProgress)}, expected ${String(n)}`);
}

describe("Idempotency-Key on uploads", () => {
  test("a retry with the same key and file returns the first upload; reserved once", async () => {
    const user = await ctx.createUser(100);
    const key = { "idempotency-key": `upload-${randomBytes(6).toString("hex")}` };
    const first = await upload(user, "email\na@acme.test\nb@acme.test\n", key);
    assert.equal(first.statusCode, 202, first.body);
    const again = await upload(user, "email\na@acme.test\nb@acme.test\n", key);
    assert.equal(again.statusCode, 202, again.body);
    const [a, b] = [JSON.parse(first.body), JSON.parse(again.body)] as Array<{
      upload_id: string;
      task_id: string;
    }>;
    assert.equal(b!.upload_id, a!.upload_id);
    assert.equal(b!.task_id, a!.task_id);
    assert.deepEqual(await ledgerOf(user), { reservations: 1, tasks: 1, exact: true });
    assert.equal((await ctx.services.credits.balance(user.userId)).balance, 98);
  });

  test("the same key with another file → 400 naming Idempotency-Key; nothing more written", async () => {
    const user = await ctx.createUser(100);
    const key = { "idempotency-key": "same-key" };
    assert.equal((await upload(user, "email\na@acme.test\n", key)).statusCode, 202);
    const err = assertError(
      asInject(await upload(user, "email\nz@acme.test\n", key)),
      400,
      "VALIDATION_ERROR",
    );
    assert.deepEqual(
      err.details?.map((d) => d.field),
      ["Idempotency-Key"],
    );
    assert.deepEqual(await ledgerOf(user), { reservations: 1, tasks: 1, exact: true });
  });

  test("an invalid key (over 255 characters) → 400 before the file is read", async () => {
    const user = await ctx.createUser(100);
    const err = assertError(
      asInject(await upload(user, "email\na@acme.test\n", { "idempotency-key": "k".repeat(256) })),
      400,
      "VALIDATION_ERROR",
    );
    assert.deepEqual(
      err.details?.map((d) => d.field),
      ["Idempotency-Key"],
    );
    assert.deepEqual(await ledgerOf(user), { reservations: 0, tasks: 0, exact: true });
  });

  test("without a key, the same file twice is two uploads", async () => {
    const user = await ctx.createUser(100);
    assert.equal((await upload(user, "email\na@acme.test\n")).statusCode, 202);
    assert.equal((await upload(user, "email\na@acme.test\n")).statusCode, 202);
    assert.deepEqual(await ledgerOf(user), { reservations: 2, tasks: 2, exact: true });
  });
});

describe("uploads in progress are capped per user (429) and per process (503)", () => {
  test("a second upload of the same user while one is in progress → 429 with Retry-After; then accepted", async () => {
    const user = await ctx.createUser(100);
    const slow = slowUpload(user, "email\nslow@acme.test\n");
    await untilInProgress(1);
    const err = assertError(asInject(await upload(user, "email\nq@acme.test\n")), 429, "RATE_LIMITED");
    assert.match(err.message, /uploads in progress/);
    slow.finish();
    assert.equal((await slow.answer).statusCode, 202);
    await untilInProgress(0);
    assert.equal((await upload(user, "email\nq@acme.test\n")).statusCode, 202);
    assert.deepEqual(await ledgerOf(user), { reservations: 2, tasks: 2, exact: true });
  });

  test("beyond the process's uploads in progress → 503 SERVICE_UNAVAILABLE with Retry-After", async () => {
    const [u1, u2, u3] = [await ctx.createUser(10), await ctx.createUser(10), await ctx.createUser(10)];
    const s1 = slowUpload(u1, "email\none@acme.test\n");
    const s2 = slowUpload(u2, "email\ntwo@acme.test\n");
    await untilInProgress(2);
    const res = await upload(u3, "email\nthree@acme.test\n");
    assertError(asInject(res), 503, "SERVICE_UNAVAILABLE");
    assert.match(res.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
    s1.finish();
    s2.finish();
    assert.deepEqual(
      (await Promise.all([s1.answer, s2.answer])).map((a) => a.statusCode),
      [202, 202],
    );
    await untilInProgress(0);
    assert.equal((await upload(u3, "email\nthree@acme.test\n")).statusCode, 202);
    assert.deepEqual(await ledgerOf(u3), { reservations: 1, tasks: 1, exact: true });
  });

  test("a refused file frees its place", async () => {
    const user = await ctx.createUser(100);
    assert.equal((await upload(user, "no address here\n")).statusCode, 400);
    assert.equal(ctx.services.uploads.inProgress, 0);
    assert.equal((await upload(user, "email\nok@acme.test\n")).statusCode, 202);
  });
});
