// A full disk under a real embedded `mailprobe serve`: DATA_DIR is a small tmpfs mounted for the
// test, filled with a filler file. Before DATA_DIR_MIN_FREE_MB, an upload accepted with 3.4 MB
// free left the server spinning at 100 % CPU inside PGlite for good: every request timed out,
// SIGTERM was ignored (2 of 2 runs), and a valid key once got 401 just before.
//
// 1. Below the threshold: work that writes is refused before it is accepted (503
//    SERVICE_UNAVAILABLE, Retry-After), /healthz keeps answering, /readyz is not ready and says
//    why, the workers stop claiming; with the filler gone the same work is accepted and completes,
//    and the ledger is exact (nothing charged for the refused work).
// 2. With the guard off (DATA_DIR_MIN_FREE_MB=0), writes until PostgreSQL runs out of space: every
//    request still gets an answer (2xx or 503), /healthz too, SIGTERM stops the server, and a
//    restart with space freed recovers every accepted task with an exact ledger.
//
// Needs root (mount) on Linux; skipped elsewhere, and on the PostgreSQL run (the embedded engine's
// own data directory is the case under test). /healthz is held to the hostile-load suite's
// liveness bound (1 s), not to a performance figure.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
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

const MIB = 1024 * 1024;
/** The tmpfs: a fresh embedded data directory takes about 40 MB of it. */
const DISK_MB = 160;
const MIN_FREE_MB = 64;
const MAX_HEALTHZ_MS = 1_000;

function skipReason(): string | null {
  if (process.platform !== "linux") return "mounts a tmpfs as DATA_DIR (Linux only)";
  if (process.getuid?.() !== 0) return "mounts a tmpfs as DATA_DIR: needs root";
  if (process.env.TEST_DATABASE_URL)
    return "the embedded engine's own data directory is the case under test; runs on the PGlite suite";
  return null;
}
let skip = skipReason();

let world: MailWorld | null = null;
const mounts: string[] = [];
const servers: MailprobeChild[] = [];

/** A fresh tmpfs of DISK_MB; the reason to skip when this machine will not mount one. */
function mountTmpfs(): string {
  const dir = mkdtempSync(join(tmpdir(), "mailprobe-disk-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${DISK_MB}m,mode=0700`, "tmpfs", dir], {
      stdio: "pipe",
    });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  mounts.push(dir);
  return dir;
}

function unmount(dir: string): void {
  const listed = mounts.indexOf(dir);
  if (listed >= 0) mounts.splice(listed, 1);
  try {
    execFileSync("umount", [dir], { stdio: "pipe" });
  } catch {
    // Still busy (a process being killed): detach it now, the kernel frees it when released.
    execFileSync("umount", ["-l", dir], { stdio: "pipe" });
  }
  rmSync(dir, { recursive: true, force: true });
}

const freeMb = (dir: string): number => {
  const s = statfsSync(dir);
  return (s.bavail * s.bsize) / MIB;
};

/** Writes `dir/filler` until at most `leaveMb` is free; returns its path. */
function fill(dir: string, leaveMb: number): string {
  const path = join(dir, "filler");
  const fd = openSync(path, "a");
  try {
    const chunk = Buffer.alloc(256 * 1024, 0x5a);
    while (freeMb(dir) > leaveMb) writeSync(fd, chunk);
  } finally {
    closeSync(fd);
  }
  return path;
}

interface Server {
  child: MailprobeChild;
  base: string;
  env: NodeJS.ProcessEnv;
}

async function startServer(dataDir: string, extra: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...inheritedEnv(),
    ...worldEnv(world!),
    PORT: String(port),
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    DATABASE_URL: "",
    // "claiming resumed" is an info line.
    LOG_LEVEL: "info",
    LOG_FORMAT: "json",
    ...extra,
  };
  const child = await startMailprobe("serve", ["serve"], env, "listening on");
  servers.push(child);
  return { child, base: `http://127.0.0.1:${port}`, env };
}

async function stopServer(
  server: Server,
  deadlineMs = 15_000,
): Promise<NonNullable<MailprobeChild["exited"]>> {
  if (!server.child.exited) server.child.proc.kill("SIGTERM");
  const exit = await Promise.race([exitOf(server.child), delay(deadlineMs).then(() => null)]);
  if (exit) return exit;
  server.child.proc.kill("SIGKILL");
  throw new Error(`the server ignored SIGTERM for ${deadlineMs} ms: ${server.child.output.slice(-2000)}`);
}

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> & { error?: { code: string; message: string } };
}

async function call(
  server: Server,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs = 20_000,
): Promise<Answer> {
  const isForm = body instanceof FormData;
  const res = await fetch(`${server.base}${path}`, {
    method,
    headers: {
      "x-api-key": key,
      ...(body !== undefined && !isForm ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: isForm ? body : JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Answer["body"]) : {} };
}

function csvUpload(rows: readonly string[]): FormData {
  const form = new FormData();
  form.append("file", new Blob([`email\n${rows.join("\n")}\n`], { type: "text/csv" }), "list.csv");
  return form;
}

/**
 * Polls /healthz every 50 ms until stopped; reports the slowest answer and any failure: no answer,
 * or a status other than 200 (and 503, when `stoppedAllowed`: the engine stopped for good, and
 * liveness says so).
 */
function watchHealthz(server: Server, stoppedAllowed = false) {
  let running = true;
  let slowestMs = 0;
  let polls = 0;
  const failures: string[] = [];
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const res = await fetch(`${server.base}/healthz`, { signal: AbortSignal.timeout(5_000) });
        await res.arrayBuffer();
        if (res.status !== 200 && !(stoppedAllowed && res.status === 503))
          failures.push(`/healthz ${res.status}`);
      } catch (error) {
        failures.push(`/healthz: ${(error as Error).message}`);
      }
      slowestMs = Math.max(slowestMs, performance.now() - started);
      polls++;
      await delay(50);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { slowestMs, polls, failures };
    },
  };
}

async function readyz(server: Server): Promise<Answer> {
  return call(server, "", "GET", "/readyz");
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await delay(100);
  }
}

async function waitForTask(server: Server, key: string, taskId: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `task ${taskId} finished`,
    async () => (await call(server, key, "GET", `/api/v1/tasks/${taskId}`)).body.finished_at != null,
    timeoutMs,
  );
}

interface LedgerRow {
  type: "grant" | "deduction";
  amount: number;
  balance_after: number;
  metadata?: { task_id?: string };
  created_at: string;
}

/** The whole ledger, oldest first, checked to chain (each balance_after = previous + amount). */
async function ledgerOf(server: Server, key: string): Promise<{ rows: LedgerRow[]; balance: number }> {
  const rows: LedgerRow[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await call(server, key, "GET", `/api/v1/credits/transactions?limit=100&offset=${offset}`);
    assert.equal(page.status, 200);
    const batch = page.body.transactions as LedgerRow[];
    rows.push(...batch);
    if (batch.length < 100) break;
  }
  rows.reverse();
  let running = 0;
  for (const row of rows) {
    running += row.amount;
    assert.equal(row.balance_after, running, `ledger row ${JSON.stringify(row)} does not chain`);
  }
  const balance = (await call(server, key, "GET", "/api/v1/credits/balance")).body.balance as number;
  assert.equal(balance, running, "the balance is the sum of the ledger");
  return { rows, balance };
}

before(async () => {
  if (skip) return;
  try {
    unmount(mountTmpfs());
  } catch (error) {
    skip = `this machine will not mount a tmpfs: ${(error as Error).message.split("\n")[0]}`;
    return;
  }
  world = await startMailWorld({
    domains: [{ name: "full.test", hosts: [{ name: "mx.full.test" }], mailboxes: ["ann", "bob", "cy"] }],
  });
});

after(async () => {
  for (const s of servers) {
    if (s.exited) continue;
    s.proc.kill("SIGKILL");
    await Promise.race([exitOf(s), delay(5_000)]);
  }
  for (const dir of [...mounts]) {
    try {
      unmount(dir);
    } catch (error) {
      console.error(`could not unmount ${dir}: ${(error as Error).message}`);
    }
  }
  await world?.close();
});

test("below DATA_DIR_MIN_FREE_MB: writes refused (503), /healthz answers, /readyz not ready; space back: work completes, ledger exact", async (t) => {
  if (skip) {
    t.skip(skip);
    return;
  }
  const disk = mountTmpfs();
  const server = await startServer(join(disk, "data"), { DATA_DIR_MIN_FREE_MB: String(MIN_FREE_MB) });
  const { api_key: key } = JSON.parse(
    await runCli(["users", "create", "--credits", "100", "--json"], server.env),
  ) as {
    api_key: string;
  };
  assert.equal((await readyz(server)).status, 200);

  const filler = fill(disk, MIN_FREE_MB / 2);
  const health = watchHealthz(server);
  try {
    await waitFor("/readyz not ready", async () => (await readyz(server)).status === 503);
    const ready = await readyz(server);
    assert.equal(ready.body.error?.code, "SERVICE_UNAVAILABLE");
    assert.match(String(ready.body.error?.message), /DATA_DIR_MIN_FREE_MB \(64 MB\)/);
    const dataDir = ready.body.data_dir as { free_mb: number; min_free_mb: number };
    assert.equal(dataDir.min_free_mb, MIN_FREE_MB);
    assert.ok(dataDir.free_mb < MIN_FREE_MB, JSON.stringify(dataDir));
    assert.ok(Number(ready.headers.get("retry-after")) >= 1);

    const writes: Array<[string, () => Promise<Answer>]> = [
      [
        "task",
        () => call(server, key, "POST", "/api/v1/tasks", { emails: ["ann@full.test", "nobody@full.test"] }),
      ],
      ["upload", () => call(server, key, "POST", "/api/v1/tasks/batch/upload", csvUpload(["bob@full.test"]))],
      ["verify", () => call(server, key, "POST", "/api/v1/verify", { email: "cy@full.test" })],
      ["key", () => call(server, key, "POST", "/api/v1/api-keys", { name: "more", purpose: "custom" })],
      ["webhook secret", () => call(server, key, "POST", "/api/v1/webhooks/secret/rotate")],
    ];
    for (const [what, send] of writes) {
      const res = await send();
      assert.equal(res.status, 503, `${what}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error?.code, "SERVICE_UNAVAILABLE", what);
      assert.match(String(res.body.error?.message), /DATA_DIR/, what);
      assert.ok(Number(res.headers.get("retry-after")) >= 1, `${what}: Retry-After`);
    }
    // Reads go on.
    assert.equal((await call(server, key, "GET", "/api/v1/credits/balance")).body.balance, 100);
    await waitFor("the workers pause", async () => server.child.output.includes("claiming paused"));
  } finally {
    const h = await health.stop();
    assert.deepEqual(h.failures, []);
    assert.ok(h.polls > 0);
    assert.ok(h.slowestMs < MAX_HEALTHZ_MS, `/healthz took ${Math.round(h.slowestMs)} ms`);
  }

  rmSync(filler);
  await waitFor("/readyz ready again", async () => (await readyz(server)).status === 200);
  const ready = await readyz(server);
  assert.ok((ready.body.data_dir as { free_mb: number }).free_mb >= MIN_FREE_MB);
  const created = await call(server, key, "POST", "/api/v1/tasks", {
    emails: ["ann@full.test", "nobody@full.test"],
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const taskId = created.body.id as string;
  await waitForTask(server, key, taskId);
  await waitFor("the workers resume", async () => server.child.output.includes("claiming resumed"));

  // Exact: the operator's grant, then this task's rows only; nothing for the refused work.
  const { rows, balance } = await ledgerOf(server, key);
  assert.equal(rows[0]!.type, "grant");
  assert.equal(rows[0]!.amount, 100);
  for (const row of rows.slice(1)) assert.equal(row.metadata?.task_id, taskId, JSON.stringify(row));
  // ann is valid, nobody invalid: both billed.
  assert.equal(balance, 98);
  assert.equal((await stopServer(server)).code, 0);
});

test("guard off (DATA_DIR_MIN_FREE_MB=0): PostgreSQL out of space ends in 503s, not a hung server; a restart recovers", async (t) => {
  if (skip) {
    t.skip(skip);
    return;
  }
  const disk = mountTmpfs();
  const dataDir = join(disk, "data");
  // Short leases: jobs a dead engine left `processing` are claimed again soon after the restart.
  const env = { DATA_DIR_MIN_FREE_MB: "0", JOB_LEASE_SECONDS: "5" };
  let server = await startServer(dataDir, env);
  const { api_key: key } = JSON.parse(
    await runCli(["users", "create", "--credits", "1000", "--json"], server.env),
  ) as { api_key: string };

  // Less than the 16 MiB of one WAL segment: PostgreSQL cannot start the next one.
  const filler = fill(disk, 8);
  const accepted: string[] = [];
  const statuses = new Map<number, number>();
  const health = watchHealthz(server, true);
  try {
    for (let round = 0; round < 40 && !server.child.output.includes("embedded database stopped"); round++) {
      const tag = randomBytes(4).toString("hex");
      const rows = [
        ...Array.from({ length: 3_000 }, (_, i) => `valid+${tag}-${i}@sandbox.mailprobe.invalid`),
        "ann@full.test",
        "nobody@full.test",
      ];
      const answers = await Promise.all([
        call(server, key, "POST", "/api/v1/tasks/batch/upload", csvUpload(rows)),
        call(server, key, "POST", "/api/v1/verify", { email: `valid+${tag}@sandbox.mailprobe.invalid` }),
        call(server, key, "GET", "/api/v1/credits/balance"),
      ]);
      for (const a of answers) {
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        assert.ok([200, 201, 202, 503].includes(a.status), `${a.status}: ${JSON.stringify(a.body)}`);
        if (a.status === 503) assert.equal(a.body.error?.code, "SERVICE_UNAVAILABLE");
      }
      if (answers[0].status === 202) accepted.push(answers[0].body.task_id as string);
    }
  } finally {
    const h = await health.stop();
    assert.deepEqual(h.failures, []);
    assert.ok(h.slowestMs < MAX_HEALTHZ_MS, `/healthz took ${Math.round(h.slowestMs)} ms`);
  }
  const died = server.child.output.includes("embedded database stopped");
  t.diagnostic(
    `answers by status: ${JSON.stringify(Object.fromEntries(statuses))}; accepted uploads: ` +
      `${accepted.length}; engine stopped (PANIC): ${died}`,
  );
  assert.ok(statuses.get(503), "the disk never filled: no request was refused");
  if (died) {
    // Liveness says what only a restart mends, so a supervisor restarts the process.
    const live = await fetch(`${server.base}/healthz`);
    assert.equal(live.status, 503);
    assert.match(
      ((await live.json()) as { error: { message: string } }).error.message,
      /^Restart this process/,
    );
  }

  // The process still obeys SIGTERM.
  await stopServer(server);
  rmSync(filler);
  server = await startServer(dataDir, env);
  assert.equal((await readyz(server)).status, 200);
  for (const taskId of accepted) await waitForTask(server, key, taskId, 120_000);
  await ledgerOf(server, key);
  const created = await call(server, key, "POST", "/api/v1/tasks", { emails: ["bob@full.test"] });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  await waitForTask(server, key, created.body.id as string);
  await ledgerOf(server, key);
  assert.equal((await stopServer(server)).code, 0);
});
