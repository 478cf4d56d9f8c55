// The DATA_DIR free-space guard in the real app (in-process, both engines), with the statfs source
// injected so any machine can put the server below DATA_DIR_MIN_FREE_MB: every request that would
// write is refused before it is accepted (503 SERVICE_UNAVAILABLE, Retry-After), reads, sessions
// and /healthz go on, /readyz is not ready and says why, the workers claim nothing, and nothing is
// charged; when space comes back the same work goes through. The real full disk (a tmpfs DATA_DIR
// under a real server) is test/integration/faults/disk-full.test.ts.
//
// Also: a database failure while a key is looked up answers 503, never 401 (a valid key once
// read as unknown when the embedded engine died mid-lookup).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import {
  createDiskSpaceGuard,
  DISK_SPACE_RETRY_AFTER_SECONDS,
  type DiskSpaceGuard,
} from "../../../src/observability/disk-space.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError } from "./helpers.ts";

const MIB = 1024 * 1024;
const MIN_FREE_MB = 256;

let freeBytes = 10 * 1024 * MIB;
let guard: DiskSpaceGuard;
let ctx: TestContext;
let role: WorkerRole;
let user: TestUser;

/** Sets the free space the guard will read and takes a sample, as its 1 s timer would. */
async function setFree(mb: number): Promise<void> {
  freeBytes = mb * MIB;
  await guard.sample();
}

before(async () => {
  guard = createDiskSpaceGuard({
    dir: "/srv/mailprobe-test",
    minFreeMb: MIN_FREE_MB,
    statfs: async () => ({ bavail: freeBytes, bsize: 1 }),
  });
  await guard.start();
  ctx = await createTestContext({ diskSpace: guard, env: { SMTP_HELO_NAME: "probe.mailprobe.test" } });
  role = createWorkerRole(ctx.services);
  user = await ctx.createUser(100);
});

after(async () => {
  await role?.stop(1000);
  await ctx?.close();
});

async function pendingDeliveries(): Promise<number> {
  const { rows } = await ctx.db.query<{ n: number }>(
    "select count(*) as n from webhook_deliveries where user_id = $1 and status = 'pending'",
    [user.userId],
  );
  return Number(rows[0]!.n);
}

function multipart(csv: string): { payload: Buffer; type: string } {
  const boundary = `----mailprobe-disk-${randomBytes(8).toString("hex")}`;
  return {
    type: `multipart/form-data; boundary=${boundary}`,
    payload: Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="list.csv"\r\n` +
        `Content-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`,
    ),
  };
}

const api = (method: "GET" | "POST" | "DELETE", url: string, payload?: unknown, who: TestUser = user) =>
  ctx.app.inject({
    method,
    url,
    headers: ctx.bearer(who.apiKey),
    ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}),
  });

function assertRefused(res: LightMyRequestResponse, what: string): void {
  const error = assertError(res, 503, "SERVICE_UNAVAILABLE", null);
  assert.equal(res.headers["retry-after"], String(DISK_SPACE_RETRY_AFTER_SECONDS), what);
  assert.match(error.message, /DATA_DIR.*DATA_DIR_MIN_FREE_MB \(256 MB\)/, what);
}

async function balance(): Promise<number> {
  const res = await api("GET", "/api/v1/credits/balance");
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ balance: number }>().balance;
}

test("below DATA_DIR_MIN_FREE_MB: writes are refused before they are accepted, reads go on", async () => {
  // A task created while there was space: its jobs must wait while the disk is low.
  const before = await api("POST", "/api/v1/tasks", { emails: ["valid@sandbox.mailprobe.invalid"] });
  assert.equal(before.statusCode, 201, before.body);
  const waitingTask = before.json<{ id: string }>().id;
  const balanceBefore = await balance();
  const keysBefore = (await api("GET", "/api/v1/api-keys")).json<{ api_keys: unknown[] }>().api_keys.length;
  // A webhook queued while there was space: the dispatcher must not claim it while the disk is low.
  const ping = await api("POST", "/api/v1/webhooks/test", { url: "https://hooks.example.com/low" });
  assert.equal(ping.statusCode, 202, ping.body);

  await setFree(MIN_FREE_MB - 1);

  const upload = multipart("email\nann@example.com\nbob@example.com\n");
  const refused: Array<[string, () => Promise<LightMyRequestResponse>]> = [
    ["task creation", () => api("POST", "/api/v1/tasks", { emails: ["ann@example.com"] })],
    [
      "upload",
      () =>
        ctx.app.inject({
          method: "POST",
          url: "/api/v1/tasks/batch/upload",
          headers: { ...ctx.bearer(user.apiKey), "content-type": upload.type },
          payload: upload.payload,
        }),
    ],
    ["realtime verify", () => api("POST", "/api/v1/verify", { email: "ann@example.com" })],
    ["key creation", () => api("POST", "/api/v1/api-keys", { name: "ci", purpose: "custom" })],
    ["webhook secret rotation", () => api("POST", "/api/v1/webhooks/secret/rotate")],
    [
      "webhook test event",
      () => api("POST", "/api/v1/webhooks/test", { url: "https://hooks.example.com/x" }),
    ],
    ["task cancel", () => api("POST", `/api/v1/tasks/${waitingTask}/cancel`)],
    ["task delete", () => api("DELETE", `/api/v1/tasks/${waitingTask}`)],
  ];
  for (const [what, send] of refused) assertRefused(await send(), what);

  // Reads, a session (a signed token, nothing stored) and the probes still answer.
  assert.equal((await api("GET", "/api/v1/tasks")).statusCode, 200);
  assert.equal((await api("GET", `/api/v1/tasks/${waitingTask}`)).statusCode, 200);
  assert.equal((await api("POST", "/api/v1/auth/session")).statusCode, 200);
  assert.equal((await ctx.app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
  // Credentials are checked first: a wrong key is still 401, not a hint about the disk.
  const stranger = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: { authorization: `Bearer mpk_${"A".repeat(40)}` },
    payload: { emails: ["ann@example.com"] },
  });
  assertError(stranger, 401, "UNAUTHORIZED");

  const ready = await ctx.app.inject({ method: "GET", url: "/readyz" });
  assertError(ready, 503, "SERVICE_UNAVAILABLE");
  assert.equal(ready.headers["retry-after"], String(DISK_SPACE_RETRY_AFTER_SECONDS));
  assert.deepEqual(ready.json<{ data_dir: unknown }>().data_dir, {
    free_mb: MIN_FREE_MB - 1,
    min_free_mb: MIN_FREE_MB,
  });

  // The workers and the webhook dispatcher claim nothing: the task and the ping stay pending.
  assert.equal(await role.pool.runOnce(), false);
  assert.equal(await role.webhooks.runOnce(), 0);
  assert.equal(await pendingDeliveries(), 1);
  const waiting = await api("GET", `/api/v1/tasks/${waitingTask}`);
  assert.equal(waiting.json<{ finished_at: string | null }>().finished_at, null, waiting.body);

  // Nothing was charged or created for the refused work.
  assert.equal(await balance(), balanceBefore);
  const keysAfter = (await api("GET", "/api/v1/api-keys")).json<{ api_keys: unknown[] }>().api_keys.length;
  assert.equal(keysAfter, keysBefore);

  // Space back (exactly the threshold is enough): the same work goes through.
  await setFree(MIN_FREE_MB);
  const ok = await ctx.app.inject({ method: "GET", url: "/readyz" });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.deepEqual(ok.json<{ data_dir: unknown }>().data_dir, {
    free_mb: MIN_FREE_MB,
    min_free_mb: MIN_FREE_MB,
  });
  for (let i = 0; i < 10 && (await role.pool.runOnce()); i++);
  assert.equal(await role.webhooks.runOnce(), 1);
  assert.equal(await pendingDeliveries(), 0);
  const done = await api("GET", `/api/v1/tasks/${waitingTask}`);
  assert.notEqual(done.json<{ finished_at: string | null }>().finished_at, null, done.body);
  const created = await api("POST", "/api/v1/tasks", { emails: ["info@sandbox.mailprobe.invalid"] });
  assert.equal(created.statusCode, 201, created.body);
  const key = await api("POST", "/api/v1/api-keys", { name: "ci", purpose: "custom" });
  assert.equal(key.statusCode, 201, key.body);
});

test("the key store failing during authentication: 503 SERVICE_UNAVAILABLE, never 401", async () => {
  // A context of its own whose database is closed under it: every lookup now fails for real.
  const own = await createTestContext({ env: { SMTP_HELO_NAME: "probe.mailprobe.test" } });
  try {
    const victim = await own.createUser(5);
    await own.db.close();
    for (const headers of [own.bearer(victim.apiKey), { "x-api-key": victim.apiKey }]) {
      const res = await own.app.inject({ method: "GET", url: "/api/v1/credits/balance", headers });
      assertError(res, 503, "SERVICE_UNAVAILABLE");
      assert.ok(
        Number(res.headers["retry-after"]) >= 1,
        `Retry-After: ${String(res.headers["retry-after"])}`,
      );
    }
  } finally {
    await own.close();
  }
});
