// Claim order (docs/engine.md, "Claim order"): every domain of a task gets its first session
// before any domain's bulk, and a retry that has fallen due goes before the bulk. The pool runs
// one group at a time (runOnce) on a manual clock, so the order of sessions is the order of the
// claims; each session is read back as the domain whose completed (or rescheduled) jobs grew.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import {
  advanceDeferringDomains,
  CLAIM_FIRST_CHUNK,
  CLAIM_LANE,
  domainsAwaitingFirstSession,
  nextDueAt,
} from "../../../src/db/queries/jobs.ts";
import { FIRST_TOUCH_SIZE } from "../../../src/jobs/first-touch.ts";
import { CANARY_SIZE } from "../../../src/jobs/deferral-canary.ts";
import { CLAIM_GROUP_MAX } from "../../../src/jobs/runner.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, ManualClock, type TestContext } from "../../support/test-app.ts";

// More than two claims' worth, so the big domain has a bulk after its first chunk.
const BIG = 2 * CLAIM_GROUP_MAX + CLAIM_FIRST_CHUNK;
const bigUsers = Array.from({ length: BIG }, (_, i) => `u${i.toString()}`);
// "aaa": first in the claim index's domain order, the position the old claim gave it.
const SMALL = ["s1.test", "s2.test", "s3.test", "s4.test"];
const RETRY_DELAY_S = 60;
// One provider's MX serving several domains (one host spec object: one server).
const SHARED_HOST = { name: "mx.provider.test" };
// More than CROWDED_HOST_DOMAINS (first-touch.ts): the host is crowded for each of them.
const TENANTS = Array.from({ length: 5 }, (_, i) => `t${i.toString()}.provider.test`);
const TENANT_USERS = Array.from({ length: 20 }, (_, i) => `p${i.toString()}`);
const GREY_USERS = Array.from({ length: 12 }, (_, i) => `g${i.toString()}`);

let world: MailWorld;
let ctx: TestContext;
const clock = new ManualClock(new Date());

before(async () => {
  world = await startMailWorld({
    domains: [
      { name: "aaa-big.test", hosts: [{ name: "mx.aaa-big.test" }], mailboxes: bigUsers },
      ...SMALL.map((name) => ({ name, hosts: [{ name: `mx.${name}` }], mailboxes: ["ann", "bob"] })),
      // Answers 451 for an hour: every attempt in this test is deferred.
      { name: "grey.test", hosts: [{ name: "mx.grey.test" }], mailboxes: ["gil"], greylistSeconds: 3_600 },
      ...TENANTS.map((name) => ({ name, hosts: [SHARED_HOST], mailboxes: TENANT_USERS })),
      {
        name: "grey12.test",
        hosts: [{ name: "mx.grey12.test" }],
        mailboxes: GREY_USERS,
        greylistSeconds: 3_600,
      },
    ],
  });
  ctx = await createTestContext({
    clock,
    env: worldEnv(world, {
      VERIFY_RETRY_DELAYS: `${RETRY_DELAY_S},${RETRY_DELAY_S}`,
      WORKER_CONCURRENCY: "1",
    }),
  });
});

after(async () => {
  await ctx?.close();
  await world?.close();
});

/** A task of `emails` for a new user with just enough credit. */
const createTask = async (emails: string[]) => ctx.createTask(await ctx.createUser(emails.length), emails);

/** Attempts made on the task's jobs, by domain: a session adds one per address it tried. */
async function attemptsByDomain(taskId: string): Promise<Map<string, number>> {
  const { rows } = await ctx.db.query<{ domain: string; n: number }>(
    `select domain, sum(attempts)::int as n from email_jobs where task_id = $1 group by domain`,
    [taskId],
  );
  return new Map(rows.map((r) => [r.domain, r.n]));
}

/** One group through the pool; the session it ran: its domain and how many addresses. */
async function nextSession(
  role: ReturnType<typeof createWorkerRole>,
  taskId: string,
): Promise<{ domain: string; size: number } | null> {
  const before = await attemptsByDomain(taskId);
  if (!(await role.pool.runOnce())) return null;
  const afterRun = await attemptsByDomain(taskId);
  const grown = [...afterRun].filter(([d, n]) => n > (before.get(d) ?? 0));
  assert.equal(grown.length, 1, `one domain per session, got ${JSON.stringify(grown)}`);
  const [domain, n] = grown[0]!;
  return { domain, size: n - (before.get(domain) ?? 0) };
}

const bigList = bigUsers.map((u) => `${u}@aaa-big.test`);
const smallLists = SMALL.flatMap((d) => [`ann@${d}`, `bob@${d}`, `ghost@${d}`]);

test("every domain's first session comes before the big domain's bulk", async () => {
  // The big domain first in the list too: neither position nor name puts the small ones ahead.
  const taskId = await createTask([...bigList, ...smallLists]);
  const role = createWorkerRole(ctx.services);
  const sessions: Array<{ domain: string; size: number }> = [];
  try {
    // Bounded: 4 small sessions + the big domain in at most ceil(BIG / CLAIM_FIRST_CHUNK) + 1.
    for (let i = 0; i < 20; i++) {
      const s = await nextSession(role, taskId);
      if (!s) break;
      sessions.push(s);
    }
  } finally {
    await role.stop(1_000);
  }
  const order = sessions.map((s) => s.domain);
  assert.equal(
    sessions.reduce((n, s) => n + s.size, 0),
    BIG + smallLists.length,
    `every address tried once: ${JSON.stringify(sessions)}`,
  );
  assert.deepEqual(sessions[0], { domain: "aaa-big.test", size: CLAIM_FIRST_CHUNK }, "a first chunk");
  const lastBig = order.lastIndexOf("aaa-big.test");
  const secondBig = order.indexOf("aaa-big.test", 1);
  for (const d of SMALL) {
    const first = order.indexOf(d);
    assert.ok(first >= 0, `${d} verified`);
    assert.ok(
      first < secondBig,
      `${d}'s first session (#${first}) before the big domain's bulk: ${order.join(", ")}`,
    );
    assert.ok(first < lastBig);
  }
  // The bulk follows in full claims.
  assert.deepEqual(
    sessions.filter((s) => s.domain === "aaa-big.test").map((s) => s.size),
    [CLAIM_FIRST_CHUNK, CLAIM_GROUP_MAX, CLAIM_GROUP_MAX],
  );
});

test("a retry that has fallen due goes before another domain's bulk", async () => {
  const taskId = await createTask([...bigList, "gil@grey.test"]);
  const role = createWorkerRole(ctx.services);
  const order: string[] = [];
  try {
    // The first sessions: the big domain's first chunk and grey.test (answered 451).
    for (let i = 0; i < 2; i++) order.push((await nextSession(role, taskId))!.domain);
    assert.deepEqual(new Set(order), new Set(["aaa-big.test", "grey.test"]));
    // The retry falls due while the big domain's bulk is still pending.
    clock.advance(RETRY_DELAY_S * 1000 + 1_000);
    const next = await nextSession(role, taskId);
    assert.equal(next?.domain, "grey.test", `the due retry first, not the bulk: ${JSON.stringify(next)}`);
    const { rows } = await ctx.db.query<{ deferred_retries: number }>(
      "select deferred_retries from email_jobs where task_id = $1 and domain = 'grey.test'",
      [taskId],
    );
    assert.equal(rows[0]!.deferred_retries, 2, "retried a second time: still deferred");
    // Bounded: the rest of the bulk in at most a few claims.
    for (let i = 0; i < 10; i++) if (!(await nextSession(role, taskId))) break;
  } finally {
    await role.stop(1_000);
  }
});

test("a task inserted in several statements still has one first chunk per domain", async () => {
  // 1,300 addresses: more than one insert statement's worth (create-task.ts inserts 500 at a
  // time). Two domains interleaved, and a few RFC-invalid entries, which have no domain.
  const emails = Array.from({ length: 1_300 }, (_, i) =>
    i % 100 === 7
      ? `not valid ${i.toString()}@x.test`
      : `m${i.toString()}@${i % 2 ? "odd" : "even"}.lanes.test`,
  );
  const taskId = await createTask(emails);
  const { rows } = await ctx.db.query<{ domain: string; lane: number; n: number; last: number }>(
    `select domain, claim_lane as lane, count(*)::int as n, max(position) as last
       from email_jobs where task_id = $1 group by domain, claim_lane order by domain, claim_lane`,
    [taskId],
  );
  const firstChunkOf = (domain: string) =>
    rows.find((r) => r.domain === domain && r.lane === CLAIM_LANE.firstChunk);
  for (const domain of ["even.lanes.test", "odd.lanes.test"])
    assert.equal(firstChunkOf(domain)?.n, CLAIM_FIRST_CHUNK, `${domain}: ${JSON.stringify(rows)}`);
  // The first chunk is the domain's first addresses in the list: 50 of each, among the first ~101.
  assert.ok(firstChunkOf("odd.lanes.test")!.last < 2 * CLAIM_FIRST_CHUNK + 2, JSON.stringify(rows));
  assert.equal(
    rows.filter((r) => r.lane === CLAIM_LANE.bulk).reduce((n, r) => n + r.n, 0),
    1_300 - rows.filter((r) => r.lane === CLAIM_LANE.firstChunk).reduce((n, r) => n + r.n, 0),
    "the rest is bulk",
  );
  await ctx.db.query("delete from email_jobs where task_id = $1", [taskId]);
});

test("at a host serving many domains, each domain's first session is a first touch, and the rests follow every touch", async () => {
  const role = createWorkerRole(ctx.services);
  // What the shared server was asked for, by domain (the controls and probes aside).
  const askedByDomain = () => {
    const byAddress = world.counters(SHARED_HOST.name).rcptByAddress;
    return new Map(
      TENANTS.map((d) => [d, TENANT_USERS.reduce((n, u) => n + (byAddress[`${u}@${d}`] ?? 0), 0)]),
    );
  };
  const sessions: Array<{ domain: string; size: number }> = [];
  try {
    // A first task of one address per domain: the pool has met the host's domains (as a queue
    // of many domains teaches it within its first second, learnt ahead of their sessions).
    const warmUp = await createTask(TENANTS.map((d) => `${TENANT_USERS[0]!}@${d}`));
    for (let i = 0; i < TENANTS.length + 2 && (await role.pool.runOnce()); i++);
    const { rows: open } = await ctx.db.query<{ n: number }>(
      "select count(*)::int as n from email_jobs where task_id = $1 and status = 'pending'",
      [warmUp],
    );
    assert.equal(open[0]!.n, 0, "the warm-up task is done");
    const emails = TENANTS.flatMap((d) => TENANT_USERS.slice(1).map((u) => `${u}@${d}`));
    await createTask(emails);
    // Bounded: one first session per domain and one more each.
    for (let i = 0; i < 2 * TENANTS.length + 2; i++) {
      // Time moves between sessions, as it does for real: a rest is due from its touch's time.
      clock.advance(1_000);
      const before = askedByDomain();
      if (!(await role.pool.runOnce())) break;
      const grown = [...askedByDomain()].filter(([d, n]) => n > before.get(d)!);
      assert.equal(grown.length, 1, `one domain per session: ${JSON.stringify(grown)}`);
      sessions.push({ domain: grown[0]![0], size: grown[0]![1] - before.get(grown[0]![0])! });
    }
  } finally {
    await role.stop(1_000);
  }
  const each = TENANT_USERS.length - 1;
  assert.deepEqual(
    sessions.map((s) => s.size),
    [...TENANTS.map(() => FIRST_TOUCH_SIZE), ...TENANTS.map(() => each - FIRST_TOUCH_SIZE)],
    `every touch first, then every rest, each address asked once: ${JSON.stringify(sessions)}`,
  );
  assert.deepEqual(new Set(sessions.slice(0, TENANTS.length).map((s) => s.domain)), new Set(TENANTS));
});

test("a domain whose first addresses were deferred has its untried ones start their chains now", async () => {
  const emails = ["a", "b", "c", "d"].map((u) => `${u}@held.lanes.test`);
  const taskId = await createTask([...emails, "x@other.lanes.test"]);
  const now = clock.now();
  const later = new Date(now.getTime() + 60_000);
  // a: already retried (its chain runs); b: being claimed right now; c, d: untried, in the bulk.
  await ctx.db.query(
    `update email_jobs set claim_lane = ${CLAIM_LANE.retry}, run_after = $2, retry_result = '{}'::jsonb
      where task_id = $1 and email_address = 'a@held.lanes.test'`,
    [taskId, later],
  );
  await ctx.db.query(
    `update email_jobs set status = 'processing' where task_id = $1 and email_address = 'b@held.lanes.test'`,
    [taskId],
  );
  await ctx.db.query(
    `update email_jobs set claim_lane = ${CLAIM_LANE.bulk}, run_after = $2
      where task_id = $1 and email_address in ('c@held.lanes.test', 'd@held.lanes.test', 'x@other.lanes.test')`,
    [taskId, later],
  );
  assert.equal(await advanceDeferringDomains(ctx.db, [{ taskId, domain: "held.lanes.test" }], now), 2);
  const { rows } = await ctx.db.query<{ email_address: string; claim_lane: number; run_after: Date }>(
    "select email_address, claim_lane, run_after from email_jobs where task_id = $1 order by email_address",
    [taskId],
  );
  const byAddress = new Map(rows.map((r) => [r.email_address, r]));
  for (const a of ["c@held.lanes.test", "d@held.lanes.test"]) {
    assert.equal(byAddress.get(a)!.claim_lane, CLAIM_LANE.retry, a);
    assert.equal(byAddress.get(a)!.run_after.getTime(), now.getTime(), a);
  }
  assert.equal(
    byAddress.get("a@held.lanes.test")!.run_after.getTime(),
    later.getTime(),
    "its own chain's step",
  );
  assert.equal(byAddress.get("x@other.lanes.test")!.claim_lane, CLAIM_LANE.bulk, "another domain");
  // The first pending job falls due now (c and d); with none pending, nothing is due.
  assert.equal((await nextDueAt(ctx.db))?.getTime(), now.getTime());
  await ctx.db.query("delete from email_jobs where task_id = $1", [taskId]);
  // What is left pending is later (grey.test's next step, from the test above), if anything.
  const next = await nextDueAt(ctx.db);
  assert.ok(next === null || next.getTime() > now.getTime(), String(next));
});

test("a deferring domain's retries ask a canary; the others take each step unasked, and every answer stands", async () => {
  // Settle what earlier tests left waiting, so that every session below is this task's.
  clock.advance(10 * RETRY_DELAY_S * 1000);
  const drain = createWorkerRole(ctx.services);
  try {
    for (let i = 0; i < 20 && (await drain.pool.runOnce()); i++);
  } finally {
    await drain.stop(1_000);
  }
  const emails = GREY_USERS.map((u) => `${u}@grey12.test`);
  const taskId = await createTask(emails);
  const role = createWorkerRole(ctx.services);
  // The task's addresses the server was asked for, per session (the control and the probe aside).
  const askedSoFar = () => {
    const byAddress = world.counters("mx.grey12.test").rcptByAddress;
    return emails.reduce((n, e) => n + (byAddress[e] ?? 0), 0);
  };
  const sizes: number[] = [];
  try {
    // The first session asks everyone (it starts each address's greylisting window), then each
    // of the two retries asks the canary only.
    for (let step = 0; step < 3; step++) {
      const before = askedSoFar();
      assert.equal(await role.pool.runOnce(), true);
      sizes.push(askedSoFar() - before);
      clock.advance(RETRY_DELAY_S * 1000 + 1_000);
    }
    assert.equal(await role.pool.runOnce(), false, "nothing left to ask");
  } finally {
    await role.stop(1_000);
  }
  assert.deepEqual(sizes, [GREY_USERS.length, CANARY_SIZE, CANARY_SIZE]);
  const { rows } = await ctx.db.query<{ status: string; deferred_retries: number; v: string | null }>(
    `select j.status, j.deferred_retries, v.unknown_reason as v
       from email_jobs j left join email_verifications v on v.id = j.email_id where j.task_id = $1`,
    [taskId],
  );
  assert.equal(rows.length, GREY_USERS.length);
  for (const r of rows) assert.deepEqual(r, { status: "completed", deferred_retries: 2, v: "greylisted" });
  // The server saw each held address once, each canary three times.
  const asked = world.counters("mx.grey12.test").rcptByAddress;
  const times = emails.map((e) => asked[e] ?? 0).sort();
  assert.deepEqual(times, [...emails.map((_, i) => (i < GREY_USERS.length - CANARY_SIZE ? 1 : 3))]);
});

test("the domains waiting for their first session are listed in name order, page by page", async () => {
  const taskId = await createTask(["a@w1.wait.test", "b@w1.wait.test", "a@w2.wait.test", "a@w3.wait.test"]);
  // w2's only job was claimed once (a first touch's rest): its first session happened.
  await ctx.db.query("update email_jobs set attempts = 1 where task_id = $1 and domain = 'w2.wait.test'", [
    taskId,
  ]);
  const now = clock.now();
  const mine = (domains: string[]) => domains.filter((d) => d.endsWith(".wait.test"));
  assert.deepEqual(mine(await domainsAwaitingFirstSession(ctx.db, now, "w", 100)), [
    "w1.wait.test",
    "w3.wait.test",
  ]);
  assert.deepEqual(await domainsAwaitingFirstSession(ctx.db, now, "w1.wait.test", 1), ["w3.wait.test"]);
  assert.deepEqual(
    mine(await domainsAwaitingFirstSession(ctx.db, new Date(now.getTime() - 60_000), "", 100)),
    [],
    "not due yet",
  );
  await ctx.db.query("delete from email_jobs where task_id = $1", [taskId]);
});
