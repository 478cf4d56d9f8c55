// The hostile inputs of uploads/hostile-files.test.ts and api/hostile-input.test.ts (huge
// workbooks, wide lists, huge JSON bodies), three at a time, against a real `mailprobe serve`
// (embedded PGlite: API, workers and dispatcher in the one process that used to die). While they
// run, a worker thread of this file samples the server's resident memory (VmRSS from /proc,
// every 25 ms) and polls /healthz (every 50 ms). It asserts that every request gets its answer in the error envelope,
// that the server's RSS stays under MAX_RSS_MB and that /healthz never takes two seconds: a liveness
// bound (the event loop is never blocked for long), not a performance figure. Before the
// per-file budgets one 92-sheet workbook cost +1.8 GB and three killed the process; the JSON of
// 2.6 M items froze /healthz for 53 s. Now lists are parsed on worker threads
// (files/parse/parse-pool.ts) and JSON bodies are bounded in shape before JSON.parse. Linux only (/proc); skipped elsewhere, and on the
// PostgreSQL run (the embedded server is the case under test, and it runs once).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { Worker } from "node:worker_threads";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import {
  exitOf,
  freePort,
  inheritedEnv,
  runCli,
  startMailprobe,
  type MailprobeChild,
} from "../../support/child-process.ts";
import {
  buildZip,
  sharedStringBomb,
  workbookParts,
  xlsxOf,
  zerosDeflated,
  type RawEntry,
} from "../../unit/files/helpers.ts";

/**
 * The stated bound. An idle embedded server sits near 500 MB (PGlite's WebAssembly heap and
 * tsx included). Lists are parsed on two worker threads (UPLOAD_PARSE_THREADS), each with its
 * own heap capped at UPLOAD_PARSE_MEMORY_MB (256); the per-file budgets keep a hostile file far
 * below that cap. Measured peak, the 20-upload round: 853 MB (idle 532 MB), where it was 913–1,031
 * MB while the rows crossed from the thread and into the database as JSON text rather than as
 * compressed blocks (files/row-block.ts).
 */
const MAX_RSS_MB = 1_024;
/**
 * A liveness bound, not a performance figure: the failures it guards against froze /healthz for
 * 3.5 to 53 s. With nothing wrong, the slowest answer of the heaviest upload round is 354 ms with
 * this file alone on a 2-core machine. (It read 1.0–2.6 s while the poller ran on this file's
 * main thread, which stalled for up to 1.3 s building the upload bodies: see WATCHER.) The bound
 * is 2 s; each round's slowest answer is printed with its figures.
 */
const MAX_HEALTHZ_MS = 2_000;

const skip =
  process.platform !== "linux"
    ? "reads the server's RSS from /proc (Linux only)"
    : process.env.TEST_DATABASE_URL
      ? "the embedded server is the case under test; runs on the PGlite suite"
      : null;

let world: MailWorld;
let dataDir: string;
let server: MailprobeChild | null = null;
let base = "";
let apiKey = "";

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status);
  return kb ? Number(kb[1]) / 1024 : 0;
}

interface Watch {
  stop(): Promise<{ peakRssMb: number; slowestHealthzMs: number; healthz: number; failures: string[] }>;
}

type Figures = Awaited<ReturnType<Watch["stop"]>> & { name: string };

/** Rounds run one after another, each under a fresh watch (so each round's peak is its own). */
function watchedRounds(pid: number) {
  const seen: string[] = [];
  const figures: Figures[] = [];
  const watched = async (name: string, fn: () => Promise<string>): Promise<void> => {
    const w = watch(pid);
    let line = "";
    try {
      line = await fn();
    } finally {
      const f = { name, ...(await w.stop()) };
      figures.push(f);
      seen.push(
        `${name}: ${line} | RSS peak ${f.peakRssMb.toFixed(0)} MB, /healthz slowest ${f.slowestHealthzMs.toFixed(0)} ms of ${f.healthz}`,
      );
      if (process.env.HOSTILE_LOAD_PROGRESS) process.stderr.write(seen.at(-1) + "\n");
    }
  };
  return { seen, figures, watched };
}

/** The suite's bounds, for every round: alive, RSS, /healthz answered and quick, no crash logged. */
function assertWithinBounds(server: MailprobeChild, figures: readonly Figures[]): void {
  assert.equal(server.exited, null, `the server died: ${server.output.slice(-3_000)}`);
  for (const f of figures) {
    assert.deepEqual(f.failures, [], `${f.name}: /healthz answered 200 every time`);
    assert.ok(f.peakRssMb < MAX_RSS_MB, `${f.name}: server RSS peaked at ${f.peakRssMb.toFixed(0)} MB`);
    assert.ok(
      f.slowestHealthzMs < MAX_HEALTHZ_MS,
      `${f.name}: /healthz took ${f.slowestHealthzMs.toFixed(0)} ms at its slowest`,
    );
  }
  assert.doesNotMatch(server.output, /uncaught|unhandledRejection|FATAL|heap out of memory/i);
}

/**
 * The watcher's loop, on a thread of its own: this file builds and sends 200 MB of upload bodies,
 * and its own event loop stalled for up to 1.3 s while it did (garbage collection of the bodies),
 * which a poller on the main thread counted as the server's slowness. A worker has its own event
 * loop and heap, so what it measures is the server's answer time (CPU contention included).
 */
const WATCHER = `
const { parentPort, workerData } = require("node:worker_threads");
const { readFile } = require("node:fs/promises");
const { base, pid } = workerData;
let running = true;
let peakRssMb = 0, slowestHealthzMs = 0, healthz = 0;
const failures = [];
const delay = (ms) => new Promise((r) => setTimeout(r, ms));
const rssMb = async () => {
  const kb = /^VmRSS:\\s+(\\d+) kB/m.exec(await readFile("/proc/" + pid + "/status", "utf8"));
  return kb ? Number(kb[1]) / 1024 : 0;
};
const sampler = (async () => {
  while (running) {
    peakRssMb = Math.max(peakRssMb, await rssMb().catch(() => 0));
    await delay(25);
  }
})();
const poller = (async () => {
  while (running) {
    const started = performance.now();
    try {
      const res = await fetch(base + "/healthz", { signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      if (res.status !== 200) failures.push("/healthz " + res.status);
    } catch (error) {
      failures.push("/healthz: " + error.message);
    }
    slowestHealthzMs = Math.max(slowestHealthzMs, performance.now() - started);
    healthz++;
    await delay(50);
  }
})();
parentPort.once("message", async () => {
  running = false;
  await Promise.all([sampler, poller]);
  parentPort.postMessage({ peakRssMb, slowestHealthzMs, healthz, failures });
});
`;

/** Samples the server's RSS and polls /healthz until stopped, on a worker thread (WATCHER). */
function watch(pid: number): Watch {
  const worker = new Worker(WATCHER, { eval: true, workerData: { base, pid } });
  const figures = new Promise<Awaited<ReturnType<Watch["stop"]>>>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  return {
    async stop() {
      worker.postMessage("stop");
      const result = await figures;
      await worker.terminate();
      return result;
    },
  };
}

function multipart(filename: string, data: Buffer): { body: Buffer; type: string } {
  const boundary = `----mailprobe-load-${randomBytes(12).toString("hex")}`;
  return {
    type: `multipart/form-data; boundary=${boundary}`,
    body: Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
          "Content-Type: application/octet-stream\r\n\r\n",
      ),
      data,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
  };
}

interface Answer {
  status: number;
  code: string | null;
  bytes: number;
}

async function send(
  path: string,
  init: { method?: string; body?: Buffer | string; type?: string; key?: string },
): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? "POST",
    headers: {
      "x-api-key": init.key ?? apiKey,
      ...(init.type ? { "content-type": init.type } : {}),
    },
    ...(init.body !== undefined ? { body: init.body } : {}),
    signal: AbortSignal.timeout(120_000),
  });
  const data = Buffer.from(await res.arrayBuffer());
  let code: string | null = null;
  if (res.status >= 400) {
    const envelope = JSON.parse(data.toString("utf8")) as { error?: { code?: string; message?: string } };
    assert.equal(typeof envelope.error?.message, "string", `${path} ${res.status}: not the envelope`);
    code = envelope.error!.code ?? null;
  }
  return { status: res.status, code, bytes: data.length };
}

const upload = (filename: string, data: Buffer, key?: string) => {
  const { body, type } = multipart(filename, data);
  return send("/api/v1/tasks/batch/upload", { body, type, ...(key ? { key } : {}) });
};

/** A csv of about `megabytes` MB with `columns` columns: an address, then short cells. */
function wideCsv(columns: number, megabytes: number, tag: string): Buffer {
  const header = ["email", ...Array.from({ length: columns - 1 }, (_, i) => `c${i + 1}`)].join(",");
  const filler = ",x".repeat(columns - 1);
  const rows: string[] = [header];
  let bytes = header.length;
  for (let i = 0; bytes < megabytes * 1_000_000; i++) {
    const row = `u${i}@${tag}.test${filler}`;
    rows.push(row);
    bytes += row.length + 1;
  }
  return Buffer.from(rows.join("\n") + "\n");
}

before(async () => {
  if (skip) return;
  world = await startMailWorld({ domains: [] });
  dataDir = await mkdtemp(join(tmpdir(), "mailprobe-load-"));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const env = {
    ...inheritedEnv(),
    ...worldEnv(world),
    PORT: String(port),
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    DATABASE_URL: "",
    LOG_LEVEL: "warn",
    // The three-at-a-time rounds send from one user; the 20-upload round counts on these caps.
    UPLOADS_MAX_IN_PROGRESS_PER_USER: "3",
    UPLOADS_MAX_IN_PROGRESS: "4",
  };
  server = await startMailprobe("serve", ["serve"], env, "listening on");
  const user = JSON.parse(await runCli(["users", "create", "--credits", "100", "--json"], env)) as {
    api_key: string;
  };
  apiKey = user.api_key;
  // Users of the heavy rounds: one without credits (an attacker needs none to be parsed), five
  // with plenty (accepted uploads and a 10,000-address task must be paid for).
  broke = await createUser(env, 0);
  for (let i = 0; i < 5; i++) rich.push(await createUser(env, 1_000_000));
});

let broke = "";
const rich: string[] = [];

async function createUser(env: NodeJS.ProcessEnv, credits: number): Promise<string> {
  const out = await runCli(["users", "create", "--credits", String(credits), "--json"], env);
  return (JSON.parse(out) as { api_key: string }).api_key;
}

after(async () => {
  if (server && !server.exited) {
    server.proc.kill("SIGTERM");
    await Promise.race([exitOf(server), delay(10_000)]);
    if (!server.exited) server.proc.kill("SIGKILL");
  }
  await world?.close();
  if (dataDir && existsSync(dataDir)) await rm(dataDir, { recursive: true, force: true });
});

test(`hostile files and bodies, three at a time: RSS < ${MAX_RSS_MB} MB, /healthz < ${MAX_HEALTHZ_MS} ms`, async (t) => {
  if (skip || !server) {
    t.skip(skip ?? "no server");
    return;
  }
  const pid = server.proc.pid!;
  const idleMb = await rssMb(pid);

  // Built before the clock starts: the attacker's costs are not the server's.
  const manySheets = await xlsxOf((wb) => {
    for (let s = 0; s < 92; s++) {
      const ws = wb.addWorksheet(`Sheet ${String(s + 1)}`);
      for (let r = 0; r < 19_999; r++) ws.addRow(["x"]);
    }
  });
  const sheetBomb = buildZip([
    ...workbookParts(["Sheet1"]).filter((e: RawEntry) => e.name !== "xl/worksheets/sheet1.xml"),
    { name: "xl/worksheets/sheet1.xml", body: zerosDeflated(1_024), method: 8, declaredSize: 1_024 ** 3 },
  ]);
  const numbers = Buffer.from(`{"emails":[${Array.from({ length: 2_500_000 }, () => "1").join(",")}]}`);
  const deep = Buffer.from(`{"emails":${"[".repeat(2_000_000)}${"]".repeat(2_000_000)}}`);
  const wideRow = Buffer.from(`email,name\nann@load.test,Ann\n${",".repeat(1_000_000)}\n`);
  const tooManyRows = Buffer.from(
    `email\n${Array.from({ length: 200_000 }, (_, i) => `user${i}@load${i % 50}.test`).join("\n")}\n`,
  );
  const nulFile = Buffer.concat([
    Buffer.from("email\n"),
    Buffer.alloc(2_048, "a"),
    Buffer.from([0]),
    Buffer.from("\n"),
  ]);

  const rounds: Array<{ name: string; run: () => Promise<Answer>; expect: number[] }> = [
    {
      name: `xlsx, 92 sheets × 19,999 rows (${(manySheets.length / 1e6).toFixed(1)} MB)`,
      run: () => upload("sheets.xlsx", manySheets),
      expect: [400],
    },
    {
      name: "xlsx, a sheet that inflates to 1 GiB",
      run: () => upload("bomb.xlsx", sheetBomb),
      expect: [400],
    },
    {
      name: `JSON, 2,500,000 numbers (${(numbers.length / 1e6).toFixed(1)} MB)`,
      run: () => send("/api/v1/tasks", { body: numbers, type: "application/json" }),
      expect: [400],
    },
    {
      name: "JSON, 2,000,000 nested arrays",
      run: () => send("/api/v1/tasks", { body: deep, type: "application/json" }),
      expect: [400],
    },
    { name: "csv, 200,000 rows", run: () => upload("rows.csv", tooManyRows), expect: [400] },
    { name: "csv, a NUL after the first KB", run: () => upload("nul.csv", nulFile), expect: [400] },
    { name: "csv, a row of 1,000,000 empty cells", run: () => upload("wide.csv", wideRow), expect: [202] },
  ];

  const { seen, figures, watched } = watchedRounds(pid);
  try {
    for (const round of rounds) {
      await watched(round.name, async () => {
        const started = performance.now();
        const answers = await Promise.all([1, 2, 3].map(() => round.run()));
        for (const a of answers)
          assert.ok(round.expect.includes(a.status), `${round.name}: ${JSON.stringify(a)}`);
        return `${answers.map((a) => `${a.status}${a.code ? ` ${a.code}` : ""}`).join(", ")} in ${(performance.now() - started).toFixed(0)} ms`;
      });
    }
    const { tasks } = (await (
      await fetch(`${base}/api/v1/tasks?limit=10`, { headers: { "x-api-key": apiKey } })
    ).json()) as { tasks: Array<{ id: string }> };
    const taskIds = tasks.map((x) => x.id);
    assert.equal(taskIds.length, 3, "the three wide-row uploads made three tasks");
    // Item 3: their downloads are as wide as the real columns, three at a time, each format.
    for (const format of ["csv", "xlsx", "txt"]) {
      await watched(`download ${format} × 3`, async () => {
        const started = performance.now();
        const answers = await Promise.all(
          taskIds.map((id) => send(`/api/v1/tasks/${id}/download?format=${format}`, { method: "GET" })),
        );
        for (const a of answers) {
          assert.equal(a.status, 200, `download ${format}`);
          assert.ok(a.bytes < 64 * 1024, `download ${format} is ${a.bytes} bytes`);
        }
        return `${answers.map((a) => `${a.bytes} B`).join(", ")} in ${(performance.now() - started).toFixed(0)} ms`;
      });
    }
  } finally {
    for (const line of seen) t.diagnostic(line);
    const peak = Math.max(...figures.map((f) => f.peakRssMb));
    const slowest = Math.max(...figures.map((f) => f.slowestHealthzMs));
    t.diagnostic(
      `server RSS: idle ${idleMb.toFixed(0)} MB, peak ${peak.toFixed(0)} MB (bound ${MAX_RSS_MB}); ` +
        `/healthz: ${figures.reduce((n, f) => n + f.healthz, 0)} answers, slowest ${slowest.toFixed(0)} ms (bound ${MAX_HEALTHZ_MS})`,
    );
  }
  assertWithinBounds(server, figures);
});

/** A task's status, polled until it is `completed` (or the deadline passes). */
async function waitCompleted(taskId: string, key: string, deadlineMs: number): Promise<string> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    const res = await fetch(`${base}/api/v1/tasks/${taskId}`, { headers: { "x-api-key": key } });
    if (((await res.json()) as { finished_at: string | null }).finished_at) return "completed";
    await delay(250);
  }
  return "not finished";
}

test(`heavy uploads and a big task: RSS < ${MAX_RSS_MB} MB, /healthz < ${MAX_HEALTHZ_MS} ms, nothing committed unanswered`, async (t) => {
  if (skip || !server) {
    t.skip(skip ?? "no server");
    return;
  }
  const pid = server.proc.pid!;
  // The reported attack: one 32,767-character shared string in 64,000 cells, 330 KB.
  const bomb = sharedStringBomb({ rows: 64_000, refsPerRow: 1, longChars: 32_767 });
  const wide = [0, 1, 2].map((i) => wideCsv(1_000, 10, `wide${i}`));
  // 20 lists of ~9,800 rows × 500 columns, 10 MB each: the most a user may send, 20 at once.
  const lists = Array.from({ length: 20 }, (_, i) => wideCsv(500, 10, `list${i}`));
  const tenK = JSON.stringify({ emails: Array.from({ length: 10_000 }, (_, i) => `u${i}@mailinator.com`) });

  const { seen, figures, watched } = watchedRounds(pid);
  const countTasks = async (key: string): Promise<number> =>
    (
      (await (await fetch(`${base}/api/v1/tasks?limit=1`, { headers: { "x-api-key": key } })).json()) as {
        count: number;
      }
    ).count;

  /** Cancels the running tasks of the rich users (the upload rounds measure taking files in). */
  const cancelAll = async (): Promise<void> => {
    for (const key of rich) {
      const res = await fetch(`${base}/api/v1/tasks?limit=100`, { headers: { "x-api-key": key } });
      for (const task of ((await res.json()) as { tasks: Array<{ id: string }> }).tasks) {
        await fetch(`${base}/api/v1/tasks/${task.id}/cancel`, {
          method: "POST",
          headers: { "x-api-key": key },
        });
      }
    }
  };

  try {
    await watched(
      `xlsx, one 32,767-character string in 64,000 cells (${(bomb.length / 1e3).toFixed(0)} KB), 0 credits, × 3`,
      async () => {
        const answers = await Promise.all([1, 2, 3].map(() => upload("bomb.xlsx", bomb, broke)));
        for (const a of answers) assert.equal(a.status, 400, JSON.stringify(a));
        return answers.map((a) => `${a.status} ${a.code}`).join(", ");
      },
    );

    // Before the upload rounds: measured alone, not behind the queue they leave.
    await watched("a JSON task of 10,000 disposable addresses (no SMTP), until completed", async () => {
      const started = performance.now();
      const res = await fetch(`${base}/api/v1/tasks`, {
        method: "POST",
        headers: { "x-api-key": rich[4]!, "content-type": "application/json" },
        body: tenK,
      });
      assert.equal(res.status, 201, await res.clone().text());
      const { id } = (await res.json()) as { id: string };
      assert.equal(await waitCompleted(id, rich[4]!, 240_000), "completed");
      return `completed in ${(performance.now() - started).toFixed(0)} ms`;
    });
    await watched(`csv, 1,000 columns × ${(wide[0]!.length / 1e6).toFixed(1)} MB, × 3 users`, async () => {
      const started = performance.now();
      const answers = await Promise.all(wide.map((file, i) => upload("wide.csv", file, rich[i])));
      for (const a of answers) assert.equal(a.status, 202, JSON.stringify(a));
      await cancelAll();
      return `${answers.map((a) => a.status).join(", ")} in ${(performance.now() - started).toFixed(0)} ms`;
    });

    const before = await Promise.all(rich.map(countTasks));
    await watched(
      "csv, 500 columns × 10 MB, 20 at once from 5 users, retried with their Idempotency-Keys",
      async () => {
        const started = performance.now();
        const keys = lists.map((_, i) => `list-${i}-${randomBytes(4).toString("hex")}`);
        const statuses: number[][] = lists.map(() => []);
        let pending = lists.map((_, i) => i);
        for (let round = 0; pending.length > 0 && round < 30; round++) {
          const answers = await Promise.all(
            pending.map(async (i) => {
              const { body, type } = multipart(`list${i}.csv`, lists[i]!);
              const res = await fetch(`${base}/api/v1/tasks/batch/upload`, {
                method: "POST",
                headers: { "x-api-key": rich[i % 5]!, "content-type": type, "idempotency-key": keys[i]! },
                body,
                signal: AbortSignal.timeout(120_000),
              });
              const text = await res.text();
              if (res.status !== 202) {
                assert.ok([429, 503].includes(res.status), `list ${i}: ${res.status} ${text.slice(0, 300)}`);
                assert.match(res.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
                assert.equal(
                  typeof (JSON.parse(text) as { error: { message: string } }).error.message,
                  "string",
                );
              }
              statuses[i]!.push(res.status);
              return { i, status: res.status };
            }),
          );
          pending = answers.filter((a) => a.status !== 202).map((a) => a.i);
          if (pending.length > 0) await delay(1_000);
        }
        assert.deepEqual(pending, [], "every upload was accepted within 30 rounds");
        const refusals = statuses.flat().filter((s) => s !== 202).length;
        return `20 accepted after ${refusals} refusals (429/503) in ${(performance.now() - started).toFixed(0)} ms`;
      },
    );
    const afterUploads = await Promise.all(rich.map(countTasks));
    assert.equal(
      afterUploads.reduce((n, c, i) => n + c - before[i]!, 0),
      20,
      "one task per upload: no refused request was committed, no retry billed twice",
    );
  } finally {
    for (const line of seen) t.diagnostic(line);
  }
  assertWithinBounds(server, figures);
});
