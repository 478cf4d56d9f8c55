// Files that any key with 0 credits can upload, through the real app.
// Uploads are refused before a credit is needed, so none of this costs the sender anything;
// what it may cost the server is bounded per FILE (xlsx: sheets, rows, cells, XML elements,
// inflated bytes, wall time) and per row (at most 1,000 real columns, in the upload and in every
// row of its download). Downloads fail before their headers when they can, and a stream that
// fails after them aborts the connection instead of ending a short file. CPU and memory are
// logged as diagnostics; only generous memory bounds are asserted (no timing assertions).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { parse as parseCsv } from "csv-parse/sync";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError } from "../../support/assert-error.ts";
import { readXlsxBook, xlsxOf } from "../../unit/files/helpers.ts";
import { RESULT_COLUMNS } from "../../../src/files/index.ts";
import { rewriteStoredRow } from "../../support/upload-rows.ts";

/** The result columns a download appends after the file's own. */
const RESULT_COUNT = RESULT_COLUMNS.length;
let ctx: TestContext;

before(async () => {
  // Three uploads of one user at once: what is measured here is reading them, not admitting them.
  ctx = await createTestContext({ env: { UPLOADS_MAX_IN_PROGRESS_PER_USER: "3" } });
});

after(async () => {
  await ctx?.close();
});

function upload(user: TestUser, filename: string, data: Buffer | string) {
  const boundary = `----mailprobe-test-${randomBytes(12).toString("hex")}`;
  return ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks/batch/upload",
    headers: { ...ctx.bearer(user.apiKey), "content-type": `multipart/form-data; boundary=${boundary}` },
    payload: Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
          "Content-Type: application/octet-stream\r\n\r\n",
      ),
      typeof data === "string" ? Buffer.from(data, "utf8") : data,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
  });
}

const download = (user: TestUser, taskId: string, format: string) =>
  ctx.app.inject({
    method: "GET",
    url: `/api/v1/tasks/${taskId}/download?format=${format}`,
    headers: ctx.bearer(user.apiKey),
  });

/** Rows of a csv download, ragged ones kept as they are. */
function readCsv(data: Buffer): string[][] {
  return parseCsv(data, { bom: true, relax_column_count: true });
}

/** Peak RSS growth and CPU time of `fn`, sampling RSS every 10 ms. */
async function measured<T>(fn: () => Promise<T>): Promise<{ result: T; cpuMs: number; rssMb: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const cpu = process.cpuUsage();
  try {
    const result = await fn();
    const used = process.cpuUsage(cpu);
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, cpuMs: (used.user + used.system) / 1000, rssMb: (peak - before) / 1024 / 1024 };
  } finally {
    clearInterval(timer);
  }
}

async function writtenBy(user: TestUser): Promise<number> {
  const { rows } = await ctx.db.query<{ n: number }>("select count(*) as n from uploads where user_id = $1", [
    user.userId,
  ]);
  return Number(rows[0]!.n);
}

describe("xlsx costs are bounded per file, not per sheet", () => {
  test("92 sheets × 19,999 address-less rows (9.5 MB), three at once → 400 naming the per-file row limit", async (t) => {
    const user = await ctx.createUser(0);
    const data = await xlsxOf((wb) => {
      for (let s = 0; s < 92; s += 1) {
        const ws = wb.addWorksheet(`Sheet ${String(s + 1)}`);
        for (let r = 0; r < 19_999; r += 1) ws.addRow(["x"]);
      }
    });
    assert.ok(data.length < 10 * 1024 * 1024, "fits MAX_UPLOAD_BYTES");
    // Before the per-file budget: ~5 s of CPU each (the exceljs reader: 18 s and +1.8 GB each).
    const { result, cpuMs, rssMb } = await measured(() =>
      Promise.all([1, 2, 3].map(() => upload(user, "sheets.xlsx", data))),
    );
    for (const res of result) {
      const error = assertError(res, 400, "VALIDATION_ERROR");
      assert.equal(error.details?.[0]?.field, "file");
      assert.match(
        error.details?.[0]?.reason ?? "",
        /more than 40,000 rows \(blank ones included\) in its sheets, the most read from one file \(stopped in sheet 3 of 92\)/,
      );
    }
    assert.ok(rssMb < 300, `RSS grew by ${rssMb.toFixed(0)} MB`);
    assert.equal(await writtenBy(user), 0);
    t.diagnostic(
      `${(data.length / 1e6).toFixed(1)} MB × 3 concurrent: ${cpuMs.toFixed(0)} ms CPU, peak RSS +${rssMb.toFixed(0)} MB`,
    );
  });

  test("a workbook whose list is on sheet 3 after two big cover sheets is still read", async () => {
    const user = await ctx.createUser(5);
    const data = await xlsxOf((wb) => {
      for (const name of ["Cover", "Notes"]) {
        const ws = wb.addWorksheet(name);
        for (let r = 0; r < 5_000; r += 1) ws.addRow([`line ${String(r)}`]);
      }
      wb.addWorksheet("List").addRows([["Email"], ["ann@example.com"], ["bob@example.com"]]);
    });
    const res = await upload(user, "book.xlsx", data);
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json<{ email_count: number }>().email_count, 2);
  });
});

describe("columns are bounded at upload and downloads are never wider than the real columns", () => {
  test("a csv row of 1,000,000 empty fields (1 MB) is a blank row: 202, and the downloads are 2 + the result columns wide", async (t) => {
    const user = await ctx.createUser(5);
    const csv = `email,name\nann@example.com,Ann\n${",".repeat(1_000_000)}\nbob@example.com,Bob\n`;
    const res = await upload(user, "wide.csv", csv);
    assert.equal(res.statusCode, 202, res.body);
    const taskId = res.json<{ task_id: string }>().task_id;

    const { result: got, cpuMs } = await measured(() => download(user, taskId, "csv"));
    assert.equal(got.statusCode, 200, got.body);
    const rows = readCsv(got.rawPayload);
    // The list's own "email" column: the result columns are prefixed (README: Downloads).
    assert.deepEqual(rows[0]!.slice(0, 3), ["email", "name", "mailprobe_email"]);
    assert.deepEqual(
      rows.map((r) => r.length),
      [2 + RESULT_COUNT, 2 + RESULT_COUNT, 2 + RESULT_COUNT],
    );
    // Before: every row 1,000,000 columns wide (~1.5 MB a row; 36.9 MB and 11 s of CPU for 24 rows).
    assert.ok(got.rawPayload.length < 2_000, `${String(got.rawPayload.length)} bytes`);
    t.diagnostic(`csv download: ${String(got.rawPayload.length)} bytes, ${cpuMs.toFixed(0)} ms CPU`);

    const xlsx = await download(user, taskId, "xlsx");
    assert.equal(xlsx.statusCode, 200, xlsx.body);
    const sheet = readXlsxBook(xlsx.rawPayload)[0]!;
    assert.deepEqual(
      sheet.rows.map((r) => r.length <= 2 + RESULT_COUNT),
      [true, true, true],
    );
  });

  test("a real cell in column 1,001 → 400 naming the 1,000-column limit (csv and xlsx); 1,000 columns pass", async () => {
    const user = await ctx.createUser(5);
    const far = (n: number): string => `${",".repeat(n - 1)}x`;
    const csv = await upload(user, "far.csv", `email\nann@example.com,${far(1_000)}\n`);
    const error = assertError(csv, 400, "VALIDATION_ERROR");
    assert.equal(error.details?.[0]?.field, "file");
    assert.match(error.details?.[0]?.reason ?? "", /has 1,001 columns; a list may have at most 1,000/);

    const book = await xlsxOf((wb) =>
      wb
        .addWorksheet("S")
        .addRows([["email"], ["ann@example.com", ...Array.from({ length: 999 }, () => null), "x"]]),
    );
    const xlsx = assertError(await upload(user, "far.xlsx", book), 400, "VALIDATION_ERROR");
    assert.match(xlsx.details![0]!.reason, /has 1,001 columns; a list may have at most 1,000/);

    const widest = await upload(user, "widest.csv", `email\nann@example.com,${far(999)}\n`);
    assert.equal(widest.statusCode, 202, widest.body);
    const taskId = widest.json<{ task_id: string }>().task_id;
    for (const format of ["csv", "xlsx"]) {
      const res = await download(user, taskId, format);
      assert.equal(res.statusCode, 200, `${format}: ${res.body.slice(0, 200)}`);
    }
  });

  test("an upload stored before the bound (column_count 1,000,000) downloads as wide as its real columns", async () => {
    const user = await ctx.createUser(5);
    const res = await upload(user, "old.csv", "email,name\nann@example.com,Ann\nnot an address,x\n");
    assert.equal(res.statusCode, 202, res.body);
    const { upload_id: uploadId, task_id: taskId } = res.json<{ upload_id: string; task_id: string }>();
    // What the old reader stored for a row of a million empty fields.
    await ctx.db.query("update uploads set column_count = 1000000 where id = $1", [uploadId]);
    await rewriteStoredRow(ctx.db, uploadId, 1, [
      "not an address",
      "x",
      ...Array.from({ length: 999_998 }, () => ""),
    ]);
    for (const format of ["csv", "xlsx"]) {
      const got = await download(user, taskId, format);
      assert.equal(got.statusCode, 200, got.body.slice(0, 200));
      assert.ok(got.rawPayload.length < 10_000, `${format}: ${String(got.rawPayload.length)} bytes`);
    }
    const csv = readCsv((await download(user, taskId, "csv")).rawPayload);
    assert.deepEqual(
      csv.map((r) => r.length),
      [2 + RESULT_COUNT, 2 + RESULT_COUNT, 2 + RESULT_COUNT],
    );

    // One that really is wider than 1,000 columns is refused before anything is sent; txt works.
    await rewriteStoredRow(ctx.db, uploadId, 1, [
      "not an address",
      ...Array.from({ length: 1_500 }, () => ""),
      "far",
    ]);
    for (const format of ["csv", "xlsx"]) {
      const refused = await download(user, taskId, format);
      assert.equal(refused.headers["content-disposition"], undefined);
      const error = assertError(refused, 400, "VALIDATION_ERROR");
      assert.equal(error.details?.[0]?.field, "format");
      assert.match(error.details?.[0]?.reason ?? "", /1,502 columns, more than the 1,000 a download holds/);
    }
    assert.equal((await download(user, taskId, "txt")).statusCode, 200);
  });
});

describe("a download that fails never leaks, never ends as a short file", () => {
  async function withFailingDownload(body: () => Readable, run: () => Promise<void>): Promise<void> {
    // Routes reach the tasks service through HttpDeps, which holds this same object.
    const tasks = ctx.services.tasks;
    const original = Object.getOwnPropertyDescriptor(tasks, "prepareDownload")!;
    tasks.prepareDownload = () =>
      Promise.resolve({ filename: "x-results.csv", contentType: "text/csv; charset=utf-8", body: body() });
    try {
      await run();
    } finally {
      Object.defineProperty(tasks, "prepareDownload", original);
    }
  }
  const anyTask = "00000000-0000-4000-8000-000000000001";

  test("a stream failing before its first byte → the 500 envelope, no serializer message, no attachment header", async () => {
    const user = await ctx.createUser(0);
    const failing = (): Readable =>
      new Readable({
        read() {
          this.destroy(new Error("Out of bounds. Excel supports columns from 1 to 16384"));
        },
      });
    await withFailingDownload(failing, async () => {
      const res = await download(user, anyTask, "csv");
      const error = assertError(res, 500, "INTERNAL_ERROR", null);
      assert.doesNotMatch(res.body, /Excel|16384|Out of bounds/);
      assert.equal(error.message, "An internal error occurred");
      assert.equal(res.headers["content-disposition"], undefined);
    });
  });

  test("a stream failing after bytes were sent aborts the connection: the client never sees a complete body", async () => {
    const user = await ctx.createUser(0);
    const failing = (): Readable =>
      Readable.from(
        (async function* () {
          yield Buffer.from("email,status\r\nann@example.com,valid\r\n");
          await new Promise((resolve) => setTimeout(resolve, 20));
          throw new Error("connection to the database lost: secret details");
        })(),
      );
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = ctx.app.server.address() as AddressInfo;
    await withFailingDownload(failing, async () => {
      const outcome = await new Promise<{ status: number; body: string; complete: boolean; error: string }>(
        (resolve) => {
          const req = request(
            {
              host: "127.0.0.1",
              port,
              path: `/api/v1/tasks/${anyTask}/download`,
              headers: ctx.bearer(user.apiKey),
            },
            (res) => {
              let body = "";
              let error = "";
              res.setEncoding("utf8");
              res.on("data", (chunk: string) => (body += chunk));
              res.on("error", (e) => (error = e.message));
              res.on("close", () =>
                resolve({ status: res.statusCode ?? 0, body, complete: res.complete, error }),
              );
            },
          );
          req.on("error", (e) => resolve({ status: 0, body: "", complete: false, error: e.message }));
          req.end();
        },
      );
      // The status line was out before the failure; the chunked body never gets its last chunk.
      assert.equal(outcome.status, 200);
      assert.equal(outcome.complete, false);
      assert.match(outcome.error, /aborted/);
      assert.equal(outcome.body, "email,status\r\nann@example.com,valid\r\n");
      assert.doesNotMatch(outcome.body, /secret|database/);
    });
  });
});
