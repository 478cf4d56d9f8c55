// Claim order (docs/engine.md, "Claim order"): every domain of a task gets its first session
// before any domain's bulk, and a retry that has fallen due goes before the bulk. The pool runs
// one group at a time (runOnce) on a manual clock, so the order of sessions is the order of the
// claims; each session is read back as the domain whose completed (or rescheduled) jobs grew.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { CLAIM_FIRST_CHUNK, CLAIM_LANE } from "../../../src/db/queries/jobs.ts";
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
