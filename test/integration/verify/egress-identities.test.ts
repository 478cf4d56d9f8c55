// Egress identities (SMTP_EGRESS) against the mail-world simulator, on the database the test run
// uses (PGlite, or PostgreSQL with TEST_DATABASE_URL): loopback source addresses 127.0.0.2 and
// 127.0.0.3 stand for two egress IPs, and the simulated servers count and judge connections per
// client IP (maxConnectionsPerClient, blockedClients).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { guardPorts } from "../../../src/app/engine-options.ts";
import { createPgHostGate, HostBusyError } from "../../../src/politeness/host-gate.ts";
import { systemClock } from "../../../src/lib/clock.ts";
import { providerOf } from "../../../src/verify/index.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type DomainSpec, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { engineFor } from "./helpers.ts";
import { startSocks5Server } from "./socks5-server.ts";

const A = "127.0.0.2";
const B = "127.0.0.3";
const MAILBOXES = ["ann", "bob", "cat", "dan"];

/** `n` domains served by one MX host. */
const hosted = (prefix: string, n: number, host: string, extra: Partial<DomainSpec> = {}): DomainSpec[] =>
  Array.from({ length: n }, (_, i) => ({
    name: `${prefix}${i.toString()}.test`,
    hosts: [{ name: host }],
    mailboxes: MAILBOXES,
    ...extra,
  }));

let world: MailWorld;
let ctx: TestContext;

before(async () => {
  world = await startMailWorld({
    latencyMs: 5,
    domains: [
      // One server IP, twelve domains, at most two connections per client IP.
      ...hosted("busy", 12, "mx.busy-host.test").map((d, i) =>
        i === 0 ? { ...d, hosts: [{ name: "mx.busy-host.test", maxConnectionsPerClient: 2 }] } : d,
      ),
      // Blocklists A only.
      ...hosted("blk", 3, "mx.blocky.test").map((d, i) =>
        i === 0 ? { ...d, hosts: [{ name: "mx.blocky.test", blockedClients: [A] }] } : d,
      ),
      // Another provider, which blocks nobody.
      ...hosted("oth", 2, "mx.other.test"),
      // Blocklists A only, for the realtime path.
      ...hosted("rt", 1, "mx.rt-blocky.test").map((d) => ({
        ...d,
        hosts: [{ name: "mx.rt-blocky.test", blockedClients: [A] }],
      })),
      // Blocklists A only, for the proxy identity.
      ...hosted("px", 1, "mx.px-blocky.test").map((d) => ({
        ...d,
        hosts: [{ name: "mx.px-blocky.test", blockedClients: [A] }],
      })),
      // Blocklists both identities.
      ...hosted("wall", 2, "mx.wall.test").map((d, i) =>
        i === 0 ? { ...d, hosts: [{ name: "mx.wall.test", blockedClients: [A, B] }] } : d,
      ),
    ],
  });
  ctx = await createTestContext({
    env: worldEnv(world, {
      SMTP_EGRESS: `${A},${B}`,
      SMTP_MAX_CONNECTIONS_PER_HOST: "2",
      WORKER_CONCURRENCY: "8",
      VERIFY_RETRY_DELAYS: "0.05,0.05",
    }),
  });
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

const addressesOf = (prefix: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => MAILBOXES.map((m) => `${m}@${prefix}${i.toString()}.test`)).flat();

function gate(holder: string, maxWaitMs = 200) {
  return createPgHostGate({
    db: ctx.db,
    clock: systemClock,
    holder,
    slotsPerHost: 2,
    leaseMs: 60_000,
    maxWaitMs,
    egress: [A, B],
    whenAllResting: "defer",
  });
}

test("each identity holds the per-host limit at one server IP at once, cluster-wide", async () => {
  const host = "192.0.2.25";
  const wish = { egress: [A, B], provider: "slots.test" };
  const mine = gate("egress-slots-1");
  const held = await Promise.all([1, 2, 3, 4].map(() => mine.acquire(host, undefined, wish)));
  const byEgress = held.map((r) => r.egress).sort();
  assert.deepEqual(byEgress, [A, A, B, B], "two slots per identity: four sessions at one IP");
  assert.equal(mine.isSaturated(host), true);
  await assert.rejects(
    mine.acquire(host, undefined, wish),
    (e: unknown) => e instanceof HostBusyError && e.isLocal,
  );
  // Another worker sees the same slots through the database.
  await assert.rejects(
    gate("egress-slots-2").acquire(host, undefined, wish),
    (e: unknown) => e instanceof HostBusyError && !e.isLocal,
  );
  const { rows } = await ctx.db.query<{ egress: string; n: number }>(
    "select egress, count(*)::int as n from smtp_host_slots where host = $1 and holder is not null group by egress order by egress",
    [host],
  );
  assert.deepEqual(
    rows.map((r) => [r.egress, r.n]),
    [
      [A, 2],
      [B, 2],
    ],
  );
  for (const release of held) release();
});

test("a batch with two identities: every result right, at most the limit per client IP", async (t) => {
  const user = await ctx.createUser(1_000);
  const emails = addressesOf("busy", 12);
  const taskId = await ctx.createTask(user, emails);
  const role = createWorkerRole(ctx.services);
  role.start();
  try {
    await waitForTaskFinished(ctx.db, taskId, 60_000);
  } finally {
    await role.stop(5_000);
  }
  const { rows } = await ctx.db.query<{ email: string; status: string; unknown_reason: string | null }>(
    `select v.email, v.status, v.unknown_reason
       from email_jobs j join email_verifications v on v.id = j.email_id
      where j.task_id = $1`,
    [taskId],
  );
  assert.equal(rows.length, emails.length);
  for (const r of rows)
    assert.equal(r.status, world.expectation(r.email).status, `${r.email}: ${r.unknown_reason ?? ""}`);
  const counters = world.counters("mx.busy-host.test");
  const a = counters.byClient[A];
  const b = counters.byClient[B];
  assert.ok(a !== undefined && a.connections > 0, "identity A was used");
  assert.ok(b !== undefined && b.connections > 0, "identity B was used");
  assert.ok(a.maxConcurrent <= 2, `A: ${a.maxConcurrent.toString()} connections at once`);
  assert.ok(b.maxConcurrent <= 2, `B: ${b.maxConcurrent.toString()} connections at once`);
  assert.equal(a.refusals + b.refusals, 0, "the server never refused a connection as too many");
  t.diagnostic(
    `server IP ${world.addressOf("mx.busy-host.test")}: ${counters.connections.toString()} connections, ` +
      `at most ${counters.maxConcurrent.toString()} at once; ` +
      `A ${a.connections.toString()} (at most ${a.maxConcurrent.toString()} at once), ` +
      `B ${b.connections.toString()} (at most ${b.maxConcurrent.toString()} at once)`,
  );
  assert.equal(counters.byClient["127.0.0.1"], undefined, "nothing left from the OS's default address");
});

test("an identity a provider blocklists rests for it; the other finishes; no rest elsewhere", async () => {
  const engine = engineFor(
    world,
    { smtpEgress: [A, B], smtpIdleReuseMs: 0 },
    { hostGate: gate("egress-rest"), ...guardPorts },
  );
  try {
    const blocky = addressesOf("blk", 1);
    const first = await engine.verifyGroup("blk0.test", blocky);
    for (const r of first) {
      assert.notEqual(r.unknownReason, "ip_blocklisted", r.email);
      assert.equal(r.status, world.expectation(r.email).status, r.email);
    }
    const blockyCounters = world.counters("mx.blocky.test");
    assert.equal(blockyCounters.byClient[A]?.refusals, 1, "A was tried and refused once");
    assert.ok((blockyCounters.byClient[B]?.connections ?? 0) > 0, "B asked the addresses");
    const provider = providerOf("mx.blocky.test", world.addressOf("mx.blocky.test"));
    assert.equal(provider, "blocky.test");
    const rests = await ctx.db.query<{ egress: string; provider: string; reason: string }>(
      "select egress, provider, reason from smtp_egress_rests order by provider, egress",
    );
    assert.deepEqual(rests.rows, [{ egress: A, provider, reason: "ip_blocklisted" }]);

    // Another provider: A is not resting there (its turn comes first in the rotation).
    for (const domain of ["oth0.test", "oth1.test"]) {
      const results = await engine.verifyGroup(
        domain,
        MAILBOXES.map((m) => `${m}@${domain}`),
      );
      for (const r of results) assert.equal(r.status, world.expectation(r.email).status, r.email);
    }
    assert.ok(
      (world.counters("mx.other.test").byClient[A]?.connections ?? 0) > 0,
      "A serves another provider",
    );

    // The same provider again: A rests, so it is not even tried.
    for (const domain of ["blk1.test", "blk2.test"]) {
      const results = await engine.verifyGroup(
        domain,
        MAILBOXES.map((m) => `${m}@${domain}`),
      );
      for (const r of results) assert.equal(r.status, world.expectation(r.email).status, r.email);
    }
    assert.equal(world.counters("mx.blocky.test").byClient[A]?.refusals, 1, "A rested for blocky.test");
  } finally {
    await engine.close();
  }
});

test("every identity resting for a provider: the batch gate defers the group (HostBusyError)", async () => {
  const engine = engineFor(
    world,
    { smtpEgress: [A, B], smtpIdleReuseMs: 0 },
    { hostGate: gate("egress-wall"), ...guardPorts },
  );
  try {
    await assert.rejects(
      engine.verifyGroup("wall0.test", addressesOf("wall", 1)),
      (e: unknown) => e instanceof HostBusyError && !e.isLocal,
    );
    const counters = world.counters("mx.wall.test");
    assert.equal(counters.byClient[A]?.refusals, 1);
    assert.equal(counters.byClient[B]?.refusals, 1);
    // Both rest now: the next group of that provider is deferred without a connection.
    await assert.rejects(
      engine.verifyGroup(
        "wall1.test",
        MAILBOXES.map((m) => `${m}@wall1.test`),
      ),
      (e: unknown) => e instanceof HostBusyError && !e.isLocal,
    );
    assert.equal(world.counters("mx.wall.test").connections, counters.connections);
  } finally {
    await engine.close();
  }
});

test("a batch whose provider rests for every identity: the group waits for the first rest to end, not failed, not billed", async () => {
  // The previous test left both identities resting for wall.test.
  const user = await ctx.createUser(100);
  const emails = MAILBOXES.map((m) => `${m}@wall1.test`);
  const taskId = await ctx.createTask(user, emails);
  const connectionsBefore = world.counters("mx.wall.test").connections;
  const jobs = () =>
    ctx.db.query<{
      status: string;
      attempts: number;
      email_id: string | null;
      deferred: boolean;
      until_rest_ends: boolean;
    }>(
      `select status, attempts, email_id, run_after > created_at as deferred,
              run_after >= (select min(until) from smtp_egress_rests where provider = 'wall.test') as until_rest_ends
         from email_jobs where task_id = $1`,
      [taskId],
    );
  const role = createWorkerRole(ctx.services);
  role.start();
  try {
    // Bounded: until the worker has claimed the group and put it back for later.
    for (let i = 0; i < 200; i++) {
      const { rows } = await jobs();
      if (rows.every((r) => r.deferred && r.status === "pending")) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await role.stop(5_000);
  }
  const { rows } = await jobs();
  assert.equal(rows.length, emails.length);
  for (const r of rows) {
    assert.equal(r.status, "pending", "not failed");
    assert.equal(r.deferred, true, "put back for later");
    assert.equal(r.until_rest_ends, true, "not claimed again before an identity wakes");
    assert.equal(r.attempts, 0, "the deferral does not count as an attempt");
    assert.equal(r.email_id, null, "no result, so nothing billed");
  }
  assert.equal(world.counters("mx.wall.test").connections, connectionsBefore, "no connection was opened");
});

test("realtime with identities: the blocklisted identity steps aside and the answer is the mailbox's", async () => {
  const user = await ctx.createUser(100);
  for (const email of ["ann@rt0.test", "nobody@rt0.test"]) {
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/verify",
      headers: ctx.bearer(user.apiKey),
      payload: { email },
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<{ status: string; unknown_reason: string | null }>();
    assert.equal(body.status, world.expectation(email).status, `${email}: ${body.unknown_reason ?? ""}`);
  }
  const counters = world.counters("mx.rt-blocky.test");
  assert.equal(counters.byClient[A]?.refusals, 1, "A tried once, then rested for rt-blocky.test");
  assert.ok((counters.byClient[B]?.connections ?? 0) > 0, "B asked");
});

test("a SOCKS5 proxy is an identity like a source address (the engine's own gate, no database)", async () => {
  const proxy = await startSocks5Server({ user: "probe", password: "pw" });
  const engine = engineFor(world, {
    smtpEgress: [A, `socks5://probe:pw@127.0.0.1:${proxy.port.toString()}`],
    smtpIdleReuseMs: 0,
  });
  try {
    const results = await engine.verifyGroup("px0.test", addressesOf("px", 1));
    for (const r of results) assert.equal(r.status, world.expectation(r.email).status, r.email);
    const counters = world.counters("mx.px-blocky.test");
    assert.equal(counters.byClient[A]?.refusals, 1, "A was refused");
    // The proxy connects from the OS's default loopback address.
    assert.ok((counters.byClient["127.0.0.1"]?.connections ?? 0) > 0, "the proxy asked");
    assert.ok(
      proxy.requests.includes(`${world.addressOf("mx.px-blocky.test")}:${world.smtpPort.toString()}`),
    );
  } finally {
    await engine.close();
    await proxy.close();
  }
});
