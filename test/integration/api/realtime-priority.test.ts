// Realtime first at a busy server (docs/scheduling.md, "Realtime first"): an API node and a worker
// node (two sets of services on one database, as two processes would be) share a provider's one
// server IP, whose only slot (SMTP_MAX_CONNECTIONS_PER_HOST 1) the worker keeps busy with a list
// of its tenant domains, continuing on its idle connection from one domain to the next. A realtime
// request for one of those domains waits in smtp_host_waits; the worker then claims none of the
// server's domains and closes its connection at the end of its current session instead of parking
// it, so the request has the next free slot, long before the list is done.
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import type { Database } from "../../../src/db/client.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { openTestDatabase } from "../../support/test-db.ts";

const FRONT = { name: "mx.front.test" };
const TENANTS = Array.from({ length: 30 }, (_, i) => `tenant${i.toString()}.test`);
const MAILBOXES = Array.from({ length: 12 }, (_, i) => `staff${i.toString()}`);

let world: MailWorld;
let db: Database;
let api: TestContext;
let workerNode: TestContext;

before(async () => {
  world = await startMailWorld({
    latencyMs: 30,
    domains: [
      ...TENANTS.map((name) => ({ name, hosts: [FRONT], mailboxes: MAILBOXES })),
      { name: "asker.test", hosts: [FRONT], mailboxes: ["ann"] },
    ],
  });
  db = await openTestDatabase();
  const env = worldEnv(world, { SMTP_MAX_CONNECTIONS_PER_HOST: "1", VERIFY_TIMEOUT_MS: "20000" });
  api = await createTestContext({ db, env });
  workerNode = await createTestContext({ db, env });
});

after(async () => {
  await api?.close();
  await workerNode?.close();
  await db?.close();
  await world?.close();
});

async function completed(taskId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "select count(*)::int as n from email_jobs where task_id = $1 and status = 'completed'",
    [taskId],
  );
  return rows[0]!.n;
}

test("a realtime request at a server the batch keeps busy gets its next slot, not the list's end", async () => {
  const user = await api.createUser(1_000);
  const list = TENANTS.flatMap((d) => MAILBOXES.map((m) => `${m}@${d}`));
  const taskId = await api.createTask(user, list);
  const role = createWorkerRole(workerNode.services);
  role.start();
  try {
    // The worker is well into the list: its sessions follow one another on the server's slot.
    while ((await completed(taskId)) < 40) await delay(20);
    const before = await completed(taskId);
    let busiest = 0;
    const sampler = setInterval(() => {
      busiest = Math.max(busiest, world.counters(FRONT.name).concurrent);
    }, 10);
    const res = await api.app.inject({
      method: "POST",
      url: "/api/v1/verify",
      headers: api.bearer(user.apiKey),
      payload: { email: "ann@asker.test" },
    });
    clearInterval(sampler);
    const meanwhile = (await completed(taskId)) - before;
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json<{ status: string }>().status, "valid");
    // The session running when the request came, and at most one more that had taken the slot
    // before the worker read the wait: each is one domain's first touch or the rest of one.
    assert.ok(
      meanwhile <= 2 * MAILBOXES.length,
      `${meanwhile.toString()} list addresses were verified while the request waited`,
    );
    assert.ok(meanwhile < list.length - before, "the request did not wait for the list's end");
    assert.ok(busiest <= 1, `${busiest.toString()} connections at once at a server with one slot`);
    const { rows } = await db.query<{ n: number }>("select count(*)::int as n from smtp_host_waits");
    assert.equal(rows[0]!.n, 0, "the request's wait ended with it");
  } finally {
    await role.stop(5_000);
  }
});
