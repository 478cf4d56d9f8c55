// Realtime politeness through the real app: concurrent POST /api/v1/verify requests for one
// domain share sessions (micro-batching) and take the same cluster-wide per-host slots as the
// batch workers, so the mail host never sees more than SMTP_MAX_CONNECTIONS_PER_HOST sessions
// from us, whatever mix of realtime and batch work is running.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

const users = Array.from({ length: 30 }, (_, i) => `user${i.toString()}`);
let world: MailWorld;
let ctx: TestContext;
let role: WorkerRole;

before(async () => {
  world = await startMailWorld({
    latencyMs: 10,
    domains: [
      { name: "busy.test", hosts: [{ name: "mx.busy.test", postfixErrorLimits: true }], mailboxes: users },
      { name: "busy2.test", hosts: [{ name: "mx.busy.test" }], mailboxes: users },
    ],
  });
  ctx = await createTestContext({
    env: worldEnv(world, {
      SMTP_MAX_CONNECTIONS_PER_HOST: "2",
      // One user's 60 concurrent requests must all reach the engine here (the per-user cap has
      // its own test, realtime-limits.test.ts).
      VERIFY_MAX_IN_FLIGHT_PER_USER: "60",
      RATE_LIMIT_PER_SECOND: "1000",
      RATE_LIMIT_BURST: "1000",
    }),
  });
  role = createWorkerRole(ctx.services);
});

after(async () => {
  await role?.stop(1000);
  await ctx?.close();
  await world?.close();
});

void test("60 concurrent realtime requests to one domain, with a batch task on the same host: at most 2 sessions", async () => {
  const user = await ctx.createUser(200);
  world.resetCounters();
  role.start();
  const batch = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(user.apiKey),
    payload: { emails: [...users.map((u) => `${u}@busy2.test`), "ghost@busy2.test"] },
  });
  assert.equal(batch.statusCode, 201, batch.body);
  const locals = Array.from({ length: 60 }, (_, i) =>
    i % 2 === 0 ? users[i % 30]! : `ghost${i.toString()}`,
  );
  const replies = await Promise.all(
    locals.map((local) =>
      ctx.app.inject({
        method: "POST",
        url: "/api/v1/verify",
        headers: ctx.bearer(user.apiKey),
        payload: { email: `${local}@busy.test` },
      }),
    ),
  );
  for (const [i, res] of replies.entries()) {
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, locals[i]!.startsWith("user") ? "valid" : "invalid", locals[i]);
  }
  await waitForTaskFinished(ctx.db, batch.json<{ id: string }>().id, 30_000);
  const c = world.counters("mx.busy.test");
  assert.ok(c.maxConcurrent <= 2, `max concurrent ${c.maxConcurrent.toString()}`);
  // One session per request would be 60 (plus the batch's); shared sessions need far fewer.
  assert.ok(c.connections < 20, `connections ${c.connections.toString()}`);
  for (const errors of c.errorsPerSession) assert.ok(errors <= 9, `errors ${errors.toString()}`);
});
