// Completion webhooks end to end (DESIGN §5 "Webhook"): outbox row → dispatcher → a real HTTP
// receiver on 127.0.0.1, on the real test database. Time moves only through a ManualClock.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import type { WebhookConfig } from "../../../src/config/index.ts";
import {
  listWebhookAttempts,
  listWebhookDeliveriesOfTask,
  releaseExpiredWebhookLeases,
  type WebhookDelivery,
} from "../../../src/db/queries/webhook-deliveries.ts";
import { createLogger } from "../../../src/observability/logger.ts";
import {
  createWebhookDispatcher,
  type WebhookDispatcher,
  type WebhookDispatcherDeps,
} from "../../../src/webhooks/dispatcher.ts";
import { enqueueTaskCompleted, type TaskCompletedEvent } from "../../../src/webhooks/outbox.ts";
import { createTestContext, ManualClock, type TestContext } from "../../support/test-app.ts";

const HOUR_MS = 3_600_000;

let ctx: TestContext;
const servers: Server[] = [];
const dispatchers: WebhookDispatcher[] = [];

before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await Promise.all(dispatchers.map((d) => d.stop()));
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  await ctx.close();
});

interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  url(path?: string): string;
  port: number;
  requests: Received[];
}

/** An HTTP receiver on 127.0.0.1; `respond` gets the n-th request (0-based) once its body is read. */
async function startReceiver(
  respond: (res: ServerResponse, n: number, req: IncomingMessage) => void,
): Promise<Receiver> {
  const requests: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      respond(res, requests.length - 1, req);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { port, requests, url: (path = "/hook") => `http://127.0.0.1:${port}${path}` };
}

const answer =
  (status: number, headers: Record<string, string> = {}) =>
  (res: ServerResponse) => {
    res.writeHead(status, { "content-type": "text/plain", ...headers });
    res.end("ok");
  };

function dispatcherFor(
  clock: ManualClock,
  config: Partial<WebhookConfig> = {},
  deps: Partial<WebhookDispatcherDeps> = {},
): WebhookDispatcher {
  const d = createWebhookDispatcher({
    db: ctx.db,
    clock,
    logger: createLogger("silent"),
    config: { allowPrivate: true, timeoutMs: 5_000, retryWindowMs: 24 * HOUR_MS, ...config },
    secrets: ctx.services.webhookSecrets,
    random: () => 0,
    ...deps,
  });
  dispatchers.push(d);
  return d;
}

async function createTask(userId: string, webhookUrl: string): Promise<string> {
  const id = randomUUID();
  await ctx.db.query(
    `insert into tasks (id, user_id, webhook_url, source, email_count, domain_count)
     values ($1, $2, $3, 'api_key', 1, 1)`,
    [id, userId, webhookUrl],
  );
  return id;
}

/** A user, a task pointing at `url`, and its task.completed event enqueued in a transaction. */
async function enqueued(
  url: string,
  clock: ManualClock,
  event: Partial<TaskCompletedEvent> = {},
): Promise<{ userId: string; apiKey: string; taskId: string; event: TaskCompletedEvent }> {
  const user = await ctx.createUser();
  const taskId = await createTask(user.userId, url);
  const full: TaskCompletedEvent = { taskId, uploadId: null, metrics: { valid: 1 }, ...event };
  await ctx.db.transaction((tx) =>
    enqueueTaskCompleted(tx, { userId: user.userId, url, event: full, at: clock.now() }),
  );
  return { ...user, taskId, event: full };
}

async function deliveryOf(taskId: string): Promise<WebhookDelivery> {
  const rows = await listWebhookDeliveriesOfTask(ctx.db, taskId);
  assert.equal(rows.length, 1, `one delivery for task ${taskId}`);
  return rows[0]!;
}

/** Runs rounds (without moving the clock) until the task's delivery leaves `pending`/`delivering`. */
async function runUntilSettled(
  d: WebhookDispatcher,
  taskId: string,
  maxRounds = 5,
): Promise<WebhookDelivery> {
  for (let i = 0; i < maxRounds; i++) {
    await d.runOnce();
    const row = await deliveryOf(taskId);
    if (row.status !== "pending" && row.status !== "delivering") return row;
  }
  return deliveryOf(taskId);
}

/** Ends a delivery a test leaves retrying, so later tests' dispatchers never pick it up. */
async function abandon(taskId: string): Promise<void> {
  await ctx.db.query(
    "update webhook_deliveries set status = 'failed', locked_until = null where task_id = $1 and status in ('pending', 'delivering')",
    [taskId],
  );
}

const secretOf = async (apiKey: string): Promise<string> => {
  const res = await ctx.app.inject({
    method: "GET",
    url: "/api/v1/webhooks/secret",
    headers: ctx.bearer(apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ secret: string }>().secret;
};

describe("delivery", () => {
  test("one signed POST with the documented body; enqueueing the same task twice still delivers once", async () => {
    const receiver = await startReceiver(answer(200));
    const clock = new ManualClock(new Date());
    const { taskId, apiKey, userId } = await enqueued(receiver.url("/hooks/mailprobe?src=test"), clock, {
      uploadId: "7f1d2b8e-3c4a-4e5f-8a9b-0c1d2e3f4a5b",
      metrics: { valid: 7, invalid: 2, unknown: 1, total: 10 },
    });
    const at = clock.now();
    // The batch pipeline may finish a task twice (a retried transaction): still one delivery.
    await ctx.db.transaction((tx) =>
      enqueueTaskCompleted(tx, {
        userId,
        url: receiver.url("/elsewhere"),
        event: { taskId, uploadId: null, metrics: { other: true } },
        at: new Date(at.getTime() + 1000),
      }),
    );
    const dispatcher = dispatcherFor(clock);

    const settled = await runUntilSettled(dispatcher, taskId);
    assert.equal(settled.status, "delivered");
    for (let i = 0; i < 3; i++) await dispatcher.runOnce();

    assert.equal(receiver.requests.length, 1, "exactly one POST");
    const [req] = receiver.requests;
    assert.equal(req!.method, "POST");
    assert.equal(req!.path, "/hooks/mailprobe?src=test");
    assert.match(String(req!.headers["content-type"]), /^application\/json/);
    assert.equal(req!.headers["user-agent"], "mailprobe-webhooks/1");
    assert.equal(req!.headers["webhook-id"], settled.id);
    assert.equal(req!.headers["webhook-timestamp"], String(Math.floor(at.getTime() / 1000)));

    const secret = await secretOf(apiKey);
    const verified = new Webhook(secret).verify(req!.body, req!.headers as Record<string, string>);
    const expected = {
      type: "task.completed",
      timestamp: at.toISOString(),
      data: {
        task_id: taskId,
        status: "completed",
        upload_id: "7f1d2b8e-3c4a-4e5f-8a9b-0c1d2e3f4a5b",
        metrics: { valid: 7, invalid: 2, unknown: 1, total: 10 },
      },
    };
    assert.deepEqual(verified, expected);
    assert.deepEqual(Object.keys(JSON.parse(req!.body) as object), ["type", "timestamp", "data"]);
    assert.throws(() =>
      new Webhook(secret).verify(req!.body.replace("7", "8"), req!.headers as Record<string, string>),
    );

    assert.equal(settled.attempts, 1);
    assert.equal(settled.lastStatusCode, 200);
    assert.equal(settled.lastError, null);
    assert.equal(settled.deliveredAt?.getTime(), at.getTime());
    assert.equal(settled.lockedUntil, null);
    const attempts = await listWebhookAttempts(ctx.db, settled.id);
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]!.statusCode, 200);
    assert.equal(attempts[0]!.error, null);
    assert.ok(attempts[0]!.durationMs >= 0);
  });

  test("upload_id is absent when the task has no upload", async () => {
    const receiver = await startReceiver(answer(204));
    const clock = new ManualClock(new Date());
    const { taskId } = await enqueued(receiver.url(), clock, { uploadId: null, metrics: {} });
    assert.equal((await runUntilSettled(dispatcherFor(clock), taskId)).status, "delivered");
    assert.equal(receiver.requests.length, 1);
    const body = JSON.parse(receiver.requests[0]!.body) as { data: Record<string, unknown> };
    assert.deepEqual(body.data, { task_id: taskId, status: "completed", metrics: {} });
  });

  test("500, 500, then 200: three attempts on the backoff schedule, same webhook-id, then delivered", async () => {
    const receiver = await startReceiver((res, n) => answer(n < 2 ? 500 : 200)(res));
    const clock = new ManualClock(new Date());
    const { taskId, apiKey } = await enqueued(receiver.url(), clock);
    const dispatcher = dispatcherFor(clock);

    assert.equal(await dispatcher.runOnce(), 1);
    let row = await deliveryOf(taskId);
    assert.equal(row.status, "pending");
    assert.equal(row.lastStatusCode, 500);
    assert.equal(
      row.nextAttemptAt.getTime() - clock.now().getTime(),
      30_000,
      "first retry after 30 s (rand = 0)",
    );

    clock.advance(29_999);
    await dispatcher.runOnce();
    assert.equal(receiver.requests.length, 1, "not due yet: no second request");

    clock.advance(1);
    await dispatcher.runOnce();
    row = await deliveryOf(taskId);
    assert.equal(receiver.requests.length, 2);
    assert.equal(row.status, "pending");
    assert.equal(row.nextAttemptAt.getTime() - clock.now().getTime(), 120_000, "second retry after 2 min");

    clock.set(row.nextAttemptAt);
    await dispatcher.runOnce();
    row = await deliveryOf(taskId);
    assert.equal(row.status, "delivered");
    assert.equal(row.attempts, 3);
    assert.equal(receiver.requests.length, 3);

    const attempts = await listWebhookAttempts(ctx.db, row.id);
    assert.deepEqual(
      attempts.map((a) => a.statusCode),
      [500, 500, 200],
    );
    assert.deepEqual(
      receiver.requests.map((r) => r.headers["webhook-id"]),
      [row.id, row.id, row.id],
    );
    const stamps = receiver.requests.map((r) => Number(r.headers["webhook-timestamp"]));
    assert.ok(
      stamps[0]! < stamps[1]! && stamps[1]! < stamps[2]!,
      `fresh timestamp per attempt: ${stamps.join(",")}`,
    );
    const wh = new Webhook(await secretOf(apiKey));
    for (const r of receiver.requests) wh.verify(r.body, r.headers as Record<string, string>);
    assert.equal(new Set(receiver.requests.map((r) => r.body)).size, 1, "identical body on every retry");
  });

  test("a 302 is not followed: the attempt fails and the redirect target is never called", async () => {
    const target = await startReceiver(answer(200));
    const receiver = await startReceiver(answer(302, { location: target.url("/landing") }));
    const clock = new ManualClock(new Date());
    const { taskId } = await enqueued(receiver.url(), clock);

    assert.equal(await dispatcherFor(clock).runOnce(), 1);
    const row = await deliveryOf(taskId);
    assert.equal(receiver.requests.length, 1);
    assert.equal(target.requests.length, 0);
    assert.equal(row.status, "pending", "a redirect is retried like any non-2xx");
    assert.equal(row.lastStatusCode, 302);
    const attempts = await listWebhookAttempts(ctx.db, row.id);
    assert.deepEqual(
      attempts.map((a) => [a.statusCode, a.error]),
      [[302, "redirect not followed"]],
    );
    await abandon(taskId);
  });

  test("a receiver that never answers: the attempt times out and is retried", async () => {
    const receiver = await startReceiver(() => {});
    const clock = new ManualClock(new Date());
    const { taskId } = await enqueued(receiver.url(), clock);

    assert.equal(await dispatcherFor(clock, { timeoutMs: 500 }).runOnce(), 1);
    const row = await deliveryOf(taskId);
    assert.equal(receiver.requests.length, 1, "the request reached the receiver");
    assert.equal(row.status, "pending");
    assert.equal(row.lastStatusCode, null);
    const attempts = await listWebhookAttempts(ctx.db, row.id);
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]!.statusCode, null);
    assert.match(attempts[0]!.error ?? "", /timed out/);
    await abandon(taskId);
  });

  test("a connection refused is a retryable failed attempt", async () => {
    const closed = await startReceiver(answer(200));
    const url = closed.url();
    const server = servers.pop()!;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const clock = new ManualClock(new Date());
    const { taskId } = await enqueued(url, clock);

    assert.equal(await dispatcherFor(clock).runOnce(), 1);
    const row = await deliveryOf(taskId);
    assert.equal(row.status, "pending");
    assert.match(row.lastError ?? "", /ECONNREFUSED/);
    await abandon(taskId);
  });
});

describe("SSRF guard", () => {
  test("allowPrivate: false → delivery to 127.0.0.1 is refused, failed at once, receiver never called", async () => {
    const receiver = await startReceiver(answer(200));
    const clock = new ManualClock(new Date());
    const { taskId } = await enqueued(receiver.url(), clock);
    const dispatcher = dispatcherFor(clock, { allowPrivate: false });

    assert.equal(await dispatcher.runOnce(), 1);
    const row = await deliveryOf(taskId);
    assert.equal(row.status, "failed", "a policy refusal is permanent");
    assert.equal(row.attempts, 1);
    assert.equal(row.lastError, "address not allowed");
    const attempts = await listWebhookAttempts(ctx.db, row.id);
    assert.deepEqual(
      attempts.map((a) => [a.statusCode, a.error]),
      [[null, "address not allowed"]],
    );
    clock.advance(2 * HOUR_MS);
    await dispatcher.runOnce();
    assert.equal((await deliveryOf(taskId)).attempts, 1, "never retried");
    assert.equal(receiver.requests.length, 0);
  });

  test("a hostname is resolved once and the connection goes to the vetted address, Host header intact", async () => {
    const receiver = await startReceiver(answer(200));
    const clock = new ManualClock(new Date());
    // .test never resolves through real DNS: reaching the receiver proves the pinned address was used.
    const url = `http://hooks.mailprobe.test:${receiver.port}/pinned`;
    const { taskId } = await enqueued(url, clock);
    const lookups: string[] = [];
    const resolve = async (host: string) => {
      lookups.push(host);
      return ["127.0.0.1"];
    };

    assert.equal((await runUntilSettled(dispatcherFor(clock, {}, { resolve }), taskId)).status, "delivered");
    assert.deepEqual(lookups, ["hooks.mailprobe.test"]);
    assert.equal(receiver.requests.length, 1);
    assert.equal(receiver.requests[0]!.headers.host, `hooks.mailprobe.test:${receiver.port}`);
    assert.equal(receiver.requests[0]!.path, "/pinned");
  });

  test("a hostname with any private address is refused when allowPrivate is false", async () => {
    const receiver = await startReceiver(answer(200));
    const clock = new ManualClock(new Date());
    const { taskId } = await enqueued(`http://rebind.mailprobe.test:${receiver.port}/`, clock);
    const resolve = async () => ["93.184.216.34", "127.0.0.1"];

    const row = await runUntilSettled(dispatcherFor(clock, { allowPrivate: false }, { resolve }), taskId);
    assert.equal(row.status, "failed");
    assert.equal(row.lastError, "address not allowed");
    assert.equal(receiver.requests.length, 0);
  });
});

describe("outbox lifecycle", () => {
  test("a delivering row whose lease expired goes back to pending at the sweep; a live lease is kept", async () => {
    const receiver = await startReceiver(answer(200));
    const clock = new ManualClock(new Date());
    const crashed = await enqueued(receiver.url("/crashed"), clock);
    const busy = await enqueued(receiver.url("/busy"), clock);
    const now = clock.now();
    // As a dispatcher that claimed both and then died would have left them.
    await ctx.db.query(
      `update webhook_deliveries set status = 'delivering', attempts = 1,
              locked_until = case when task_id = $1 then $3::timestamptz - interval '1 second'
                                  else $3::timestamptz + interval '60 seconds' end
        where task_id in ($1, $2)`,
      [crashed.taskId, busy.taskId, now],
    );

    assert.ok((await releaseExpiredWebhookLeases(ctx.db, now)) >= 1);
    const released = await deliveryOf(crashed.taskId);
    assert.equal(released.status, "pending");
    assert.equal(released.lockedUntil, null);
    assert.equal((await deliveryOf(busy.taskId)).status, "delivering", "a live lease is not touched");

    const dispatcher = dispatcherFor(clock);
    await dispatcher.runOnce();
    const delivered = await deliveryOf(crashed.taskId);
    assert.equal(delivered.status, "delivered");
    assert.equal(delivered.attempts, 2, "the crashed claim still counts as an attempt");
    assert.equal((await deliveryOf(busy.taskId)).status, "delivering");
    assert.deepEqual(
      receiver.requests.map((r) => r.path),
      ["/crashed"],
    );

    // Once its lease runs out, the other one is swept and delivered by the next round.
    clock.advance(61_000);
    await dispatcher.runOnce();
    assert.equal((await deliveryOf(busy.taskId)).status, "delivered");
    assert.deepEqual(
      receiver.requests.map((r) => r.path),
      ["/crashed", "/busy"],
    );
  });

  test("after retryWindowMs the delivery ends failed, with a last attempt at the window's end", async () => {
    const receiver = await startReceiver(answer(503));
    const clock = new ManualClock(new Date());
    const { taskId } = await enqueued(receiver.url(), clock);
    const created = clock.now().getTime();
    const dispatcher = dispatcherFor(clock, { retryWindowMs: HOUR_MS });

    const statuses: string[] = [];
    for (let round = 0; round < 20; round++) {
      await dispatcher.runOnce();
      const row = await deliveryOf(taskId);
      statuses.push(row.status);
      if (row.status !== "pending") break;
      assert.ok(row.nextAttemptAt.getTime() <= created + HOUR_MS, "never scheduled past the window");
      clock.set(row.nextAttemptAt);
    }
    const row = await deliveryOf(taskId);
    assert.equal(row.status, "failed");
    assert.deepEqual(statuses, ["pending", "pending", "pending", "pending", "pending", "failed"]);
    const attempts = await listWebhookAttempts(ctx.db, row.id);
    // 30 s, 2 min, 10 min, 30 min after each failure, then capped at the window's end (1 h).
    assert.deepEqual(
      attempts.map((a) => (a.attemptedAt.getTime() - created) / 1000),
      [0, 30, 150, 750, 2550, 3600],
    );
    assert.ok(attempts.every((a) => a.statusCode === 503));
    assert.equal(row.attempts, attempts.length);
    assert.equal(receiver.requests.length, attempts.length);

    clock.advance(10 * HOUR_MS);
    await dispatcher.runOnce();
    assert.equal(receiver.requests.length, attempts.length, "a failed delivery is never attempted again");
  });

  test("start() delivers in the background and stop() ends the loop", async () => {
    const receiver = await startReceiver(answer(200));
    const clock = new ManualClock(new Date());
    const { taskId } = await enqueued(receiver.url(), clock);
    const dispatcher = dispatcherFor(clock, {}, { pollIntervalMs: 10 });

    dispatcher.start();
    dispatcher.start();
    for (let i = 0; i < 500 && (await deliveryOf(taskId)).status !== "delivered"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await dispatcher.stop();
    await dispatcher.stop();
    assert.equal((await deliveryOf(taskId)).status, "delivered");
    assert.equal(receiver.requests.length, 1);
  });
});
