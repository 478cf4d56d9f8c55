// The claim's order and spread (docs/scheduling.md), on the real claim statements: fair between
// users, then between a user's tasks; never a domain whose server IP has every slot held; never
// one domain split between two concurrent claimers; a per-user cap when one is set. Claims are
// made directly (no session runs), so a claimed group stays "running" until the test releases it.
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { rememberDomainHosts } from "../../../src/db/queries/claims.ts";
import { releaseHostSlot, tryAcquireHostSlot } from "../../../src/db/queries/host-slots.ts";
import type { JobRecord } from "../../../src/db/queries/jobs.ts";
import { claimNextGroup, type ClaimRequest } from "../../../src/jobs/claim.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx?.close();
});
beforeEach(async () => {
  // Each test starts from an empty queue: earlier tests' tasks are finished, their jobs closed.
  await ctx.db.query("update email_jobs set status = 'completed' where status in ('pending', 'processing')");
  await ctx.db.query("update tasks set finished_at = now() where finished_at is null");
  await ctx.db.query("delete from smtp_host_slots");
});

const list = (domains: string[], perDomain: number): string[] =>
  domains.flatMap((d) => Array.from({ length: perDomain }, (_, i) => `u${i.toString()}@${d}`));
const names = (prefix: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}${i.toString()}.test`);

let workers = 0;
async function claim(extra: Partial<ClaimRequest> = {}): Promise<JobRecord[]> {
  const now = new Date();
  return claimNextGroup(ctx.db, {
    worker: `w${(workers++).toString()}`,
    now,
    leaseUntil: new Date(now.getTime() + 60_000),
    slotsPerHost: 2,
    ...extra,
  });
}

/** Whose the claimed group is: the one task all its jobs belong to. */
function taskOf(group: JobRecord[]): string {
  const tasks = new Set(group.map((j) => j.taskId));
  assert.equal(tasks.size, 1, "a group of these worlds is one task's");
  return [...tasks][0]!;
}

test("a second user's task gets the next sessions, though the first user's list came first", async () => {
  const a = await ctx.createUser(1_000);
  const b = await ctx.createUser(1_000);
  const big = await ctx.createTask(a, list(names("fa", 40), 5));
  // Eight groups of A running: what a busy pool looks like when B arrives.
  for (let i = 0; i < 8; i++) assert.equal(taskOf(await claim()), big);
  const small = await ctx.createTask(b, list(names("fb", 4), 5));
  const next = await Promise.all([claim(), claim(), claim(), claim()].map((p) => p.then(taskOf)));
  assert.deepEqual(next, [small, small, small, small], "B's four domains go before A's 32 waiting ones");
  assert.equal(taskOf(await claim()), big, "B has nothing left: A goes on");
});

test("users take turns: the one running fewer groups is served next", async () => {
  const a = await ctx.createUser(1_000);
  const b = await ctx.createUser(1_000);
  const ta = await ctx.createTask(a, list(names("ta", 10), 3));
  const tb = await ctx.createTask(b, list(names("tb", 10), 3));
  const order: string[] = [];
  for (let i = 0; i < 8; i++) order.push(taskOf(await claim()) === ta ? "A" : "B");
  assert.deepEqual(order, ["A", "B", "A", "B", "A", "B", "A", "B"]);
  void tb;
});

test("a user's second, small task is not starved by its first", async () => {
  const a = await ctx.createUser(1_000);
  const first = await ctx.createTask(a, list(names("s1", 30), 4));
  for (let i = 0; i < 6; i++) assert.equal(taskOf(await claim()), first);
  const second = await ctx.createTask(a, list(names("s2", 3), 4));
  const next = [];
  for (let i = 0; i < 3; i++) next.push(taskOf(await claim()));
  assert.deepEqual(next, [second, second, second]);
});

test("a domain whose server IP has every slot held elsewhere is not claimed; an idle connection of ours makes it claimable", async () => {
  const a = await ctx.createUser(1_000);
  const [busy, free] = ["busyhost.test", "freehost.test"];
  await ctx.createTask(a, [...list([busy], 3), ...list([free], 3)]);
  await rememberDomainHosts(
    ctx.db,
    [
      { domain: busy, host: "192.0.2.10" },
      { domain: free, host: "192.0.2.11" },
    ],
    new Date(),
  );
  const now = new Date();
  const held = [];
  for (let i = 0; i < 2; i++) {
    const slot = await tryAcquireHostSlot(ctx.db, {
      host: "192.0.2.10",
      slots: 2,
      holder: "other-worker",
      now,
      expiresAt: new Date(now.getTime() + 60_000),
    });
    held.push(slot!);
  }
  const first = await claim();
  assert.equal(first[0]!.domain, free);
  assert.deepEqual(await claim(), [], "the only due domain left is on a saturated server");
  const mine = await claim({ idleHosts: ["192.0.2.10"] });
  assert.equal(mine[0]?.domain, busy, "a worker holding an idle connection there may continue on it");

  await ctx.createTask(a, list(["busyhost2.test"], 2));
  await rememberDomainHosts(ctx.db, [{ domain: "busyhost2.test", host: "192.0.2.10" }], new Date());
  await releaseHostSlot(ctx.db, { egress: "", host: "192.0.2.10", slot: held[0]! }, "other-worker");
  assert.equal(
    (await claim())[0]?.domain,
    "busyhost2.test",
    "a freed slot makes the server's domains claimable",
  );
});

test("concurrent claimers never split one domain: each takes a different one", async () => {
  const a = await ctx.createUser(10_000);
  const domains = names("cc", 12);
  await ctx.createTask(a, list(domains, 20));
  const groups = await Promise.all(Array.from({ length: 12 }, () => claim()));
  const claimed = groups.filter((g) => g.length > 0);
  for (const g of claimed) assert.equal(new Set(g.map((j) => j.domain)).size, 1);
  const byDomain = new Map<string, number>();
  for (const g of claimed) byDomain.set(g[0]!.domain, (byDomain.get(g[0]!.domain) ?? 0) + g.length);
  for (const [domain, n] of byDomain) assert.equal(n, 20, `${domain}: all 20 in one group`);
  assert.equal(claimed.length, byDomain.size, "no domain claimed twice");
});

test("MAX_SESSIONS_PER_USER caps one user's running groups; others still claim", async () => {
  const a = await ctx.createUser(1_000);
  const b = await ctx.createUser(1_000);
  const ta = await ctx.createTask(a, list(names("ca", 6), 2));
  for (let i = 0; i < 2; i++) assert.equal(taskOf(await claim({ maxSessionsPerUser: 2 })), ta);
  assert.deepEqual(await claim({ maxSessionsPerUser: 2 }), [], "A is at its cap");
  const tb = await ctx.createTask(b, list(names("cb", 2), 2));
  assert.equal(taskOf(await claim({ maxSessionsPerUser: 2 })), tb);
});
