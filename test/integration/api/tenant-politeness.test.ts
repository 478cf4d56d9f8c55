// Politeness per server IP: 50 tenant domains, each with its own MX name, all on one front-end
// IP (Exchange Online style, with tenant attribution). Two worker pools and concurrent realtime
// requests together must never hold more than SMTP_MAX_CONNECTIONS_PER_HOST connections to that
// IP, as counted by the simulated front end itself, and never mix tenants in one transaction.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, tenantFrontEnd, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

const TENANTS = 50;
const domains = tenantFrontEnd({ tenants: TENANTS, mailboxesPerTenant: 3, latencyMs: 5 });
let world: MailWorld;
let ctx: TestContext;

before(async () => {
  world = await startMailWorld({ latencyMs: 5, domains });
  ctx = await createTestContext({
    env: worldEnv(world, {
      SMTP_MAX_CONNECTIONS_PER_HOST: "2",
      WORKER_CONCURRENCY: "8",
      VERIFY_MAX_IN_FLIGHT_PER_USER: "60",
      RATE_LIMIT_PER_SECOND: "1000",
      RATE_LIMIT_BURST: "1000",
    }),
  });
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

void test("50 tenant domains on one IP, batch (two pools) and realtime together: at most 2 connections to the IP", async (t) => {
  const user = await ctx.createUser(1_000);
  const ip = world.addressOf(domains[0]!.hosts![0]!.name);
  world.resetCounters();
  // Tenants 1–40 in a batch task, tenants 41–50 in realtime requests at the same time.
  const batchEmails = domains
    .slice(0, 40)
    .flatMap((d) => ["user1", "user2", "user3", "ghost"].map((l) => `${l}@${d.name}`));
  const realtimeEmails = domains.slice(40).flatMap((d) => [`user1@${d.name}`, `nobody@${d.name}`]);
  const pools = [
    createWorkerRole(ctx.services, { workerId: "pool-a" }),
    createWorkerRole(ctx.services, { workerId: "pool-b" }),
  ];
  try {
    const task = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/tasks",
      headers: ctx.bearer(user.apiKey),
      payload: { emails: batchEmails },
    });
    assert.equal(task.statusCode, 201, task.body);
    for (const pool of pools) pool.start();
    const replies = await Promise.all(
      realtimeEmails.map((email) =>
        ctx.app.inject({
          method: "POST",
          url: "/api/v1/verify",
          headers: ctx.bearer(user.apiKey),
          payload: { email },
        }),
      ),
    );
    for (const [i, res] of replies.entries()) {
      assert.equal(res.statusCode, 200, res.body);
      const email = realtimeEmails[i]!;
      assert.equal(res.json().status, world.expectation(email).status, email);
    }
    await waitForTaskFinished(ctx.db, task.json<{ id: string }>().id, 60_000);
    const { rows } = await ctx.db.query<{ email: string; status: string }>(
      `select v.email, v.status from email_jobs j
         join email_verifications v on v.id = j.email_id where j.task_id = $1`,
      [task.json<{ id: string }>().id],
    );
    assert.equal(rows.length, batchEmails.length);
    for (const r of rows) assert.equal(r.status, world.expectation(r.email).status, r.email);
  } finally {
    await Promise.all(pools.map((p) => p.stop(2_000)));
  }
  const c = world.countersOfAddress(ip);
  assert.ok(c.maxConcurrent <= 2, `max concurrent connections to ${ip}: ${c.maxConcurrent.toString()}`);
  assert.equal(c.crossTenantRefusals, 0, "no transaction mixed two tenants");
  const addresses = batchEmails.length + realtimeEmails.length;
  t.diagnostic(
    `${c.connections.toString()} connections for ${addresses.toString()} addresses on ${TENANTS.toString()} tenant domains ` +
      `(${(c.connections / addresses).toFixed(3)} per address), max concurrent ${c.maxConcurrent.toString()}`,
  );
  // One connection per domain would be 50; connections left idle serve the next tenants.
  assert.ok(c.connections < TENANTS, `connections ${c.connections.toString()}`);
});
