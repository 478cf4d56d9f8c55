// The webhook log, redelivery, test pings and secret rotation, end to end: the
// HTTP API on the real test database, the dispatcher, and a real receiver on 127.0.0.1. Every
// delivery a receiver gets is checked with the SDK's verifier (sdk/src/webhooks.ts). Time moves
// only through a ManualClock shared by the app and the dispatchers.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, afterEach, before, describe, test } from "node:test";
import { verifyWebhookSignature } from "../../../sdk/src/webhooks.ts";
import { createLogger } from "../../../src/observability/logger.ts";
import { createWebhookDispatcher, type WebhookDispatcher } from "../../../src/webhooks/dispatcher.ts";
import { enqueueTaskCompleted, type TaskCompletedEvent } from "../../../src/webhooks/outbox.ts";
import { MAX_UNSETTLED_PINGS } from "../../../src/webhooks/ping.ts";
import { sealClearWebhookSecrets } from "../../../src/webhooks/secret-cipher.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError, describeAuthMatrix } from "../api/helpers.ts";

const HOUR_MS = 3_600_000;

const clock = new ManualClock(new Date());
let ctx: TestContext;
const servers: Server[] = [];
const dispatchers: WebhookDispatcher[] = [];

before(async () => {
  ctx = await createTestContext({ clock, env: { WEBHOOK_ALLOW_PRIVATE: "true" } });
});
after(async () => {
  await Promise.all(dispatchers.map((d) => d.stop()));
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  await ctx.close();
});
// A test that leaves deliveries waiting must not hand them to the next test's dispatcher.
afterEach(async () => {
  await ctx.db.query(
    "update webhook_deliveries set status = 'failed', locked_until = null where status in ('pending', 'delivering')",
  );
});

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  url(path?: string): string;
  requests: Received[];
}

/** A receiver on 127.0.0.1 answering the n-th request (0-based) with `status(n)`. */
async function startReceiver(status: (n: number) => number = () => 200): Promise<Receiver> {
  const requests: Received[] = [];
  const server = createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      res.writeHead(status(requests.length - 1), { "content-type": "text/plain" });
      res.end("ok");
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { requests, url: (path = "/hook") => `http://127.0.0.1:${port}${path}` };
}

function dispatcher(): WebhookDispatcher {
  const d = createWebhookDispatcher({
    db: ctx.db,
    clock,
    logger: createLogger("silent"),
    config: { allowPrivate: true, timeoutMs: 5_000, retryWindowMs: 24 * HOUR_MS },
    secrets: ctx.services.webhookSecrets,
    random: () => 0,
  });
  dispatchers.push(d);
  return d;
}

/** A task of `user` pointing at `url`, and its completion event enqueued as the pipeline does. */
async function completedTask(user: TestUser, url: string): Promise<string> {
  const taskId = randomUUID();
  await ctx.db.query(
    `insert into tasks (id, user_id, webhook_url, source, email_count, domain_count)
     values ($1, $2, $3, 'api_key', 1, 1)`,
    [taskId, user.userId, url],
  );
  // `status` is the completion payload's; the cast keeps this file independent of it.
  const event = { taskId, status: "completed", uploadId: null, metrics: { valid: 1 } } as TaskCompletedEvent;
  await ctx.db.transaction((tx) =>
    enqueueTaskCompleted(tx, { userId: user.userId, url, event, at: clock.now() }),
  );
  return taskId;
}

interface DeliveryItem {
  id: string;
  task_id: string | null;
  event_type: string;
  url: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
}

interface DeliveryList {
  deliveries: DeliveryItem[];
  count: number;
  limit: number;
  offset: number;
}

async function listDeliveries(apiKey: string, query = ""): Promise<DeliveryList> {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/webhooks/deliveries${query}`,
    headers: ctx.bearer(apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<DeliveryList>();
}

const redeliver = (apiKey: string, id: string) =>
  ctx.app.inject({
    method: "POST",
    url: `/api/v1/webhooks/deliveries/${id}/redeliver`,
    headers: ctx.bearer(apiKey),
  });

const ping = (apiKey: string, url: string, c: TestContext = ctx) =>
  c.app.inject({ method: "POST", url: "/api/v1/webhooks/test", headers: c.bearer(apiKey), payload: { url } });

const rotate = (token: string, payload?: object) =>
  ctx.app.inject({
    method: "POST",
    url: "/api/v1/webhooks/secret/rotate",
    headers: ctx.bearer(token),
    ...(payload !== undefined ? { payload } : {}),
  });

async function secretOf(
  apiKey: string,
): Promise<{ secret: string; previous_secret_expires_at: string | null }> {
  const res = await ctx.app.inject({
    method: "GET",
    url: "/api/v1/webhooks/secret",
    headers: ctx.bearer(apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** The SDK verifier's verdict on a received request, with the receiver's clock = the test clock. */
const verifyWith = (secret: string, r: Received) =>
  verifyWebhookSignature({ payload: r.body, headers: r.headers, secret, now: clock.now() });

describe("the log", () => {
  test("a delivered task webhook: status 200, attempts 1, delivered_at; only the caller's, newest first", async () => {
    const receiver = await startReceiver();
    const user = await ctx.createUser();
    const other = await ctx.createUser();
    const first = await completedTask(user, receiver.url("/first"));
    clock.advance(1_000);
    const second = await completedTask(user, receiver.url("/second"));
    await completedTask(other, receiver.url("/other"));
    const dispatch = dispatcher();
    // WEBHOOK_MAX_PER_HOST (2): the third delivery to 127.0.0.1 waits for the next round.
    while (receiver.requests.length < 3) assert.ok((await dispatch.runOnce()) > 0);
    assert.equal(receiver.requests.length, 3);

    const page = await listDeliveries(user.apiKey);
    assert.equal(page.count, 2);
    assert.deepEqual(
      page.deliveries.map((d) => d.task_id),
      [second, first],
    );
    const d = page.deliveries[1]!;
    assert.deepEqual(Object.keys(d).sort(), [
      "attempts",
      "created_at",
      "delivered_at",
      "event_type",
      "id",
      "last_error",
      "last_status_code",
      "next_attempt_at",
      "status",
      "task_id",
      "url",
    ]);
    assert.equal(d.event_type, "task.completed");
    assert.equal(d.url, receiver.url("/first"));
    assert.equal(d.status, "delivered");
    assert.equal(d.attempts, 1);
    assert.equal(d.last_status_code, 200);
    assert.equal(d.last_error, null);
    assert.equal(d.next_attempt_at, null);
    assert.equal(d.delivered_at, clock.now().toISOString());
    // The log's id is the webhook-id the receiver saw.
    const got = receiver.requests.find((r) => r.path === "/first")!;
    assert.equal(got.headers["webhook-id"], d.id);
    assert.ok((await verifyWith((await secretOf(user.apiKey)).secret, got)).ok);

    const paged = await listDeliveries(user.apiKey, "?limit=1&offset=1");
    assert.deepEqual(
      {
        count: paged.count,
        limit: paged.limit,
        offset: paged.offset,
        ids: paged.deliveries.map((x) => x.task_id),
      },
      { count: 2, limit: 1, offset: 1, ids: [first] },
    );
    assert.equal((await listDeliveries(other.apiKey)).count, 1);
  });

  test("a failing receiver: attempts, last_status_code and the next attempt show", async () => {
    const receiver = await startReceiver(() => 503);
    const user = await ctx.createUser();
    await completedTask(user, receiver.url());
    const d = dispatcher();
    await d.runOnce();
    let [row] = (await listDeliveries(user.apiKey)).deliveries;
    assert.equal(row!.status, "pending");
    assert.equal(row!.attempts, 1);
    assert.equal(row!.last_status_code, 503);
    assert.equal(row!.delivered_at, null);
    assert.equal(row!.next_attempt_at, new Date(clock.now().getTime() + 30_000).toISOString());

    clock.advance(30_000);
    await d.runOnce();
    [row] = (await listDeliveries(user.apiKey)).deliveries;
    assert.equal(row!.attempts, 2);
    assert.equal(row!.last_status_code, 503);
    assert.equal(receiver.requests.length, 2);
  });

  test("no answer at all: last_status_code null and a short last_error", async () => {
    const user = await ctx.createUser();
    // A port nothing listens on: the connection is refused.
    const closed = await startReceiver();
    const url = closed.url();
    const server = servers.pop()!;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await completedTask(user, url);
    await dispatcher().runOnce();
    const [row] = (await listDeliveries(user.apiKey)).deliveries;
    assert.equal(row!.attempts, 1);
    assert.equal(row!.last_status_code, null);
    assert.match(row!.last_error ?? "", /ECONNREFUSED/);
    assert.ok(row!.last_error!.length <= 200);
  });

  test("limit and offset are validated like the other lists", async () => {
    const user = await ctx.createUser();
    for (const q of ["?limit=0", "?limit=101", "?offset=-1", "?limit=abc"]) {
      const res = await ctx.app.inject({
        method: "GET",
        url: `/api/v1/webhooks/deliveries${q}`,
        headers: ctx.bearer(user.apiKey),
      });
      assertError(res, 400, "VALIDATION_ERROR");
    }
    assert.deepEqual(await listDeliveries(user.apiKey), { deliveries: [], count: 0, limit: 10, offset: 0 });
  });
});

describe("redelivery", () => {
  test("sends the same body with the same webhook-id again, signed and verifiable", async () => {
    const receiver = await startReceiver();
    const user = await ctx.createUser();
    await completedTask(user, receiver.url());
    const d = dispatcher();
    await d.runOnce();
    const [delivered] = (await listDeliveries(user.apiKey)).deliveries;
    assert.equal(delivered!.status, "delivered");

    clock.advance(HOUR_MS);
    const res = await redeliver(user.apiKey, delivered!.id);
    assert.equal(res.statusCode, 202, res.body);
    const queued = res.json<DeliveryItem>();
    assert.equal(queued.id, delivered!.id);
    assert.equal(queued.status, "pending");
    assert.equal(queued.delivered_at, null);
    assert.equal(queued.next_attempt_at, clock.now().toISOString());

    await d.runOnce();
    assert.equal(receiver.requests.length, 2);
    const [original, again] = receiver.requests;
    assert.equal(again!.headers["webhook-id"], original!.headers["webhook-id"]);
    assert.equal(again!.body, original!.body);
    assert.notEqual(again!.headers["webhook-timestamp"], original!.headers["webhook-timestamp"]);
    const secret = (await secretOf(user.apiKey)).secret;
    const verified = await verifyWith(secret, again!);
    assert.ok(verified.ok, JSON.stringify(verified));
    assert.equal(verified.id, delivered!.id);
    assert.equal(verified.event.type, "task.completed");

    const [row] = (await listDeliveries(user.apiKey)).deliveries;
    assert.equal(row!.status, "delivered");
    assert.equal(row!.attempts, 2);
    assert.equal(row!.delivered_at, clock.now().toISOString());
  });

  test("a failed delivery gets a fresh retry window", async () => {
    let up = false;
    const receiver = await startReceiver(() => (up ? 200 : 500));
    const user = await ctx.createUser();
    await completedTask(user, receiver.url());
    await ctx.db.query("update webhook_deliveries set status = 'failed' where user_id = $1", [user.userId]);
    clock.advance(48 * HOUR_MS); // long past the 24 h window of its creation
    const [failed] = (await listDeliveries(user.apiKey)).deliveries;
    assert.equal((await redeliver(user.apiKey, failed!.id)).statusCode, 202);
    const d = dispatcher();
    await d.runOnce();
    // The 500 is retried (the window runs from the redelivery), not given up at once.
    let [row] = (await listDeliveries(user.apiKey)).deliveries;
    assert.equal(row!.status, "pending");
    assert.equal(row!.last_status_code, 500);
    up = true;
    clock.advance(30_000);
    await d.runOnce();
    [row] = (await listDeliveries(user.apiKey)).deliveries;
    assert.equal(row!.status, "delivered");
    assert.equal(receiver.requests.length, 2);
  });

  test("another user's delivery and an unknown id → 404; not a UUID → 400; an attempt running → 409", async () => {
    const receiver = await startReceiver();
    const owner = await ctx.createUser();
    const stranger = await ctx.createUser();
    await completedTask(owner, receiver.url());
    const [row] = (await listDeliveries(owner.apiKey)).deliveries;
    assertError(await redeliver(stranger.apiKey, row!.id), 404, "NOT_FOUND");
    assertError(await redeliver(owner.apiKey, randomUUID()), 404, "NOT_FOUND");
    assertError(await redeliver(owner.apiKey, "not-a-uuid"), 400, "VALIDATION_ERROR");
    await ctx.db.query(
      "update webhook_deliveries set status = 'delivering', locked_until = $2 where id = $1",
      [row!.id, new Date(clock.now().getTime() + 60_000)],
    );
    assertError(await redeliver(owner.apiKey, row!.id), 409, "CONFLICT");
    assert.equal(receiver.requests.length, 0);
  });
});

describe("test ping", () => {
  test("queued, logged, and delivered signed: { type: 'ping', timestamp, data: {} }", async () => {
    const receiver = await startReceiver();
    const user = await ctx.createUser();
    const res = await ping(user.apiKey, receiver.url("/ping"));
    assert.equal(res.statusCode, 202, res.body);
    const queued = res.json<DeliveryItem>();
    assert.equal(queued.event_type, "ping");
    assert.equal(queued.task_id, null);
    assert.equal(queued.status, "pending");
    assert.equal(queued.attempts, 0);

    await dispatcher().runOnce();
    assert.equal(receiver.requests.length, 1);
    const got = receiver.requests[0]!;
    assert.equal(got.path, "/ping");
    assert.equal(got.headers["webhook-id"], queued.id);
    assert.equal(got.body, JSON.stringify({ type: "ping", timestamp: queued.created_at, data: {} }));
    const verified = await verifyWith((await secretOf(user.apiKey)).secret, got);
    assert.ok(verified.ok, JSON.stringify(verified));
    assert.equal(verified.event.type, "ping");

    const [row] = (await listDeliveries(user.apiKey)).deliveries;
    assert.deepEqual(
      { id: row!.id, status: row!.status, code: row!.last_status_code },
      { id: queued.id, status: "delivered", code: 200 },
    );
  });

  test("one attempt only: a failing receiver leaves the ping failed with its status code", async () => {
    const receiver = await startReceiver(() => 500);
    const user = await ctx.createUser();
    const queued = (await ping(user.apiKey, receiver.url())).json<DeliveryItem>();
    await dispatcher().runOnce();
    const [row] = (await listDeliveries(user.apiKey)).deliveries;
    assert.deepEqual(
      { id: row!.id, status: row!.status, attempts: row!.attempts, code: row!.last_status_code },
      { id: queued.id, status: "failed", attempts: 1, code: 500 },
    );
    assert.equal(row!.next_attempt_at, null);
    // A redelivery is one more attempt.
    assert.equal((await redeliver(user.apiKey, queued.id)).statusCode, 202);
    await dispatcher().runOnce();
    const [again] = (await listDeliveries(user.apiKey)).deliveries;
    assert.deepEqual({ status: again!.status, attempts: again!.attempts }, { status: "failed", attempts: 2 });
    assert.equal(receiver.requests.length, 2);
  });

  test("the URL follows webhook_url's rules; a private address needs WEBHOOK_ALLOW_PRIVATE", async () => {
    const user = await ctx.createUser();
    for (const url of [
      "ftp://example.com/",
      "not a url",
      "http://user:pw@example.com/",
      "https://h.example/\u0000",
    ]) {
      const error = assertError(await ping(user.apiKey, url), 400, "VALIDATION_ERROR");
      assert.equal(error.details?.[0]?.field, "url");
    }
    assertError(
      await ctx.app.inject({
        method: "POST",
        url: "/api/v1/webhooks/test",
        headers: ctx.bearer(user.apiKey),
        payload: {},
      }),
      400,
      "VALIDATION_ERROR",
    );
    const strict = await createTestContext({ clock, db: ctx.db });
    try {
      for (const url of ["http://127.0.0.1:9/x", "http://localhost/x", "http://169.254.169.254/latest"]) {
        const error = assertError(await ping(user.apiKey, url, strict), 400, "VALIDATION_ERROR");
        assert.equal(error.details?.[0]?.field, "url");
      }
    } finally {
      await strict.close();
    }
    assert.equal((await listDeliveries(user.apiKey)).count, 0);
  });

  test(`at most ${MAX_UNSETTLED_PINGS} pings wait at once (429 with Retry-After)`, async () => {
    const user = await ctx.createUser();
    for (let i = 0; i < MAX_UNSETTLED_PINGS; i++)
      assert.equal((await ping(user.apiKey, "http://127.0.0.1:9/x")).statusCode, 202);
    const refused = await ping(user.apiKey, "http://127.0.0.1:9/x");
    assertError(refused, 429, "RATE_LIMITED");
    assert.ok(Number(refused.headers["retry-after"]) >= 1);
    assert.equal((await listDeliveries(user.apiKey)).count, MAX_UNSETTLED_PINGS);
  });
});

describe("secret rotation", () => {
  test("both secrets sign during the grace period, only the new one after", async () => {
    const receiver = await startReceiver();
    const user = await ctx.createUser();
    const before = await secretOf(user.apiKey);
    assert.equal(before.previous_secret_expires_at, null);

    const res = await rotate(user.apiKey, { grace_seconds: 3600 });
    assert.equal(res.statusCode, 200, res.body);
    const rotated = res.json<{ secret: string; previous_secret_expires_at: string }>();
    assert.match(rotated.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.notEqual(rotated.secret, before.secret);
    const graceEnd = new Date(clock.now().getTime() + HOUR_MS).toISOString();
    assert.equal(rotated.previous_secret_expires_at, graceEnd);
    assert.deepEqual(await secretOf(user.apiKey), rotated);

    const d = dispatcher();
    await completedTask(user, receiver.url("/during"));
    await d.runOnce();
    const during = receiver.requests[0]!;
    assert.equal(String(during.headers["webhook-signature"]).split(" ").length, 2);
    assert.ok((await verifyWith(before.secret, during)).ok, "old secret verifies during the grace");
    assert.ok((await verifyWith(rotated.secret, during)).ok, "new secret verifies during the grace");

    clock.advance(HOUR_MS); // the grace ends (exclusive)
    assert.equal((await secretOf(user.apiKey)).previous_secret_expires_at, null);
    await completedTask(user, receiver.url("/after"));
    await d.runOnce();
    const afterGrace = receiver.requests[1]!;
    assert.equal(String(afterGrace.headers["webhook-signature"]).split(" ").length, 1);
    assert.ok((await verifyWith(rotated.secret, afterGrace)).ok, "new secret verifies after the grace");
    const old = await verifyWith(before.secret, afterGrace);
    assert.deepEqual(old, { ok: false, reason: "signature_mismatch" });

    // A redelivery of the delivery made during the grace is signed with the new secret only now.
    const [, duringRow] = (await listDeliveries(user.apiKey)).deliveries;
    assert.equal((await redeliver(user.apiKey, duringRow!.id)).statusCode, 202);
    await d.runOnce();
    const replay = receiver.requests[2]!;
    assert.equal(replay.body, during.body);
    assert.ok((await verifyWith(rotated.secret, replay)).ok);
    assert.equal((await verifyWith(before.secret, replay)).ok, false);
  });

  test("default grace 24 h; grace 0 stops the old secret at once; rotating again drops the oldest", async () => {
    const user = await ctx.createUser();
    const original = (await secretOf(user.apiKey)).secret;
    const first = (await rotate(user.apiKey)).json<{ secret: string; previous_secret_expires_at: string }>();
    assert.equal(
      first.previous_secret_expires_at,
      new Date(clock.now().getTime() + 24 * HOUR_MS).toISOString(),
    );

    const second = (await rotate(user.apiKey, { grace_seconds: 0 })).json<{
      secret: string;
      previous_secret_expires_at: string | null;
    }>();
    assert.equal(second.previous_secret_expires_at, null);
    assert.notEqual(second.secret, first.secret);
    assert.notEqual(second.secret, original);

    // The first rotation's grace for `original` is gone: the only other secret is `first`, expired.
    const { rows } = await ctx.db.query<{ webhook_secret_previous: string }>(
      "select webhook_secret_previous from users where id = $1",
      [user.userId],
    );
    assert.equal(
      ctx.services.webhookSecrets.open(user.userId, rows[0]!.webhook_secret_previous),
      first.secret,
    );
  });

  test("grace_seconds is bounded (0 … 7 days) and unknown fields are refused", async () => {
    const user = await ctx.createUser();
    const before = (await secretOf(user.apiKey)).secret;
    for (const body of [
      { grace_seconds: -1 },
      { grace_seconds: 7 * 24 * 3600 + 1 },
      { grace_seconds: 1.5 },
      { secret: "x" },
    ])
      assertError(await rotate(user.apiKey, body), 400, "VALIDATION_ERROR");
    assert.equal((await secretOf(user.apiKey)).secret, before);
    assert.equal((await rotate(user.apiKey, { grace_seconds: 7 * 24 * 3600 })).statusCode, 200);
  });
});

describe("scopes", () => {
  test("integration keys read the log, redeliver and ping, but cannot rotate (403); sessions can", async () => {
    const user = await ctx.createUser();
    const before = (await secretOf(user.apiKey)).secret;
    for (const purpose of ["zapier", "n8n", "google sheets"] as const) {
      const key = (await ctx.services.apiKeys.create(user.userId, `k ${purpose}`, purpose)).plaintext;
      assertError(await rotate(key, { grace_seconds: 60 }), 403, "FORBIDDEN");
      // Refused before the body is read: an invalid body still gets 403.
      assertError(await rotate(key, { grace_seconds: -5 }), 403, "FORBIDDEN");
      assert.equal((await listDeliveries(key)).count, 0);
      assert.equal((await secretOf(key)).secret, before);
    }
    const zapier = (await ctx.services.apiKeys.create(user.userId, "z", "zapier")).plaintext;
    const queued = await ping(zapier, "http://127.0.0.1:9/x");
    assert.equal(queued.statusCode, 202, queued.body);
    assert.equal((await redeliver(zapier, queued.json<DeliveryItem>().id)).statusCode, 202);
    assert.equal((await secretOf(user.apiKey)).secret, before);

    const jwt = await ctx.services.sessions.open(user.userId, user.apiKeyId);
    assert.ok(jwt);
    const res = await rotate(jwt.token);
    assert.equal(res.statusCode, 200, res.body);
    assert.notEqual((await secretOf(user.apiKey)).secret, before);
  });

  describeAuthMatrix(
    () => ctx,
    [
      { method: "GET", url: "/api/v1/webhooks/deliveries" },
      { method: "POST", url: `/api/v1/webhooks/deliveries/${randomUUID()}/redeliver` },
      { method: "POST", url: "/api/v1/webhooks/test", payload: { url: "http://127.0.0.1:9/x" } },
      { method: "POST", url: "/api/v1/webhooks/secret/rotate", payload: {} },
    ],
  );
});

describe("signing secrets at rest", () => {
  const storedOf = async (userId: string) =>
    (
      await ctx.db.query<{ webhook_secret: string; webhook_secret_previous: string | null }>(
        "select webhook_secret, webhook_secret_previous from users where id = $1",
        [userId],
      )
    ).rows[0]!;

  test("the database holds neither the current nor the previous secret, only their sealed forms; both still sign", async () => {
    const receiver = await startReceiver();
    const user = await ctx.createUser();
    const first = await secretOf(user.apiKey);
    let stored = await storedOf(user.userId);
    assert.match(stored.webhook_secret, /^enc1:/);
    assert.ok(!stored.webhook_secret.includes(first.secret.slice("whsec_".length)));

    const rotated = (await rotate(user.apiKey, { grace_seconds: 3600 })).json<{ secret: string }>();
    stored = await storedOf(user.userId);
    for (const value of [stored.webhook_secret, stored.webhook_secret_previous!]) {
      assert.match(value, /^enc1:/);
      for (const secret of [first.secret, rotated.secret])
        assert.ok(!value.includes(secret.slice("whsec_".length)));
    }
    const d = dispatcher();
    await completedTask(user, receiver.url("/sealed"));
    await d.runOnce();
    const sent = receiver.requests[0]!;
    assert.ok((await verifyWith(first.secret, sent)).ok, "the previous secret, opened, signs");
    assert.ok((await verifyWith(rotated.secret, sent)).ok, "the current secret, opened, signs");
  });

  test("a sealed secret copied onto another user's row does not open (the user id is authenticated)", async () => {
    const a = await ctx.createUser();
    const b = await ctx.createUser();
    await ctx.db.query(
      "update users set webhook_secret = (select webhook_secret from users where id = $1) where id = $2",
      [a.userId, b.userId],
    );
    assert.throws(() => ctx.services.webhookSecrets.open(b.userId, "enc1:" + "A".repeat(60)));
    const copied = (await storedOf(b.userId)).webhook_secret;
    assert.throws(() => ctx.services.webhookSecrets.open(b.userId, copied));
    assert.doesNotThrow(() => ctx.services.webhookSecrets.open(a.userId, copied));
  });

  test("secrets stored in the clear (before sealing) keep working, and start-up seals them", async () => {
    const user = await ctx.createUser();
    const clear = "whsec_" + Buffer.alloc(24, 7).toString("base64");
    await ctx.db.query("update users set webhook_secret = $2, webhook_secret_previous = null where id = $1", [
      user.userId,
      clear,
    ]);
    assert.equal((await secretOf(user.apiKey)).secret, clear);
    assert.ok((await sealClearWebhookSecrets(ctx.db, ctx.services.webhookSecrets)) >= 1);
    assert.match((await storedOf(user.userId)).webhook_secret, /^enc1:/);
    assert.equal((await secretOf(user.apiKey)).secret, clear);
    assert.equal(
      await sealClearWebhookSecrets(ctx.db, ctx.services.webhookSecrets),
      0,
      "nothing left in the clear",
    );
  });
});
