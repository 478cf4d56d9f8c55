// Upload and download at the limit, through the real HTTP routes: a 10,000-row list with an email
// column and 10 other columns, as csv and as xlsx (shared strings, as Excel writes it), posted to
// POST /api/v1/tasks/batch/upload with app.inject() (multipart parsing, list parsing, and the one
// transaction that writes the task, 10,000 jobs, the reservation and 10,000 upload rows), then
// downloaded from GET /api/v1/tasks/{id}/download as xlsx and csv. PGlite always; PostgreSQL when
// BENCH_DATABASE_URL is set (a fresh schema, dropped at the end).
// Run: npx tsx bench/uploads.ts (NODE_OPTIONS=--expose-gc for steadier memory figures), or
// through the bench runner: benchUploads().
//
// What is measured:
//  - time: median of RUNS uploads (each a new task) after one small warm-up upload per format;
//  - memory: process.memoryUsage() sampled every 2 ms during the step; "peak RSS +" is the
//    highest sample minus the RSS just before the step. RSS also holds freed-but-not-returned heap,
//    so it over-states live data; on PGlite it also includes the embedded database's own (WASM)
//    memory, which PostgreSQL keeps in its own processes. The sampler is a timer, so a long
//    synchronous stretch shows up only at its end. Once an earlier step has grown the heap, RSS
//    hardly moves for later ones (freed pages are reused, not returned), so "peak heap +" is also
//    shown: the highest heapUsed + external sample minus the same before the step ("external"
//    counts Buffers and, on PGlite, the database's WASM memory, so both figures include the
//    embedded database there).
//  - between upload and download the jobs are completed with set-based SQL (one insert of 10,000
//    email_verifications rows built from the jobs, one update linking them), not by workers: this
//    bench is about files, not SMTP (bench/batch.ts measures verification).
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { collect, EXTRA, gc, makeXlsx, mb, sampleRows } from "./support/sample-list.ts";
import type { Database } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { openPglite } from "../src/db/pglite.ts";
import { openPostgres } from "../src/db/postgres.ts";
import { writeCsv } from "../src/files/index.ts";
import { createTestContext, type TestContext, type TestUser } from "../test/support/test-app.ts";
import { withSearchPath } from "../test/support/test-db.ts";

const ROWS = 10_000;
const RUNS = 3;
const SAMPLE_MS = 2;

async function makeCsv(header: string[], rows: string[][]): Promise<Buffer> {
  return collect(writeCsv({ header, rows, escapeFormulas: false, bom: false }));
}

function multipart(filename: string, data: Buffer): { payload: Buffer; contentType: string } {
  const boundary = `----mailprobe-bench-${randomBytes(8).toString("hex")}`;
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    payload: Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
          "Content-Type: application/octet-stream\r\n\r\n",
      ),
      data,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
  };
}

interface Measure<T> {
  value: T;
  ms: number;
  peakRssDelta: number;
  peakHeapDelta: number;
}

/** JS heap plus memory held outside it by JS objects: Buffers, and on PGlite its WASM memory too. */
const heapOf = (m: NodeJS.MemoryUsage): number => m.heapUsed + m.external;

async function measure<T>(fn: () => Promise<T>): Promise<Measure<T>> {
  gc();
  const before = process.memoryUsage();
  let peakRss = before.rss;
  let peakHeap = heapOf(before);
  const sample = (): void => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, heapOf(m));
  };
  const sampler = setInterval(sample, SAMPLE_MS);
  const started = performance.now();
  try {
    const value = await fn();
    const ms = performance.now() - started;
    sample();
    return { value, ms, peakRssDelta: peakRss - before.rss, peakHeapDelta: peakHeap - heapOf(before) };
  } finally {
    clearInterval(sampler);
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Row {
  engine: string;
  step: string;
  ms: number;
  peak: number;
  heap: number;
  note: string;
}

/** Posts a list through the upload route; returns the task id (throws on anything but 202). */
async function uploadList(
  ctx: TestContext,
  user: TestUser,
  filename: string,
  data: Buffer,
  expected: number,
): Promise<string> {
  const { payload, contentType } = multipart(filename, data);
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks/batch/upload",
    headers: { ...ctx.bearer(user.apiKey), "content-type": contentType },
    payload,
  });
  if (res.statusCode !== 202)
    throw new Error(`bench: upload ${filename} → ${String(res.statusCode)} ${res.body.slice(0, 300)}`);
  const body = res.json<{ task_id: string; email_count: number }>();
  if (body.email_count !== expected)
    throw new Error(`bench: ${filename} queued ${String(body.email_count)} addresses`);
  return body.task_id;
}

/** Every job of the task completed with a result, in two set-based statements. */
async function completeJobs(db: Database, taskId: string): Promise<void> {
  await db.query(
    `insert into email_verifications
       (id, user_id, email, status, is_role_based, is_disposable, has_mx_records, has_reverse_dns,
        domain_name, host_name, server_type, is_catchall, unknown_reason, needs_physical_verify,
        validated_at, origin, source, task_id, created_at)
     select j.id, j.user_id, j.email_address,
            (array['valid', 'invalid', 'catchall', 'unknown'])[1 + j.position % 4],
            false, false, true, true, j.domain, 'mx1.' || j.domain, 'postfix', j.position % 4 = 2,
            case when j.position % 4 = 3 then 'greylisted' end, false,
            now(), 'batch', 'api_key', j.task_id, now()
       from email_jobs j
      where j.task_id = $1`,
    [taskId],
  );
  await db.query(
    "update email_jobs set status = 'completed', email_id = id, updated_at = now() where task_id = $1",
    [taskId],
  );
}

async function downloadTask(
  ctx: TestContext,
  user: TestUser,
  taskId: string,
  format: "xlsx" | "csv",
): Promise<number> {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/tasks/${taskId}/download?format=${format}`,
    headers: ctx.bearer(user.apiKey),
  });
  if (res.statusCode !== 200)
    throw new Error(`bench: download ${format} → ${String(res.statusCode)} ${res.body.slice(0, 300)}`);
  return res.rawPayload.length;
}

async function run(
  engine: string,
  db: Database,
  inputs: { csv: Buffer; xlsx: Buffer; smallCsv: Buffer; smallXlsx: Buffer },
): Promise<Row[]> {
  await migrate(db);
  const ctx = await createTestContext({ db });
  const out: Row[] = [];
  try {
    const user = await ctx.createUser(ROWS * (RUNS + 1) * 2 + 1_000);
    // Warm-up: module loading and JIT for both parsers and writers, on a 100-row list.
    for (const [name, data] of [
      ["warm.csv", inputs.smallCsv],
      ["warm.xlsx", inputs.smallXlsx],
    ] as const) {
      const id = await uploadList(ctx, user, name, data, 100);
      await completeJobs(db, id);
      await downloadTask(ctx, user, id, "xlsx");
      await downloadTask(ctx, user, id, "csv");
    }

    for (const format of ["csv", "xlsx"] as const) {
      const data = inputs[format];
      const uploads: Array<Measure<string>> = [];
      for (let i = 0; i < RUNS; i++) {
        uploads.push(await measure(() => uploadList(ctx, user, `contacts.${format}`, data, ROWS)));
      }
      out.push({
        engine,
        step: `upload ${format} (parse + enqueue)`,
        ms: median(uploads.map((u) => u.ms)),
        peak: Math.max(...uploads.map((u) => u.peakRssDelta)),
        heap: Math.max(...uploads.map((u) => u.peakHeapDelta)),
        note: `${mb(data.length)} in; runs ${uploads.map((u) => u.ms.toFixed(0)).join(", ")} ms`,
      });
      const completeStarted = performance.now();
      for (const u of uploads) await completeJobs(db, u.value);
      const completeMs = (performance.now() - completeStarted) / uploads.length;
      for (const target of ["xlsx", "csv"] as const) {
        const downloads: Array<Measure<number>> = [];
        for (const u of uploads)
          downloads.push(await measure(() => downloadTask(ctx, user, u.value, target)));
        out.push({
          engine,
          step: `download ${target} (${format} upload)`,
          ms: median(downloads.map((d) => d.ms)),
          peak: Math.max(...downloads.map((d) => d.peakRssDelta)),
          heap: Math.max(...downloads.map((d) => d.peakHeapDelta)),
          note:
            `${mb(downloads[0]!.value)} out; 11 + 13 result columns` +
            (target === "xlsx" ? `; results written in ${completeMs.toFixed(0)} ms/task` : ""),
        });
      }
    }
  } finally {
    await ctx.close();
  }
  return out;
}

function printTable(rows: Row[]): void {
  const head =
    `  ${"engine".padEnd(9)}${"step".padEnd(32)}${"median".padStart(9)}${"peak RSS +".padStart(13)}` +
    `${"peak heap +".padStart(13)}   note`;
  console.log(head);
  console.log(`  ${"-".repeat(head.length - 2)}`);
  for (const r of rows) {
    console.log(
      `  ${r.engine.padEnd(9)}${r.step.padEnd(32)}${`${r.ms.toFixed(0)} ms`.padStart(9)}${mb(r.peak).padStart(13)}` +
        `${mb(r.heap).padStart(13)}   ${r.note}`,
    );
  }
}

export async function benchUploads(): Promise<void> {
  const hasGc = (globalThis as { gc?: unknown }).gc !== undefined;
  console.log(
    `\nuploads: ${ROWS.toLocaleString("en-US")} rows × ${String(EXTRA.length + 1)} columns through the HTTP routes, ` +
      `median of ${String(RUNS)} (after a warm-up); peak RSS + = highest 2 ms sample minus RSS before the step, ` +
      "peak heap + = same for heapUsed + external" +
      `${hasGc ? "" : " (no --expose-gc: noisier)"}; jobs completed by set-based SQL, not workers`,
  );
  const header = ["email", ...EXTRA];
  const rows = sampleRows(ROWS);
  const small = rows.slice(0, 100);
  const inputs = {
    csv: await makeCsv(header, rows),
    xlsx: await makeXlsx(header, rows),
    smallCsv: await makeCsv(header, small),
    smallXlsx: await makeXlsx(header, small),
  };

  const results: Row[] = [];
  const lite = await openPglite(null);
  try {
    results.push(...(await run("pglite", lite, inputs)));
  } finally {
    await lite.close();
  }
  const base = process.env.BENCH_DATABASE_URL;
  if (base) {
    const schema = `bench_uploads_${randomBytes(4).toString("hex")}`;
    const admin = openPostgres(base, 1);
    await admin.query(`create schema ${schema}`);
    const pg = openPostgres(withSearchPath(base, schema), 10);
    try {
      results.push(...(await run("postgres", pg, inputs)));
    } finally {
      await pg.close();
      await admin.query(`drop schema ${schema} cascade`);
      await admin.close();
    }
  }
  printTable(results);
  if (!base) console.log("  postgres skipped (set BENCH_DATABASE_URL)");
  console.log(`  process maxRSS so far ${mb(process.resourceUsage().maxRSS * 1024)}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchUploads();
}
