// Deactivating a user or revoking a key ends the work it started (tasks/stop-work.ts):
// before, the user's running task went on probing 36–41 addresses and its
// webhook was delivered, and an upload sent just before was accepted seconds later. Real parts:
// the mail-world simulator (every host waits before its banner, so groups are in flight), the
// worker role with the real engine and webhook dispatcher, a webhook receiver on loopback.
// Both engines.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import type { Principal } from "../../../src/auth/principal.ts";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

const DOMAINS = 40;
let world: MailWorld;
let ctx: TestContext;
let role: WorkerRole;
let hooks: Server;
let hookUrl = "";
const received: string[] = [];

before(async () => {
  world = await startMailWorld({
    domains: Array.from({ length: DOMAINS }, (_, i) => ({
      name: `d${i}.test`,
      hosts: [{ name: `mx.d${i}.test`, bannerDelayMs: 400 }],
      mailboxes: ["ann"],
    })),
  });
  hooks = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received.push(req.url ?? "");
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hooks.listen(0, "127.0.0.1", r));
  hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
  ctx = await createTestContext({
    env: worldEnv(world, { WORKER_CONCURRENCY: "4", WEBHOOK_ALLOW_PRIVATE: "true" }),
  });
  role = createWorkerRole(ctx.services);
  role.start();
});

after(async () => {
  await role?.stop(5_000);
  await ctx?.close();
  await world?.close();
  hooks?.close();
});

const connections = (): number => [...world.allCounters().values()].reduce((n, c) => n + c.connections, 0);

async function jobCounts(taskId: string): Promise<Record<string, number>> {
  const { rows } = await ctx.db.query<{ status: string; n: number }>(
    "select status, count(*) as n from email_jobs where task_id = $1 group by status",
    [taskId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

async function until(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await delay(25);
  }
}

async function startTask(user: TestUser, apiKey = user.apiKey): Promise<string> {
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(apiKey),
    payload: { emails: Array.from({ length: DOMAINS }, (_, i) => `ann@d${i}.test`), webhook_url: hookUrl },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: string }>().id;
}

/** What the user paid: the ledger's sum, which must equal the billed results exactly. */
async function ledgerCheck(user: TestUser, taskId: string, opening: number): Promise<void> {
  const balance = (await ctx.services.credits.balance(user.userId)).balance;
  const { rows } = await ctx.db.query<{ n: number }>(
    "select count(*) as n from email_verifications where task_id = $1 and status <> 'unknown'",
    [taskId],
  );
  assert.equal(balance, opening - Number(rows[0]!.n), "charged exactly the results delivered");
}

/**
 * Waits until the task's groups in flight at the stop have been recorded, then a little more
 * (the dispatcher polls every second): what reaches the mail servers and the receiver after the
 * stop is only what was already under way.
 */
async function afterTheStop(
  taskId: string,
  completedBefore: number,
  connectionsAtStop: number,
): Promise<number> {
  await until(
    "the groups in flight to be recorded",
    async () => ((await jobCounts(taskId)).processing ?? 0) === 0,
  );
  await delay(1_500);
  const jobs = await jobCounts(taskId);
  assert.equal(jobs.pending ?? 0, 0, JSON.stringify(jobs));
  assert.ok((jobs.cancelled ?? 0) > 0, JSON.stringify(jobs));
  // One address per domain, one group per domain: the groups under way at the stop are the
  // addresses completed after `completedBefore` was read (before the connection count and the
  // stop, so a group claimed in between is counted too).
  const underWay = (jobs.completed ?? 0) - completedBefore;
  assert.ok(
    connections() - connectionsAtStop <= underWay,
    `${connections() - connectionsAtStop} connections after the stop, ${underWay} groups were under way`,
  );
  const { rows } = await ctx.db.query<{ cancelled_at: Date | null; finished_at: Date | null }>(
    "select cancelled_at, finished_at from tasks where id = $1",
    [taskId],
  );
  assert.ok(rows[0]!.cancelled_at && rows[0]!.finished_at, "the task is cancelled and finished");
  assert.deepEqual(received, [], "no webhook after the stop");
  return underWay;
}

test("deactivating a user cancels their running task: no new SMTP connection, no webhook, an exact ledger", async (t) => {
  received.length = 0;
  const user = await ctx.createUser(100);
  const taskId = await startTask(user);
  await until("some addresses verified", async () => ((await jobCounts(taskId)).completed ?? 0) >= 4);
  const completedBefore = (await jobCounts(taskId)).completed ?? 0;
  const atStop = connections();
  await ctx.services.operator.deactivateUser(user.userId);
  const underWay = await afterTheStop(taskId, completedBefore, atStop);
  const jobs = await jobCounts(taskId);
  t.diagnostic(
    `at the stop: ${underWay} groups under way; after: ${JSON.stringify(jobs)}, ${connections() - atStop} connections`,
  );
  await ledgerCheck(user, taskId, 100);
  const deliveries = await ctx.db.query<{ n: number }>(
    "select count(*) as n from webhook_deliveries where user_id = $1 and status in ('pending', 'delivering')",
    [user.userId],
  );
  assert.equal(Number(deliveries.rows[0]!.n), 0);
});

test("revoking a key cancels the tasks it created, not the user's others", async () => {
  received.length = 0;
  const user = await ctx.createUser(200);
  const second = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/api-keys",
    headers: ctx.bearer(user.apiKey),
    payload: { name: "ci", purpose: "custom" },
  });
  assert.equal(second.statusCode, 201, second.body);
  const { id: keyId, key } = second.json<{ id: string; key: string }>();
  const byKey = await startTask(user, key);
  await until("some addresses verified", async () => ((await jobCounts(byKey)).completed ?? 0) >= 2);
  const completedBefore = (await jobCounts(byKey)).completed ?? 0;
  const atStop = connections();
  const revoked = await ctx.app.inject({
    method: "DELETE",
    url: `/api/v1/api-keys/${keyId}`,
    headers: ctx.bearer(user.apiKey),
  });
  assert.ok([200, 204].includes(revoked.statusCode), revoked.body);
  await afterTheStop(byKey, completedBefore, atStop);
  await ledgerCheck(user, byKey, 200);
  // The user's first key still creates tasks, and they run to the end.
  const other = await startTask(user);
  await until(
    "the other task to finish",
    async () => (await ctx.services.tasks.get(principalOf(user), other)).task.finishedAt !== null,
    60_000,
  );
});

test("a task whose request authenticated before the deactivation is refused when it would be written: nothing created", async () => {
  const user = await ctx.createUser(10);
  const principal = principalOf(user);
  await ctx.services.operator.deactivateUser(user.userId);
  await assert.rejects(
    ctx.services.tasks.create(principal, {
      emails: ["ann@d1.test"],
      webhookUrl: null,
      retryWindowMinutes: 0,
      idempotencyKey: null,
    }),
    (e: unknown) =>
      (e as { code?: string }).code === "UNAUTHORIZED" && /deactivated/.test((e as Error).message),
  );
  const { rows } = await ctx.db.query<{ n: number }>("select count(*) as n from tasks where user_id = $1", [
    user.userId,
  ]);
  assert.equal(Number(rows[0]!.n), 0);
  assert.equal((await ctx.services.credits.balance(user.userId)).balance, 10);
});

function principalOf(user: TestUser): Principal {
  return {
    userId: user.userId,
    source: "api_key",
    apiKeyId: user.apiKeyId,
    apiKeyPurpose: "custom",
    credentialId: user.apiKeyId,
  };
}
