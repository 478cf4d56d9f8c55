// PostgreSQL restarting under a running task strands nothing. A private
// cluster of this file's own (initdb + pg_ctl on a free port; the shared test server is never
// touched) serves two real processes — `mailprobe serve` (API + workers + webhook dispatcher) and
// `mailprobe worker` — while a 300-address task runs against the mail-world simulator. The
// cluster is restarted three times mid-task (`pg_ctl restart -m fast` twice, then a stop held for
// a second and a start, so /readyz is seen reporting the outage). Both processes must survive,
// the task must finish with every job completed exactly once, the ledger must add up, and the
// completion webhook must be queued once. Skips (with the reason) where initdb is missing.
import assert from "node:assert/strict";
import { createServer as createHttpServer, type Server } from "node:http";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { DatabaseUnavailableError, type Database } from "../../../src/db/client.ts";
import { openPostgres } from "../../../src/db/postgres.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { startPrivateCluster, type PrivateCluster } from "../../support/private-pg.ts";
import {
  exitOf,
  freePort,
  inheritedEnv,
  runCli,
  startMailprobe,
  type MailprobeChild,
} from "../../support/child-process.ts";

const DOMAINS = 50;
const PER_DOMAIN = 6;
const TOTAL = DOMAINS * PER_DOMAIN;

let cluster: PrivateCluster | null = null;
let skip: string | null = null;
let world: MailWorld;
let db: Database;
let receiver: Server;
let hooksReceived = 0;

const children: MailprobeChild[] = [];

function childEnv(port: number): NodeJS.ProcessEnv {
  return {
    ...inheritedEnv(),
    ...worldEnv(world, {
      WORKER_CONCURRENCY: "3",
      JOB_LEASE_SECONDS: "6",
      WEBHOOK_ALLOW_PRIVATE: "true",
      SHUTDOWN_TIMEOUT_MS: "5000",
    }),
    PORT: String(port),
    HOST: "127.0.0.1",
    DATABASE_URL: cluster!.url,
    DATABASE_POOL_SIZE: "6",
    ENCRYPTION_KEY: "22".repeat(32),
    JWT_SECRET: "pg-restart-test-secret-0123456789abcdef",
    LOG_LEVEL: "warn",
  };
}

/** Starts a mailprobe sub-command and resolves once its start line is printed. */
async function startChild(
  name: string,
  args: string[],
  port: number,
  ready: string,
): Promise<MailprobeChild> {
  const child = await startMailprobe(name, args, childEnv(port), ready);
  children.push(child);
  return child;
}

const describeChildren = (): string =>
  children
    .map(
      (c) =>
        `${c.name}: ${c.exited ? `exited ${JSON.stringify(c.exited)}` : "running"}\n${c.output.slice(-2_000)}`,
    )
    .join("\n");

const cli = (port: number, args: string[]): Promise<string> => runCli(args, childEnv(port));

/** A query that waits out the outage (our own pool sees the restarts too). */
async function settledQuery<R>(text: string, params: unknown[] = []): Promise<R[]> {
  for (let i = 0; ; i++) {
    try {
      return (await db.query<R>(text, params)).rows;
    } catch (error) {
      if (i > 100) throw error;
      await delay(100);
    }
  }
}

async function completedCount(taskId: string): Promise<number> {
  const rows = await settledQuery<{ n: number }>(
    "select count(*) as n from email_jobs where task_id = $1 and status = 'completed'",
    [taskId],
  );
  return rows[0]!.n;
}

before(async () => {
  const started = await startPrivateCluster();
  if ("skip" in started) {
    skip = started.skip;
    return;
  }
  cluster = started;
  db = openPostgres(cluster.url, 2);
  world = await startMailWorld({
    // Slow enough replies that the task outlasts three restarts.
    latencyMs: 120,
    domains: Array.from({ length: DOMAINS }, (_, d) => ({
      name: `pgr${d}.test`,
      hosts: [{ name: `mx.pgr${d}.test` }],
      mailboxes: Array.from({ length: PER_DOMAIN / 2 }, (_, i) => `user${i}`),
    })),
  });
  receiver = createHttpServer((req, res) => {
    req.resume();
    req.on("end", () => {
      hooksReceived++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
});

after(async () => {
  for (const c of children) if (!c.exited) c.proc.kill("SIGKILL");
  await db?.close().catch(() => {});
  await world?.close();
  if (receiver) await new Promise<void>((r) => receiver.close(() => r()));
  await cluster?.destroy();
});

test("three PostgreSQL restarts mid-task: no process dies, the task finishes, every job once", async (t) => {
  if (skip !== null || cluster === null) {
    t.skip(skip ?? "no cluster");
    return;
  }
  const pg = cluster;
  const port = await freePort();
  const server = await startChild("serve", ["serve"], port, "listening on");
  const worker = await startChild("worker", ["worker"], port, "running 3 sessions");
  const user = JSON.parse(await cli(port, ["users", "create", "--credits", "1000", "--json"])) as {
    user_id: string;
    api_key: string;
  };
  const emails = Array.from({ length: DOMAINS }, (_, d) =>
    Array.from({ length: PER_DOMAIN }, (_, i) => `user${i}@pgr${d}.test`),
  ).flat();
  const hook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/tasks`, {
    method: "POST",
    headers: { authorization: `Bearer ${user.api_key}`, "content-type": "application/json" },
    body: JSON.stringify({ emails, webhook_url: hook }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const taskId = ((await res.json()) as { id: string }).id;

  // /readyz, polled throughout: the API answers every time (200 or 503), never fails to connect.
  const readiness: Array<number | "unreachable"> = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      try {
        readiness.push((await fetch(`http://127.0.0.1:${port}/readyz`)).status);
      } catch {
        readiness.push("unreachable");
      }
      await delay(50);
    }
  })();

  const restartsAt: number[] = [];
  try {
    let checkpoint = 0;
    for (let round = 1; round <= 3; round++) {
      // Each round waits for real progress since the last one: the pipeline has recovered.
      const target = checkpoint + Math.ceil(TOTAL * 0.12);
      let done = 0;
      for (let i = 0; i < 600 && done < target; i++) {
        done = await completedCount(taskId);
        await delay(100);
      }
      assert.ok(done >= target && done < TOTAL, `round ${round}: mid-task (${done}/${TOTAL} completed)`);
      restartsAt.push(done);
      if (round < 3) {
        await pg.restart();
      } else {
        await pg.stop();
        const seen = readiness.length;
        for (let i = 0; i < 100 && !readiness.slice(seen).includes(503); i++) await delay(50);
        assert.ok(readiness.slice(seen).includes(503), "/readyz reports the outage with 503");
        await delay(1_000);
        await pg.start();
      }
      checkpoint = await completedCount(taskId);
    }

    let finished = false;
    for (let i = 0; i < 1_200 && !finished; i++) {
      const rows = await settledQuery<{ finished_at: Date | null }>(
        "select finished_at from tasks where id = $1",
        [taskId],
      );
      finished = rows[0]?.finished_at != null;
      if (!finished) await delay(100);
    }
    if (!finished) {
      const open = await settledQuery(
        "select status, locked_by, locked_until, attempts, count(*) as n from email_jobs where task_id = $1 and status <> 'completed' group by 1, 2, 3, 4",
        [taskId],
      );
      assert.fail(
        `the task did not finish after three restarts: ${JSON.stringify(open)}\n${describeChildren()}`,
      );
    }
    for (let i = 0; i < 100 && hooksReceived === 0; i++) await delay(100);
    const last = readiness.length;
    for (let i = 0; i < 40 && readiness.length === last; i++) await delay(50);
  } finally {
    polling = false;
    await poller;
  }

  for (const c of [server, worker]) {
    assert.equal(c.exited, null, `${c.name} died: ${c.output.slice(-3_000)}`);
    assert.doesNotMatch(c.output, /Unhandled 'error' event|uncaught|unhandledRejection/i, c.name);
  }
  assert.ok(!readiness.includes("unreachable"), "the API answered throughout");
  assert.equal(readiness.at(-1), 200, "/readyz recovers");

  const jobs = await settledQuery<{ status: string; n: number }>(
    "select status, count(*) as n from email_jobs where task_id = $1 group by status",
    [taskId],
  );
  assert.deepEqual(jobs, [{ status: "completed", n: TOTAL }]);
  const stuck = await settledQuery<{ n: number }>(
    "select count(*) as n from email_jobs where status = 'processing'",
  );
  assert.equal(stuck[0]!.n, 0, "no job stuck in processing");
  const stored = await settledQuery<{ n: number; distinct_jobs: number }>(
    `select count(*) as n, count(distinct j.id) as distinct_jobs
       from email_verifications v join email_jobs j on j.email_id = v.id where v.task_id = $1`,
    [taskId],
  );
  const allStored = await settledQuery<{ n: number }>(
    "select count(*) as n from email_verifications where task_id = $1",
    [taskId],
  );
  assert.deepEqual(stored[0], { n: TOTAL, distinct_jobs: TOTAL });
  assert.equal(allStored[0]!.n, TOTAL, "each job's result stored exactly once");

  const ledger = await settledQuery<{ reason: string; amount: number }>(
    "select reason, amount from credit_transactions where user_id = $1 order by created_at, id",
    [user.user_id],
  );
  const balance = await settledQuery<{ balance: number }>("select balance from users where id = $1", [
    user.user_id,
  ]);
  assert.equal(
    ledger.reduce((s, t) => s + t.amount, 0),
    balance[0]!.balance,
    "the ledger sums to the balance",
  );
  assert.deepEqual(
    ledger.map((t) => [t.reason, t.amount]),
    [
      ["initial_grant", 1000],
      ["task_reservation", -TOTAL],
    ],
    "one reservation, no refund (no unknown results)",
  );
  const hooks = await settledQuery<{ n: number }>(
    "select count(*) as n from webhook_deliveries where task_id = $1",
    [taskId],
  );
  assert.equal(hooks[0]!.n, 1, "one completion webhook queued");
  assert.ok(hooksReceived >= 1, "and delivered");
  t.diagnostic(`restarted at ${restartsAt.join(", ")} of ${TOTAL} completed`);
  t.diagnostic(`/readyz answers: ${readiness.filter((s) => s === 503).length} × 503 of ${readiness.length}`);

  for (const c of [server, worker]) c.proc.kill("SIGTERM");
  const exits = await Promise.all([server, worker].map(exitOf));
  assert.deepEqual(
    exits.map((e) => e?.code),
    [0, 0],
    `clean shutdown: ${server.output.slice(-1_000)} ${worker.output.slice(-1_000)}`,
  );
});

// The mechanism behind the crashes, deterministically: the pool listens for errors only on idle
// clients, so a client checked out for a transaction whose connection dies (57P01, then
// "Connection terminated unexpectedly") emitted an unhandled 'error' event and killed the
// process — in an active statement or idle between two.
for (const when of ["during a statement", "between two statements"] as const) {
  test(`a connection killed ${when} of a transaction fails that transaction, nothing else`, async (t) => {
    if (skip !== null || cluster === null) {
      t.skip(skip ?? "no cluster");
      return;
    }
    const errors: Error[] = [];
    const victim = openPostgres(cluster.url, 2, (e) => errors.push(e));
    try {
      await assert.rejects(
        victim.transaction(async (tx) => {
          const { rows } = await tx.query<{ pid: number }>("select pg_backend_pid() as pid");
          const kill = () => db.query("select pg_terminate_backend($1)", [rows[0]!.pid]);
          if (when === "during a statement") {
            setTimeout(() => void kill(), 100);
            await tx.query("select pg_sleep(5)");
          } else {
            await kill();
            await delay(300);
            await tx.query("select 1");
          }
        }),
        DatabaseUnavailableError,
      );
      await delay(100);
      assert.ok(errors.length >= 1, "the connection's error reached the pool's handler");
      const { rows } = await victim.query<{ x: number }>("select 1 as x");
      assert.deepEqual(rows, [{ x: 1 }], "the pool reconnects");
    } finally {
      await victim.close();
    }
  });
}
