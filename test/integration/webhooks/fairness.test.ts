// Webhook scheduling (DESIGN §5 "Webhook"): deliveries run concurrently, a slow receiver only
// occupies its own host's slots (WEBHOOK_MAX_PER_HOST), users take turns, and one user never
// holds more than its share of the dispatcher. Real HTTP receivers on 127.0.0.1, named through
// the dispatcher's resolve port so that each receiver is a host of its own.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, beforeEach, test } from "node:test";
import { ManualClock, systemClock, type Clock } from "../../../src/lib/clock.ts";
import { createLogger } from "../../../src/observability/logger.ts";
import {
  createWebhookDispatcher,
  type WebhookDispatcher,
  type WebhookDispatcherDeps,
} from "../../../src/webhooks/dispatcher.ts";
import { enqueueTaskCompleted } from "../../../src/webhooks/outbox.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

let ctx: TestContext;
const servers: Server[] = [];
const dispatchers: WebhookDispatcher[] = [];

before(async () => {
  ctx = await createTestContext();
});
// Each test starts with an empty queue: nothing a previous test left pending is claimed.
beforeEach(async () => {
  await ctx.db.query("update webhook_deliveries set status = 'failed', locked_until = null");
});
after(async () => {
  await Promise.all(dispatchers.map((d) => d.stop()));
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  await ctx.close();
});

interface Receiver {
  port: number;
  /** webhook-id of each request, in arrival order. */
  ids: string[];
  /** Requests being answered now, and the most seen at once. */
  active: number;
  maxActive: number;
  /** Date.now() of each arrival. */
  arrivals: number[];
}

/** An HTTP receiver on 127.0.0.1 that answers 200 after `delayMs`. */
async function startReceiver(delayMs: number): Promise<Receiver> {
  const r: Receiver = { port: 0, ids: [], active: 0, maxActive: 0, arrivals: [] };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    r.active++;
    r.maxActive = Math.max(r.maxActive, r.active);
    r.arrivals.push(Date.now());
    r.ids.push(String(req.headers["webhook-id"]));
    req.resume();
    req.on("end", () => {
      setTimeout(() => {
        r.active--;
        res.writeHead(200).end("ok");
      }, delayMs);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  r.port = (server.address() as AddressInfo).port;
  return r;
}

/** Every `*.hooks.test` name is a receiver host of its own, all on 127.0.0.1. */
const resolve = async (host: string): Promise<string[]> => {
  assert.match(host, /\.hooks\.test$/);
  return ["127.0.0.1"];
};

function dispatcherFor(clock: Clock, deps: Partial<WebhookDispatcherDeps> = {}): WebhookDispatcher {
  const d = createWebhookDispatcher({
    db: ctx.db,
    clock,
    logger: createLogger("silent"),
    secrets: ctx.services.webhookSecrets,
    config: {
      allowPrivate: true,
      timeoutMs: 10_000,
      retryWindowMs: 3_600_000,
      concurrency: 8,
      maxPerHost: 2,
    },
    resolve,
    random: () => 0,
    ...deps,
  });
  dispatchers.push(d);
  return d;
}

/** Enqueues `n` task.completed deliveries of `userId` to `url`; returns their delivery ids. */
async function enqueue(userId: string, url: string, n: number, clock: Clock): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const taskId = randomUUID();
    await ctx.db.query(
      `insert into tasks (id, user_id, webhook_url, source, email_count, domain_count)
       values ($1, $2, $3, 'api_key', 1, 1)`,
      [taskId, userId, url],
    );
    await ctx.db.transaction((tx) =>
      enqueueTaskCompleted(tx, {
        userId,
        url,
        event: { taskId, uploadId: null, metrics: { valid: 1 } },
        at: clock.now(),
      }),
    );
    const { rows } = await ctx.db.query<{ id: string }>(
      "select id from webhook_deliveries where task_id = $1",
      [taskId],
    );
    ids.push(rows[0]!.id);
    if (clock instanceof ManualClock) clock.advance(1);
  }
  return ids;
}

async function until(what: string, done: () => boolean | Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

const statusCounts = async (ids: readonly string[]): Promise<Record<string, number>> => {
  const { rows } = await ctx.db.query<{ status: string; n: number }>(
    "select status, count(*)::int as n from webhook_deliveries where id = any($1::uuid[]) group by status",
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
};

test("a slow receiver does not hold up another user's webhook, and never gets more than its host's slots", async (t) => {
  const SLOW_MS = 3_000;
  const slow = await startReceiver(SLOW_MS);
  const fast = await startReceiver(0);
  const a = await ctx.createUser();
  const b = await ctx.createUser();
  const slowIds = await enqueue(a.userId, `http://slow.hooks.test:${slow.port}/hook`, 20, systemClock);
  const dispatcher = dispatcherFor(systemClock, { pollIntervalMs: 250 });
  dispatcher.start();

  await until("the slow receiver's first requests", () => slow.ids.length >= 2);
  // User b's task completes while the slow receiver holds its two slots, with 18 more queued.
  const due = Date.now();
  const [fastId] = await enqueue(b.userId, `http://fast.hooks.test:${fast.port}/hook`, 1, systemClock);
  await until("the fast receiver's request", () => fast.ids.length === 1, 10_000);
  const latencyMs = Date.now() - due;
  assert.deepEqual(fast.ids, [fastId]);
  const slowQueue = await statusCounts(slowIds);
  t.diagnostic(
    `fast webhook delivered ${latencyMs.toString()} ms after it was due; slow queue ${JSON.stringify(slowQueue)}`,
  );

  await dispatcher.stop();
  // Loose bounds: within about one poll of being due, and long before the slow queue drains
  // (20 deliveries × 3 s / 2 slots = 30 s).
  assert.ok(latencyMs < SLOW_MS, `fast webhook delivered ${latencyMs.toString()} ms after it was due`);
  assert.ok((slowQueue.pending ?? 0) >= 10, `slow queue still waiting: ${JSON.stringify(slowQueue)}`);
  assert.equal(slow.maxActive, 2, "the slow host had exactly its two slots in use, never more");
  assert.ok(slow.ids.length <= 6, `slow deliveries attempted so far: ${slow.ids.length.toString()}`);
});

test("users take turns on a shared receiver host: each user's first before anyone's second", async () => {
  const shared = await startReceiver(0);
  const clock = new ManualClock(new Date());
  const url = `http://shared.hooks.test:${shared.port}/hook`;
  const c = await ctx.createUser();
  const d = await ctx.createUser();
  // c's three are all older than d's: oldest-first alone would send c, c.
  const cIds = await enqueue(c.userId, url, 3, clock);
  const dIds = await enqueue(d.userId, url, 3, clock);
  const dispatcher = dispatcherFor(clock);

  assert.equal(await dispatcher.runOnce(), 2, "two slots on the shared host");
  assert.deepEqual(new Set(shared.ids), new Set([cIds[0], dIds[0]]));
  assert.equal(await dispatcher.runOnce(), 2);
  assert.deepEqual(new Set(shared.ids.slice(2)), new Set([cIds[1], dIds[1]]));
  assert.equal(shared.maxActive, 2);
});

test("one user holds at most half of the dispatcher's slots, however many receivers it has", async () => {
  const receivers = await Promise.all(Array.from({ length: 6 }, () => startReceiver(0)));
  const clock = new ManualClock(new Date());
  const e = await ctx.createUser();
  const f = await ctx.createUser();
  for (const [i, r] of receivers.entries())
    await enqueue(e.userId, `http://r${i.toString()}.hooks.test:${r.port}/hook`, 1, clock);
  const [fId] = await enqueue(f.userId, `http://r0.hooks.test:${receivers[0]!.port}/hook`, 1, clock);

  // Concurrency 8: e gets 4 (half), f its one; the other three slots stay free for other users.
  const dispatcher = dispatcherFor(clock);
  assert.equal(await dispatcher.runOnce(), 5);
  assert.ok(receivers[0]!.ids.includes(fId!));
  assert.equal(await dispatcher.runOnce(), 2, "e's last two, once its first four are done");
});
