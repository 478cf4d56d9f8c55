// A worker killed mid-task (a real child process, SIGKILL) loses no job and bills nothing twice:
// its leases expire, another process takes the jobs over, and the task finishes exactly once.
// Runs on both engines: on PGlite the children own a data directory one after the other; on
// PostgreSQL they share TEST_DATABASE_URL.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { openPglite } from "../../../src/db/pglite.ts";
import { openPostgres } from "../../../src/db/postgres.ts";
import { worldEnv } from "../../support/batch.ts";
import { openTestDatabase, testDatabaseUrl } from "../../support/test-db.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import {
  exitOf,
  freePort,
  inheritedEnv,
  runCli,
  startMailprobe,
  type MailprobeChild,
} from "../../support/child-process.ts";

const DOMAINS = 30;
const PER_DOMAIN = 20;
/** On PostgreSQL: a migrated schema of this file's own, shared by the children. */
let pgUrl: string | null = null;

let world: MailWorld;
let dataDir: string;
const children: MailprobeChild[] = [];

function childEnv(port: number): NodeJS.ProcessEnv {
  return {
    ...inheritedEnv(),
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
async function startServer(port: number): Promise<MailprobeChild> {
  const child = await startMailprobe("serve", ["serve"], childEnv(port), "listening on");
  children.push(child);
  return child;
}

const cli = (port: number, args: string[]): Promise<string> => runCli(args, childEnv(port));

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
  for (const c of children) if (!c.exited) c.proc.kill("SIGKILL");
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
  first.proc.kill("SIGKILL");
  await exitOf(first);
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
    cancelled: 0,
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
  const running = children.filter((c) => !c.exited);
  for (const c of running) c.proc.kill("SIGTERM");
  await Promise.all(running.map(exitOf));
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
