// A provider's volume throttle (docs/pacing.md) against the real worker role, the real database
// and the mail-world simulator's provider-wide RCPT quota: Google-style servers (two front ends,
// each its own IP) share one quota per client IP, answered beyond it with Gmail's "421 4.7.0 Try
// again later, closing connection". The engine must learn the provider's pace from that refusal
// and answer every address within the task's retry window instead of giving the refused ones up
// as unknown; a second task in the same window must not trip the quota again; the task's metrics
// say who is pacing it; and a realtime request with no room answers unknown, unasked and unbilled.
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import type { Database } from "../../../src/db/client.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import {
  createExpectation,
  startMailWorld,
  type DomainSpec,
  type MailWorld,
  type WorldSpec,
} from "../../support/mail-world/index.ts";
import { openTestDatabase } from "../../support/test-db.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

const QUOTA = { name: "gmail", maxRcpts: 24, windowMs: 3_000, reply: "gmail" as const };
const GOOGLE_HOSTS = [
  { name: "aspmx.l.google.com", preference: 1, kind: "google" as const, throttle: QUOTA.name },
  { name: "alt1.aspmx.l.google.com", preference: 5, kind: "google" as const, throttle: QUOTA.name },
];
const MAILBOXES = Array.from({ length: 14 }, (_, i) => `user${(i + 1).toString()}`);

/** `n` Google-hosted domains of `prefix`, 14 mailboxes each, asked with 2 unknown users. */
function googleDomains(prefix: string, n: number): DomainSpec[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `${prefix}${(i + 1).toString()}.test`,
    hosts: GOOGLE_HOSTS,
    mailboxes: MAILBOXES,
  }));
}
const FIRST = googleDomains("first", 5);
const SECOND = googleDomains("second", 2);
const PLAIN: DomainSpec[] = [1, 2, 3].map((i) => ({
  name: `plain${i.toString()}.test`,
  hosts: [{ name: `mx.plain${i.toString()}.test` }],
  mailboxes: MAILBOXES.slice(0, 6),
}));
const SPEC: WorldSpec = { latencyMs: 5, throttles: [QUOTA], domains: [...FIRST, ...SECOND, ...PLAIN] };

const emailsOf = (domains: readonly DomainSpec[], valid: number): string[] =>
  domains.flatMap((d) => [
    ...MAILBOXES.slice(0, valid).map((m) => `${m}@${d.name}`),
    `nobody1@${d.name}`,
    `nobody2@${d.name}`,
  ]);

let db: Database;
let world: MailWorld;
let ctx: TestContext;

before(async () => {
  db = await openTestDatabase();
  world = await startMailWorld(SPEC);
  ctx = await createTestContext({
    db,
    env: worldEnv(world, {
      WORKER_CONCURRENCY: "8",
      SMTP_MAX_CONNECTIONS_PER_HOST: "2",
      // Compressed like the quota (an hour in 3 s): the retry chain alone would end long before
      // the throttled addresses could be asked again.
      VERIFY_RETRY_DELAYS: "0.3,0.6",
      VERIFY_UNREACHABLE_RETRY_DELAYS: "0.2",
      // The realtime case asks more addresses at once than the pace has room for.
      VERIFY_MAX_IN_FLIGHT_PER_USER: "50",
    }),
  });
});

after(async () => {
  await ctx?.close();
  await world?.close();
  await db?.close();
});

interface Row {
  email: string;
  status: string;
  unknown_reason: string | null;
}

async function resultsOf(taskId: string): Promise<Row[]> {
  const { rows } = await db.query<Row>(
    `select j.email_address as email, v.status, v.unknown_reason
       from email_jobs j join email_verifications v on v.id = j.email_id
      where j.task_id = $1`,
    [taskId],
  );
  return rows;
}

/** Polls the task's metrics.paced until the task finishes; every non-empty list seen. */
async function watchPaced(user: { apiKey: string }, taskId: string, stop: AbortSignal) {
  const seen: Array<{ name: string; pending: number; rate_per_minute: number | null }> = [];
  while (!stop.aborted) {
    const res = await ctx.app.inject({ url: `/api/v1/tasks/${taskId}`, headers: ctx.bearer(user.apiKey) });
    assert.equal(res.statusCode, 200, res.body);
    seen.push(...res.json<{ metrics: { paced: typeof seen } }>().metrics.paced);
    await delay(100);
  }
  return seen;
}

test("a throttling provider is paced: every address answered, few refusals, and a second task does not trip it", async (t) => {
  const expect = createExpectation(SPEC);
  const user = await ctx.createUser(10_000);
  const emails = [...emailsOf(FIRST, 12), ...emailsOf(PLAIN, 6)];
  const role = createWorkerRole(ctx.services);
  role.start();
  try {
    const taskId = await ctx.createTask(user, emails, { retry_window_minutes: 10 });
    const stop = new AbortController();
    const watching = watchPaced(user, taskId, stop.signal);
    await waitForTaskFinished(db, taskId, 120_000).finally(() => stop.abort());
    const paced = await watching;

    const rows = await resultsOf(taskId);
    assert.equal(rows.length, emails.length);
    const wrong = rows.filter((r) => r.status !== expect(r.email).status);
    assert.deepEqual(wrong, [], "every address answered as the world says, none given up as unknown");
    const first = world.throttleCounters(QUOTA.name);
    t.diagnostic(
      `the provider: ${first.accepted.toString()} RCPTs accepted, ${first.refusals.toString()} refused`,
    );
    // The quota was met (the pace was learnt, not avoided) and its refusals stayed few: the burst
    // that taught it and the probes that found its window, not a refused retry chain.
    assert.ok(first.refusals >= 1, "the provider refused us at least once");
    assert.ok(
      first.refusals <= 16,
      `refusals: ${first.refusals.toString()} of ${(first.accepted + first.refusals).toString()}`,
    );
    assert.ok(first.maxInWindow <= QUOTA.maxRcpts);
    for (const c of world.allCounters().values()) assert.ok(c.maxConcurrent <= 2);

    const gmail = paced.filter((p) => p.name === "Gmail");
    assert.ok(gmail.length > 0, "the task's metrics named the provider pacing it");
    assert.ok(gmail.some((p) => p.pending > 0 && p.rate_per_minute !== null && p.rate_per_minute > 0));

    // Within the same window of the provider: the pace is known, so the quota is not tripped again.
    world.resetCounters();
    const secondEmails = emailsOf(SECOND, 14);
    const second = await ctx.createTask(user, secondEmails, { retry_window_minutes: 10 });
    await waitForTaskFinished(db, second, 60_000);
    const secondRows = await resultsOf(second);
    assert.deepEqual(
      secondRows.filter((r) => r.status !== expect(r.email).status),
      [],
    );
    assert.equal(world.throttleCounters(QUOTA.name).refusals, 0, "the second task was paced from the start");
  } finally {
    await role.stop(5_000);
  }
});

test("a realtime request at a provider whose pace has no room answers unknown at once, unasked and unbilled", async () => {
  // The pace learnt above still holds (its quiet period is a day): spend its room first.
  const user = await ctx.createUser(100);
  const ask = async (email: string) => {
    const res = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/verify",
      headers: ctx.bearer(user.apiKey),
      payload: { email },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<{ status: string; unknown_reason?: string | null }>();
  };
  const before = world.throttleCounters(QUOTA.name);
  // More addresses at once than the pace has room for in one window (micro-batches per domain).
  const emails = SECOND.flatMap((d) => MAILBOXES.map((m) => `${m}@${d.name}`));
  const answers = await Promise.all(emails.map(ask));
  const unknown = answers.filter((a) => a.status === "unknown");
  assert.ok(unknown.length > 0, "the pace ran out of room");
  for (const a of unknown) assert.equal(a.unknown_reason, "rate_limited");
  for (const a of answers) if (a.status !== "unknown") assert.equal(a.status, "valid");
  // The pace said no before the provider had to: not one more refusal.
  assert.equal(world.throttleCounters(QUOTA.name).refusals, before.refusals);
  const { rows } = await db.query<{ balance: number }>("select balance from users where id = $1", [
    user.userId,
  ]);
  assert.equal(rows[0]!.balance, 100 - (answers.length - unknown.length), "unknown answers were not charged");
});
