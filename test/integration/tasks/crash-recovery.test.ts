// A worker killed mid-task (a real child process, SIGKILL) loses no job and bills nothing twice:
// its leases expire, another process takes the jobs over, and the task finishes exactly once.
// Runs on both engines: on PGlite the children own a data directory one after the other; on
// PostgreSQL they share TEST_DATABASE_URL.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { openPglite } from "../../../src/db/pglite.ts";
import { openPostgres } from "../../../src/db/postgres.ts";
import { worldEnv } from "../../support/batch.ts";
import { openTestDatabase, testDatabaseUrl } from "../../support/test-db.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";

const DOMAINS = 30;
const PER_DOMAIN = 20;
/** On PostgreSQL: a migrated schema of this file's own, shared by the children. */
let pgUrl: string | null = null;

let world: MailWorld;
let dataDir: string;
const children: ChildProcess[] = [];

// A child killed by a signal has exitCode null too; only both null means it still runs.
const isRunning = (c: ChildProcess): boolean => c.exitCode === null && c.signalCode === null;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

function childEnv(port: number): NodeJS.ProcessEnv {
  // NODE_TEST_CONTEXT would make the child talk the test runner's protocol on stdout.
  const { NODE_TEST_CONTEXT: _ctx, ...inherited } = process.env;
  return {
    ...inherited,
    ...worldEnv(world, {
      WORKER_CONCURRENCY: "2",
      JOB_LEASE_SECONDS: "5",
      VERIFY_RETRY_DELAYS: "0.05",
      SHUTDOWN_TIMEOUT_MS: "3000",
    }),
    PORT: String(port),
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
    // Cluster mode has no generated secrets: give the children the key creation needs.
    ...(pgUrl ? { DATABASE_URL: pgUrl, ENCRYPTION_KEY: "11".repeat(32) } : { DATABASE_URL: "" }),
  };
}

/** Starts `mailprobe serve` and resolves once it listens. */
async function startServer(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["bin/mailprobe.js", "serve"], {
    env: childEnv(port),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${output}`)), 60_000);
    child.stdout.on("data", (d: Buffer) => {
      output += d.toString();
      if (output.includes("listening on")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => reject(new Error(`server exited ${code}: ${output}`)));
  });
  return child;
}

async function cli(port: number, args: string[]): Promise<string> {
  const child = spawn(process.execPath, ["bin/mailprobe.js", ...args], {
    env: childEnv(port),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  assert.equal(code, 0, err);
  return out;
}

async function api<T>(port: number, key: string, path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  });
  return (await res.json()) as T;
}

interface TaskBody {
  metrics: {
    job_status: Record<string, number>;
    verification_status: Record<string, number>;
  };
  finished_at: string | null;
}

before(async () => {
  world = await startMailWorld({
    latencyMs: 20,
    domains: Array.from({ length: DOMAINS }, (_, d) => ({
      name: `crash${d}.test`,
      hosts: [{ name: `mx.crash${d}.test` }],
      mailboxes: Array.from({ length: PER_DOMAIN / 2 }, (_, i) => `user${i}`),
    })),
  });
  dataDir = await mkdtemp(join(tmpdir(), "mailprobe-crash-"));
  if (process.env.TEST_DATABASE_URL) {
    const db = await openTestDatabase();
    pgUrl = testDatabaseUrl(db);
    await db.close();
  }
});

after(async () => {
  for (const c of children) if (isRunning(c)) c.kill("SIGKILL");
  await world?.close();
  await rm(dataDir, { recursive: true, force: true });
});

test("SIGKILL mid-task: another process finishes it, every job once, one reservation, one refund", async () => {
  const port = await freePort();
  const first = await startServer(port);
  const user = JSON.parse(await cli(port, ["users", "create", "--credits", "1000", "--json"])) as {
    user_id: string;
    api_key: string;
  };
  const emails = Array.from({ length: DOMAINS }, (_, d) =>
    Array.from({ length: PER_DOMAIN }, (_, i) => `user${i}@crash${d}.test`),
  ).flat();
  const created = await api<{ id: string; email_count: number }>(port, user.api_key, "/api/v1/tasks", {
    method: "POST",
    body: JSON.stringify({ emails }),
  });
  assert.equal(created.email_count, emails.length);

  // Let it make some progress, then kill it without any chance to clean up.
  let completedBeforeKill = 0;
  for (let i = 0; i < 300 && completedBeforeKill < 60; i++) {
    await delay(50);
    completedBeforeKill = (await api<TaskBody>(port, user.api_key, `/api/v1/tasks/${created.id}`)).metrics
      .job_status.completed!;
  }
  first.kill("SIGKILL");
  await new Promise((r) => first.once("exit", r));
  assert.ok(
    completedBeforeKill > 0 && completedBeforeKill < emails.length,
    `killed mid-task (${completedBeforeKill} done)`,
  );

  await startServer(port);
  let task: TaskBody | null = null;
  for (let i = 0; i < 600; i++) {
    task = await api<TaskBody>(port, user.api_key, `/api/v1/tasks/${created.id}`);
    if (task.finished_at) break;
    await delay(100);
  }
  assert.ok(task?.finished_at, "the second process finished the task");
  assert.deepEqual(task.metrics.job_status, {
    pending: 0,
    processing: 0,
    completed: emails.length,
    failed: 0,
  });
  assert.equal(task.metrics.verification_status.valid, emails.length / 2);
  assert.equal(task.metrics.verification_status.invalid, emails.length / 2);

  const { transactions } = await api<{ transactions: Array<{ amount: number; reason: string }> }>(
    port,
    user.api_key,
    "/api/v1/credits/transactions?limit=100",
  );
  assert.deepEqual(
    transactions.map((t) => [t.reason, t.amount]).sort(),
    [
      ["initial_grant", 1000],
      ["task_reservation", -emails.length],
    ].sort(),
  );
  const balance = await api<{ balance: number }>(port, user.api_key, "/api/v1/credits/balance");
  assert.equal(balance.balance, 1000 - emails.length);

  // No result stored twice: exactly one verification per job.
  const running = children.filter(isRunning);
  for (const c of running) c.kill("SIGTERM");
  await Promise.all(running.map((c) => new Promise((r) => c.once("exit", r))));
  const db = pgUrl ? openPostgres(pgUrl, 2) : await openPglite(join(dataDir, "pgdata"));
  try {
    const { rows } = await db.query<{ n: number }>(
      "select count(*) as n from email_verifications where task_id = $1",
      [created.id],
    );
    assert.equal(rows[0]!.n, emails.length);
  } finally {
    await db.close();
  }
});
