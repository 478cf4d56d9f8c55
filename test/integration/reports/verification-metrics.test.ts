// GET /api/v1/metrics/verifications over a known history: realtime verifications (one a cached
// answer), three tasks whose jobs are pending, processing, completed and failed, batch results
// stored the day after their job, rows on both sides of midnight UTC and of the range bounds.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError } from "../api/helpers.ts";
import { insertJobRow, insertTaskRow, insertVerificationRow, okJson } from "./history.ts";

let ctx: TestContext;
const clock = new ManualClock("2026-03-05T12:00:00Z");
let m: TestUser;
let lone: TestUser;

/**
 * Range under test: [2026-03-01T00:00Z, 2026-03-03T18:00Z).
 *   T0 (02-28, before the range): job z → completed, its result stored 02-28.
 *   T1 (03-01 10:00): a → completed (result 03-01 valid), b → completed (result 03-02 00:10,
 *      unknown, on a catch-all domain), "C@X.TEST" → failed, d → pending.
 *   T2 (03-02 23:30): a → processing, e → completed (result 03-03 00:01, catchall).
 *   Realtime: a (03-01 09:00 valid), admin@ (03-01 23:59:59.999 valid, role account), c
 *      (03-01 12:00 valid), temp@ (03-02 00:00 disposable), "not-an-email" (03-02 11:00
 *      invalid_syntax), f (03-03 12:00 invalid), g (created 03-03 13:00 from a result validated
 *      03-01 08:00), late@ (03-03 19:00, after the range).
 */
async function seedMetricsHistory(userId: string): Promise<void> {
  const db = ctx.db;
  const t0 = await insertTaskRow(db, { userId, at: "2026-02-28T12:00:00Z", emailCount: 1 });
  const t1 = await insertTaskRow(db, { userId, at: "2026-03-01T10:00:00Z", emailCount: 4 });
  const t2 = await insertTaskRow(db, { userId, at: "2026-03-02T23:30:00Z", emailCount: 2 });
  const batch = (
    email: string,
    status: "valid" | "unknown" | "catchall",
    at: string,
    taskId: string,
    isCatchall = false,
  ) =>
    insertVerificationRow(db, userId, { email, status, createdAt: at, origin: "batch", taskId, isCatchall });

  const vz = await batch("z@x.test", "valid", "2026-02-28T12:01:00Z", t0);
  await insertJobRow(db, {
    taskId: t0,
    userId,
    position: 0,
    email: "z@x.test",
    status: "completed",
    at: "2026-02-28T12:00:00Z",
    emailId: vz,
  });

  const t1At = "2026-03-01T10:00:00Z";
  const va = await batch("a@x.test", "valid", "2026-03-01T10:05:00Z", t1);
  const vb = await batch("b@x.test", "unknown", "2026-03-02T00:10:00Z", t1, true);
  await insertJobRow(db, {
    taskId: t1,
    userId,
    position: 0,
    email: "a@x.test",
    status: "completed",
    at: t1At,
    emailId: va,
  });
  await insertJobRow(db, {
    taskId: t1,
    userId,
    position: 1,
    email: "b@x.test",
    status: "completed",
    at: t1At,
    emailId: vb,
  });
  await insertJobRow(db, { taskId: t1, userId, position: 2, email: "C@X.TEST", status: "failed", at: t1At });
  await insertJobRow(db, { taskId: t1, userId, position: 3, email: "d@x.test", status: "pending", at: t1At });

  const t2At = "2026-03-02T23:30:00Z";
  const ve = await batch("e@x.test", "catchall", "2026-03-03T00:01:00Z", t2, true);
  await insertJobRow(db, {
    taskId: t2,
    userId,
    position: 0,
    email: "a@x.test",
    status: "processing",
    at: t2At,
  });
  await insertJobRow(db, {
    taskId: t2,
    userId,
    position: 1,
    email: "e@x.test",
    status: "completed",
    at: t2At,
    emailId: ve,
  });

  const realtime = (
    email: string,
    status: "valid" | "invalid" | "disposable_domain" | "invalid_syntax",
    createdAt: string,
    more: object = {},
  ) => insertVerificationRow(db, userId, { email, status, createdAt, ...more });
  await realtime("a@x.test", "valid", "2026-03-01T09:00:00Z");
  await realtime("admin@y.test", "valid", "2026-03-01T23:59:59.999Z", { isRoleBased: true });
  // Rows as stored for a free-provider domain (is_free_provider: true), as the engine marks gmail.com.
  await realtime("c@x.test", "valid", "2026-03-01T12:00:00Z", { isFreeProvider: true });
  await realtime("temp@mailinator.test", "disposable_domain", "2026-03-02T00:00:00.000Z", {
    isDisposable: true,
  });
  await realtime("not-an-email", "invalid_syntax", "2026-03-02T11:00:00Z");
  await realtime("f@x.test", "invalid", "2026-03-03T12:00:00Z", { isFreeProvider: true });
  await realtime("g@x.test", "valid", "2026-03-03T13:00:00Z", { validatedAt: "2026-03-01T08:00:00Z" });
  await realtime("late@x.test", "valid", "2026-03-03T19:00:00Z");
}

before(async () => {
  ctx = await createTestContext({ clock });
  m = await ctx.createUser(0);
  await seedMetricsHistory(m.userId);
  lone = await ctx.createUser(0);
  // Another user's activity on the same days stays out of m's metrics.
  await seedMetricsHistory(lone.userId);
});
after(async () => {
  await ctx.close();
});

const metrics = (user: TestUser, query = "") =>
  ctx.app.inject({
    method: "GET",
    url: `/api/v1/metrics/verifications${query}`,
    headers: ctx.bearer(user.apiKey),
  });

const counters = (c: {
  verifications: number;
  tasks: number;
  unique: number;
  jobs: [number, number, number, number];
  statuses: [number, number, number, number, number, number];
  catchall: number;
  role: number;
  disposable: number;
  free: number;
}) => ({
  total_verifications: c.verifications,
  total_tasks: c.tasks,
  unique_email_addresses: c.unique,
  job_status: { pending: c.jobs[0], processing: c.jobs[1], completed: c.jobs[2], failed: c.jobs[3] },
  verification_status: {
    valid: c.statuses[0],
    invalid: c.statuses[1],
    catchall: c.statuses[2],
    invalid_syntax: c.statuses[3],
    disposable_domain: c.statuses[4],
    unknown: c.statuses[5],
  },
  total_catchall: c.catchall,
  total_role_based: c.role,
  total_disposable_domain_emails: c.disposable,
  total_free_provider_emails: c.free,
});

describe("GET /api/v1/metrics/verifications", () => {
  test("with from/to: totals over [from, to) and one point per UTC day", async () => {
    const body = okJson<Record<string, unknown>>(
      await metrics(m, "?from=2026-03-01T00:00:00Z&to=2026-03-03T18:00:00Z"),
    );
    assert.deepEqual(body, {
      user_id: m.userId,
      ...counters({
        verifications: 10,
        tasks: 2,
        // Requested: realtime a admin c temp not-an-email f g, jobs a b "C@X.TEST" d a e →
        // 10 addresses ("C@X.TEST" and c@x.test are one; batch results repeat their jobs).
        unique: 10,
        jobs: [1, 1, 3, 1],
        statuses: [5, 1, 1, 1, 1, 1],
        // is_catchall: e (catchall) and b (unknown on a catch-all domain).
        catchall: 2,
        role: 1,
        disposable: 1,
        free: 2,
      }),
      // Newest of realtime created_at (g, 03-03 13:00) and job created_at (T2, 03-02 23:30).
      last_verification_requested_at: "2026-03-03T13:00:00.000Z",
      // Newest validated_at (f, 03-03 12:00); g was created later but validated 03-01.
      last_verification_completed_at: "2026-03-03T12:00:00.000Z",
      series: [
        {
          date: "2026-03-01",
          // a(batch) a c admin; jobs a b C d; T1.
          ...counters({
            verifications: 4,
            tasks: 1,
            unique: 5,
            jobs: [1, 0, 2, 1],
            statuses: [4, 0, 0, 0, 0, 0],
            catchall: 0,
            role: 1,
            disposable: 0,
            free: 1,
          }),
        },
        {
          date: "2026-03-02",
          // b(batch) temp not-an-email; jobs a e; T2. b was requested 03-01: not unique here.
          ...counters({
            verifications: 3,
            tasks: 1,
            unique: 4,
            jobs: [0, 1, 1, 0],
            statuses: [0, 0, 0, 1, 1, 1],
            catchall: 1,
            role: 0,
            disposable: 1,
            free: 0,
          }),
        },
        {
          date: "2026-03-03",
          // e(batch) f g; e was requested 03-02.
          ...counters({
            verifications: 3,
            tasks: 0,
            unique: 2,
            jobs: [0, 0, 0, 0],
            statuses: [1, 1, 1, 0, 0, 0],
            catchall: 1,
            role: 0,
            disposable: 0,
            free: 1,
          }),
        },
      ],
    });
  });

  test("without from/to: the whole history, and no series", async () => {
    const body = okJson<Record<string, unknown>>(await metrics(m));
    assert.deepEqual(body, {
      user_id: m.userId,
      ...counters({
        verifications: 12,
        tasks: 3,
        unique: 12,
        jobs: [1, 1, 4, 1],
        statuses: [7, 1, 1, 1, 1, 1],
        catchall: 2,
        role: 1,
        disposable: 1,
        free: 2,
      }),
      last_verification_requested_at: "2026-03-03T19:00:00.000Z",
      last_verification_completed_at: "2026-03-03T19:00:00.000Z",
    });
  });

  test("only from, or only to: counters bounded on that side, no series; a row at the instant is from's", async () => {
    type Body = ReturnType<typeof counters> & { series?: unknown };
    // late@ was verified at exactly this instant: [at, ∞) has it, (−∞, at) does not.
    const at = "2026-03-03T19:00:00Z";
    const since = okJson<Body>(await metrics(m, `?from=${at}`));
    const before = okJson<Body>(await metrics(m, `?to=${at}`));
    const whole = okJson<Body>(await metrics(m));
    assert.equal("series" in since, false);
    assert.equal("series" in before, false);
    assert.equal(since.total_verifications, 1);
    assert.equal(since.verification_status.valid, 1);
    for (const pick of [
      (c: Body) => c.total_verifications,
      (c: Body) => c.total_tasks,
      (c: Body) => c.job_status.completed + c.job_status.pending + c.job_status.failed,
      (c: Body) => c.verification_status.valid,
      (c: Body) => c.total_free_provider_emails,
    ])
      assert.equal(pick(since) + pick(before), pick(whole), pick.toString());
    // One bound is not a series' range: no 90-day limit applies to it.
    const ancient = okJson<Body>(await metrics(m, "?from=2000-01-01T00:00:00Z"));
    assert.deepEqual(ancient, whole);
  });

  test("additive counters of the series sum to the totals; unique addresses do not", async () => {
    type Body = ReturnType<typeof counters> & { series: Array<ReturnType<typeof counters>> };
    const body = okJson<Body>(await metrics(m, "?from=2026-03-01T00:00:00Z&to=2026-03-03T18:00:00Z"));
    const sum = (pick: (c: ReturnType<typeof counters>) => number) =>
      body.series.reduce((n, p) => n + pick(p), 0);
    assert.equal(
      sum((c) => c.total_verifications),
      body.total_verifications,
    );
    assert.equal(
      sum((c) => c.total_tasks),
      body.total_tasks,
    );
    assert.equal(
      sum((c) => c.job_status.completed),
      body.job_status.completed,
    );
    assert.equal(
      sum((c) => c.verification_status.valid),
      body.verification_status.valid,
    );
    assert.equal(
      sum((c) => c.total_catchall),
      body.total_catchall,
    );
    assert.equal(
      sum((c) => c.total_free_provider_emails),
      body.total_free_provider_emails,
    );
    // a is requested on 03-01 and again on 03-02.
    assert.equal(
      sum((c) => c.unique_email_addresses),
      11,
    );
    assert.equal(body.unique_email_addresses, 10);
  });

  test("a range with an offset and a partial first day", async () => {
    // From 2026-03-02T00:05Z: leaves out temp@ (00:00) but keeps b's result (00:10); b itself
    // was requested on 03-01, so the only address requested here is not-an-email.
    const body = okJson<Record<string, unknown>>(
      await metrics(m, "?from=2026-03-01T19:05:00-05:00&to=2026-03-02T12:00:00Z"),
    );
    assert.deepEqual(body, {
      user_id: m.userId,
      ...counters({
        verifications: 2,
        tasks: 0,
        unique: 1,
        jobs: [0, 0, 0, 0],
        statuses: [0, 0, 0, 1, 0, 1],
        catchall: 1,
        role: 0,
        disposable: 0,
        free: 0,
      }),
      last_verification_requested_at: "2026-03-02T11:00:00.000Z",
      last_verification_completed_at: "2026-03-02T11:00:00.000Z",
      series: [
        {
          date: "2026-03-02",
          ...counters({
            verifications: 2,
            tasks: 0,
            unique: 1,
            jobs: [0, 0, 0, 0],
            statuses: [0, 0, 0, 1, 0, 1],
            catchall: 1,
            role: 0,
            disposable: 0,
            free: 0,
          }),
        },
      ],
    });
  });

  test("a user with no activity: zeros, null timestamps, zero days", async () => {
    const fresh = await ctx.createUser(0);
    const zero = counters({
      verifications: 0,
      tasks: 0,
      unique: 0,
      jobs: [0, 0, 0, 0],
      statuses: [0, 0, 0, 0, 0, 0],
      catchall: 0,
      role: 0,
      disposable: 0,
      free: 0,
    });
    assert.deepEqual(okJson(await metrics(fresh)), {
      user_id: fresh.userId,
      ...zero,
      last_verification_requested_at: null,
      last_verification_completed_at: null,
    });
    assert.deepEqual(okJson(await metrics(fresh, "?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z")), {
      user_id: fresh.userId,
      ...zero,
      last_verification_requested_at: null,
      last_verification_completed_at: null,
      series: [
        { date: "2026-03-01", ...zero },
        { date: "2026-03-02", ...zero },
      ],
    });
  });

  test("a session token (JWT) → 401 UNAUTHORIZED: this endpoint takes an API key", async () => {
    const session = await ctx.services.sessions.open(m.userId, m.apiKeyId);
    assert.ok(session);
    const res = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/metrics/verifications",
      headers: ctx.bearer(session.token),
    });
    assertError(res, 401, "UNAUTHORIZED", null);
  });

  test("no credentials → 401 UNAUTHORIZED", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/api/v1/metrics/verifications" });
    assertError(res, 401, "UNAUTHORIZED", null);
  });

  test("X-API-Key works like Bearer", async () => {
    const res = await ctx.app.inject({
      method: "GET",
      url: "/api/v1/metrics/verifications",
      headers: { "x-api-key": m.apiKey },
    });
    assert.equal(okJson<{ total_verifications: number }>(res).total_verifications, 12);
  });
});
