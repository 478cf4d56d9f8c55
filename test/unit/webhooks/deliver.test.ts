import assert from "node:assert/strict";
import type { LookupAddress } from "node:dns";
import { test } from "node:test";
import { Webhook } from "standardwebhooks";
import {
  ADDRESS_NOT_ALLOWED,
  attemptDelivery,
  pinnedLookup,
  type DeliveryDeps,
  type WebhookHttpRequest,
} from "../../../src/webhooks/deliver.ts";
import { serializeWebhookPayload, taskCompletedPayload } from "../../../src/webhooks/payload.ts";
import { signWebhook } from "../../../src/webhooks/signing.ts";

const SECRET = `whsec_${Buffer.alloc(24, 9).toString("base64")}`;
const ID = "0b8f7c1e-7d43-4c5e-9d3a-2f7c1b6a9e01";

function harness(opts: { addresses?: string[]; status?: number; allowPrivate?: boolean; fail?: Error } = {}) {
  const resolved: string[] = [];
  const sent: WebhookHttpRequest[] = [];
  const deps: DeliveryDeps = {
    allowPrivate: opts.allowPrivate ?? false,
    timeoutMs: 1_000,
    resolve: async (host) => {
      resolved.push(host);
      return opts.addresses ?? ["93.184.216.34"];
    },
    post: async (req) => {
      sent.push(req);
      if (opts.fail) throw opts.fail;
      return { statusCode: opts.status ?? 204 };
    },
  };
  return { deps, resolved, sent };
}

const input = (url: string) => ({
  id: ID,
  url,
  body: '{"type":"task.completed"}',
  secret: SECRET,
  at: new Date(),
});

void test("a public host is resolved once and the POST is pinned to exactly the resolved addresses", async () => {
  const h = harness({ addresses: ["93.184.216.34", "2606:2800:220:1::1"] });
  const outcome = await attemptDelivery(input("https://hooks.example.com/in"), h.deps);
  assert.deepEqual(outcome, { kind: "delivered", statusCode: 204 });
  assert.deepEqual(h.resolved, ["hooks.example.com"]);
  assert.equal(h.sent.length, 1);
  assert.deepEqual(h.sent[0]!.addresses, ["93.184.216.34", "2606:2800:220:1::1"]);
  assert.equal(h.sent[0]!.url.hostname, "hooks.example.com", "the URL keeps its hostname (Host header, SNI)");
  const { timeoutMs } = h.sent[0]!;
  assert.ok(
    Number.isInteger(timeoutMs) && timeoutMs > 0 && timeoutMs <= 1_000,
    `integer budget left: ${timeoutMs}`,
  );
  const headers = h.sent[0]!.headers;
  assert.equal(headers["content-type"], "application/json");
  assert.equal(headers["user-agent"], "mailprobe-webhooks/1");
  assert.equal(headers["webhook-id"], ID);
  assert.ok(new Webhook(SECRET).verify(h.sent[0]!.body, headers));
});

void test("if ANY resolved address is not public the URL is refused, permanently, before any connection", async () => {
  for (const addresses of [
    ["127.0.0.1"],
    ["93.184.216.34", "10.0.0.7"],
    ["::ffff:169.254.169.254"],
    ["fd00::1"],
  ]) {
    const h = harness({ addresses });
    assert.deepEqual(await attemptDelivery(input("https://evil.example/"), h.deps), {
      kind: "refused",
      error: ADDRESS_NOT_ALLOWED,
    });
    assert.equal(h.sent.length, 0, addresses.join(","));
  }
});

void test("literal private IPs are refused without a DNS lookup; allowPrivate lets them through", async () => {
  for (const url of [
    "http://127.0.0.1:9/x",
    "http://[::1]:9/x",
    "http://169.254.169.254/",
    "http://2130706433/",
  ]) {
    const refused = harness();
    assert.deepEqual(await attemptDelivery(input(url), refused.deps), {
      kind: "refused",
      error: ADDRESS_NOT_ALLOWED,
    });
    assert.deepEqual(refused.resolved, [], url);
    const allowed = harness({ allowPrivate: true });
    assert.equal((await attemptDelivery(input(url), allowed.deps)).kind, "delivered", url);
    assert.deepEqual(allowed.resolved, [], url);
    assert.equal(allowed.sent.length, 1);
  }
});

void test("a hostname resolving to loopback is refused unless allowPrivate", async () => {
  const refused = harness({ addresses: ["127.0.0.1"] });
  assert.equal((await attemptDelivery(input("http://localhost:3000/hook"), refused.deps)).kind, "refused");
  const allowed = harness({ addresses: ["127.0.0.1"], allowPrivate: true });
  assert.equal((await attemptDelivery(input("http://localhost:3000/hook"), allowed.deps)).kind, "delivered");
});

void test("unusable URLs are refused permanently", async () => {
  for (const url of ["ftp://example.com/", "not a url", "https://u:p@example.com/"]) {
    const h = harness();
    const outcome = await attemptDelivery(input(url), h.deps);
    assert.equal(outcome.kind, "refused", url);
    assert.match((outcome as { error: string }).error, /^invalid URL: /);
    assert.equal(h.sent.length, 0);
  }
});

void test("non-2xx answers are retried; a 3xx is not followed", async () => {
  const cases: Array<[status: number, error: string | null]> = [
    [301, "redirect not followed"],
    [302, "redirect not followed"],
    [307, "redirect not followed"],
    [400, null],
    [404, null],
    [410, null],
    [500, null],
    [503, null],
    [199, null],
  ];
  for (const [status, error] of cases) {
    const h = harness({ status });
    assert.deepEqual(await attemptDelivery(input("https://example.com/"), h.deps), {
      kind: "retry",
      statusCode: status,
      error,
    });
  }
  for (const status of [200, 201, 202, 204, 299]) {
    assert.equal(
      (await attemptDelivery(input("https://example.com/"), harness({ status }).deps)).kind,
      "delivered",
    );
  }
});

void test("network and DNS errors are retried with their machine code", async () => {
  const refused = Object.assign(new Error("connect ECONNREFUSED 93.184.216.34:443"), {
    code: "ECONNREFUSED",
  });
  assert.deepEqual(await attemptDelivery(input("https://example.com/"), harness({ fail: refused }).deps), {
    kind: "retry",
    statusCode: null,
    error: "connect ECONNREFUSED 93.184.216.34:443",
  });
  const h = harness();
  h.deps.resolve = async () => {
    throw Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.example"), { code: "ENOTFOUND" });
  };
  assert.deepEqual(await attemptDelivery(input("https://nowhere.example/"), h.deps), {
    kind: "retry",
    statusCode: null,
    error: "DNS: getaddrinfo ENOTFOUND nowhere.example",
  });
  assert.equal(h.sent.length, 0);
  const empty = harness({ addresses: [] });
  assert.equal((await attemptDelivery(input("https://example.com/"), empty.deps)).kind, "retry");
});

void test("the pinned lookup answers only with the vetted addresses, in both callback forms", () => {
  const lookup = pinnedLookup(["203.0.113.9", "2001:db8::9"]);
  const answers: unknown[] = [];
  lookup("anything.example", { all: true }, (err, address) => answers.push([err, address]));
  lookup("anything.example", {}, (err, address, family) => answers.push([err, address, family]));
  lookup("anything.example", { family: 6 }, (err, address, family) => answers.push([err, address, family]));
  assert.deepEqual(answers, [
    [
      null,
      [
        { address: "203.0.113.9", family: 4 },
        { address: "2001:db8::9", family: 6 },
      ] satisfies LookupAddress[],
    ],
    [null, "203.0.113.9", 4],
    [null, "2001:db8::9", 6],
  ]);
  let error: NodeJS.ErrnoException | null = null;
  pinnedLookup(["203.0.113.9"])("x", { family: 6 }, (err) => (error = err));
  assert.equal((error as NodeJS.ErrnoException | null)?.code, "ENOTFOUND");
});

void test("the body is the documented envelope in the documented key order, upload_id only when set", () => {
  const at = new Date("2026-03-04T05:06:07.089Z");
  const withUpload = taskCompletedPayload(
    { taskId: "t-1", uploadId: "u-1", metrics: { valid: 3, invalid: 1 } },
    at,
  );
  // jsonb hands objects back with keys reordered (shortest first); serialisation restores the order.
  const fromJsonb = {
    data: { metrics: { valid: 3, invalid: 1 }, status: "completed", task_id: "t-1", upload_id: "u-1" },
    type: "task.completed",
    timestamp: at.toISOString(),
  };
  const expected =
    '{"type":"task.completed","timestamp":"2026-03-04T05:06:07.089Z","data":{"task_id":"t-1","status":"completed","upload_id":"u-1","metrics":{"valid":3,"invalid":1}}}';
  assert.equal(serializeWebhookPayload(withUpload as unknown as Record<string, unknown>), expected);
  assert.equal(serializeWebhookPayload(fromJsonb), expected);
  const withoutUpload = taskCompletedPayload({ taskId: "t-2", uploadId: null, metrics: {} }, at);
  assert.equal(
    serializeWebhookPayload(withoutUpload as unknown as Record<string, unknown>),
    '{"type":"task.completed","timestamp":"2026-03-04T05:06:07.089Z","data":{"task_id":"t-2","status":"completed","metrics":{}}}',
  );
});

void test("signatures verify with standardwebhooks and break on any change of id, timestamp or body", () => {
  const at = new Date();
  const body = '{"type":"task.completed"}';
  const headers = signWebhook(SECRET, ID, at, body) as unknown as Record<string, string>;
  assert.equal(headers["webhook-timestamp"], String(Math.floor(at.getTime() / 1000)));
  assert.match(headers["webhook-signature"]!, /^v1,[A-Za-z0-9+/]+=*$/);
  const wh = new Webhook(SECRET);
  assert.deepEqual(wh.verify(body, headers), { type: "task.completed" });
  assert.throws(() => wh.verify(`${body} `, headers));
  assert.throws(() => wh.verify(body, { ...headers, "webhook-id": "other" }));
  assert.throws(() =>
    wh.verify(body, { ...headers, "webhook-timestamp": String(Number(headers["webhook-timestamp"]) - 1) }),
  );
  assert.throws(() => new Webhook(`whsec_${Buffer.alloc(24, 1).toString("base64")}`).verify(body, headers));
});
