// GET /api/v1/credits/usage and GET /api/v1/credits/usage/api-keys over a known ledger history:
// grants, realtime charges from two keys and the frontend, a deleted key, another user's key id,
// legacy rows without source, malformed and null key ids, a task reservation and its refund,
// rows on both sides of midnight UTC and exactly on the range bounds, over three days.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sumCreditUsage } from "../../../src/db/queries/reports.ts";
import { newId } from "../../../src/lib/ids.ts";
import { windowOf } from "../../../src/reports/date-range.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";
import { okJson, point, totals, writeLedger, type LedgerRow } from "./history.ts";

let ctx: TestContext;
const clock = new ManualClock("2026-03-05T12:00:00Z");
let history: Awaited<ReturnType<typeof seedHistory>>;
before(async () => {
  ctx = await createTestContext({ clock });
  history = await seedHistory();
});
after(async () => {
  await ctx.close();
});

const get = (user: TestUser, url: string) =>
  ctx.app.inject({ method: "GET", url, headers: ctx.bearer(user.apiKey) });

interface UsageBody {
  user_id: string;
  from: string;
  to: string;
  totals: ReturnType<typeof totals>;
  series: Array<ReturnType<typeof point>>;
}

interface KeysBody {
  user_id: string;
  from: string;
  to: string;
  keys: Array<Record<string, unknown>>;
}

/**
 * The history of one user. The range under test is [2026-03-01T06:00Z, 2026-03-03T18:00Z),
 * requested as from=2026-03-01T07:00:00+01:00.
 */
async function seedHistory() {
  const u = await ctx.createUser(0); // its "default" key is K1 (purpose custom)
  const k1 = u.apiKeyId;
  const k2 = (await ctx.services.apiKeys.create(u.userId, "sheets", "google sheets")).record.id;
  const deleted = (await ctx.services.apiKeys.create(u.userId, "gone", "zapier")).record.id;
  await ctx.db.query("delete from api_keys where id = $1", [deleted]);
  const other = await ctx.createUser(0);
  const otherKey = other.apiKeyId;
  const task = newId();
  const key = (id: string) => ({ source: "api_key", api_key_id: id, api_key_purpose: "custom" });
  const rows: LedgerRow[] = [
    { amount: 1000, at: "2026-03-01T05:59:59.999Z", metadata: {} }, // before `from`: out
    { amount: 500, at: "2026-03-01T06:00:00.000Z", metadata: {} }, // exactly `from`: in (legacy grant)
    { amount: 2, at: "2026-03-01T07:00:00Z", metadata: { source: "frontend" } },
    { amount: -1, at: "2026-03-01T10:00:00Z", metadata: key(k1) },
    { amount: -1, at: "2026-03-01T23:59:59.999Z", metadata: key(k2) },
    { amount: -1, at: "2026-03-02T00:00:00.000Z", metadata: key(k1) },
    { amount: -1, at: "2026-03-02T08:00:00Z", metadata: { source: "frontend" } },
    { amount: -3, at: "2026-03-02T09:00:00Z", metadata: { source: "frontend", task_id: newId() } },
    { amount: -10, at: "2026-03-02T12:00:00Z", metadata: { ...key(k1), task_id: task } }, // task reservation
    { amount: -1, at: "2026-03-02T13:00:00Z", metadata: key(deleted) },
    { amount: -1, at: "2026-03-02T14:00:00Z", metadata: key(otherKey) }, // another user's key id
    { amount: 4, at: "2026-03-03T01:00:00Z", metadata: { ...key(k1), task_id: task } }, // its refund
    { amount: -2, at: "2026-03-03T02:00:00Z", metadata: {} }, // legacy deduction
    { amount: -1, at: "2026-03-03T03:00:00Z", metadata: { source: "api_key", api_key_id: "not-a-uuid" } },
    { amount: -1, at: "2026-03-03T04:00:00Z", metadata: { source: "api_key", api_key_id: null } },
    { amount: -1, at: "2026-03-03T05:00:00Z", metadata: { source: "api_key", api_key_id: k2.toUpperCase() } },
    { amount: -1, at: "2026-03-03T17:59:59.999Z", metadata: key(k2) },
    { amount: -1, at: "2026-03-03T18:00:00.000Z", metadata: key(k1) }, // exactly `to`: out
    { amount: -5, at: "2026-03-03T20:00:00Z", metadata: { source: "frontend" } }, // after `to`: out
  ];
  await writeLedger(ctx.db, u.userId, rows);
  // The other user's own activity in the same days must never show up in u's reports.
  await writeLedger(ctx.db, other.userId, [
    { amount: 50, at: "2026-03-01T00:00:00Z", metadata: {} },
    { amount: -7, at: "2026-03-02T10:00:00Z", metadata: key(otherKey) },
    { amount: -9, at: "2026-03-02T11:00:00Z", metadata: { source: "frontend" } },
  ]);
  await ctx.services.apiKeys.deactivate(u.userId, k2);
  return { u, k1, k2, deleted, other, otherKey };
}

const RANGE = "from=2026-03-01T07:00:00%2B01:00&to=2026-03-03T18:00:00Z";

describe("GET /api/v1/credits/usage", () => {
  test("source=all (the default): every row of [from, to), per UTC day, from and to echoed in UTC", async () => {
    const body = okJson<UsageBody>(await get(history.u, `/api/v1/credits/usage?${RANGE}`));
    assert.deepEqual(body, {
      user_id: history.u.userId,
      from: "2026-03-01T06:00:00.000Z",
      to: "2026-03-03T18:00:00.000Z",
      totals: totals(25, 506),
      series: [point("2026-03-01", 2, 502), point("2026-03-02", 17, 0), point("2026-03-03", 6, 4)],
    });
  });

  test("source=all given explicitly is the same report", async () => {
    const implicit = okJson<UsageBody>(await get(history.u, `/api/v1/credits/usage?${RANGE}`));
    const explicit = okJson<UsageBody>(await get(history.u, `/api/v1/credits/usage?${RANGE}&source=all`));
    assert.deepEqual(explicit, implicit);
  });

  test("source=frontend: only rows whose metadata.source is frontend", async () => {
    const body = okJson<UsageBody>(await get(history.u, `/api/v1/credits/usage?${RANGE}&source=frontend`));
    assert.deepEqual(body.totals, totals(4, 2));
    assert.deepEqual(body.series, [
      point("2026-03-01", 0, 2),
      point("2026-03-02", 4, 0),
      point("2026-03-03", 0, 0),
    ]);
  });

  test("source=api_key: only rows whose metadata.source is api_key (refunds included as grants)", async () => {
    const body = okJson<UsageBody>(await get(history.u, `/api/v1/credits/usage?${RANGE}&source=api_key`));
    assert.deepEqual(body.totals, totals(19, 4));
    assert.deepEqual(body.series, [
      point("2026-03-01", 2, 0),
      point("2026-03-02", 13, 0),
      point("2026-03-03", 4, 4),
    ]);
  });

  test("the whole history agrees with the ledger to the credit: used − granted = −balance change", async () => {
    // All of u's rows fall in 2026-03-01T00:00Z … 2026-03-04T00:00Z.
    const body = okJson<UsageBody>(
      await get(history.u, "/api/v1/credits/usage?from=2026-03-01T00:00:00Z&to=2026-03-04T00:00:00Z"),
    );
    const balance = okJson<{ balance: number }>(await get(history.u, "/api/v1/credits/balance")).balance;
    assert.deepEqual(body.totals, totals(31, 1506));
    assert.equal(balance, 1475);
    assert.equal(-body.totals.net_credits, balance);
    assert.deepEqual(body.series, [
      point("2026-03-01", 2, 1502),
      point("2026-03-02", 17, 0),
      point("2026-03-03", 12, 4),
      point("2026-03-04", 0, 0),
    ]);
  });

  test("adjacent ranges tile: [a, b) + [b, c) = [a, c), nothing counted twice at b", async () => {
    const whole = okJson<UsageBody>(await get(history.u, `/api/v1/credits/usage?${RANGE}`));
    const first = okJson<UsageBody>(
      await get(history.u, "/api/v1/credits/usage?from=2026-03-01T06:00:00Z&to=2026-03-02T00:00:00Z"),
    );
    const second = okJson<UsageBody>(
      await get(history.u, "/api/v1/credits/usage?from=2026-03-02T00:00:00Z&to=2026-03-03T18:00:00Z"),
    );
    assert.deepEqual(first.totals, totals(2, 502));
    assert.deepEqual(second.totals, totals(23, 4));
    // The 2026-03-02T00:00:00.000Z charge belongs to the second range only.
    assert.deepEqual(first.series, [point("2026-03-01", 2, 502), point("2026-03-02", 0, 0)]);
    assert.equal(first.totals.used_credits + second.totals.used_credits, whole.totals.used_credits);
    assert.equal(first.totals.granted_credits + second.totals.granted_credits, whole.totals.granted_credits);
  });

  test("a user with no rows gets every day with zeros", async () => {
    const fresh = await ctx.createUser(0);
    const body = okJson<UsageBody>(
      await get(fresh, "/api/v1/credits/usage?from=2026-02-27T12:00:00Z&to=2026-03-01T00:00:00Z"),
    );
    assert.deepEqual(body, {
      user_id: fresh.userId,
      from: "2026-02-27T12:00:00.000Z",
      to: "2026-03-01T00:00:00.000Z",
      totals: totals(0, 0),
      series: [point("2026-02-27", 0, 0), point("2026-02-28", 0, 0), point("2026-03-01", 0, 0)],
    });
  });

  test("an empty range (from = to) has its one day, with zeros", async () => {
    const body = okJson<UsageBody>(
      await get(history.u, "/api/v1/credits/usage?from=2026-03-01T10:00:00Z&to=2026-03-01T10:00:00Z"),
    );
    assert.deepEqual(body.totals, totals(0, 0));
    assert.deepEqual(body.series, [point("2026-03-01", 0, 0)]);
  });

  test("a range of exactly 90 days is accepted and has 91 points", async () => {
    const body = okJson<UsageBody>(
      await get(history.u, "/api/v1/credits/usage?from=2026-01-01T00:00:00Z&to=2026-04-01T00:00:00Z"),
    );
    assert.equal(body.series.length, 91);
    assert.equal(body.series[0]!.date, "2026-01-01");
    assert.equal(body.series[90]!.date, "2026-04-01");
    assert.deepEqual(body.totals, totals(31, 1506));
    assert.deepEqual(
      body.series.filter((p) => p.used_credits !== 0 || p.granted_credits !== 0),
      [point("2026-03-01", 2, 1502), point("2026-03-02", 17, 0), point("2026-03-03", 12, 4)],
    );
  });

  test("a session token (JWT) sees the same report as the user's API key", async () => {
    const session = await ctx.services.sessions.open(history.u.userId, history.u.apiKeyId);
    assert.ok(session);
    const res = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/credits/usage?${RANGE}`,
      headers: ctx.bearer(session.token),
    });
    assert.deepEqual(okJson<UsageBody>(res).totals, totals(25, 506));
  });
});

describe("GET /api/v1/credits/usage/api-keys", () => {
  const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

  test("one bucket per key id; deleted and foreign key ids without name; the unknown bucket last", async () => {
    const { u, k1, k2, deleted, otherKey } = history;
    const body = okJson<KeysBody>(await get(u, `/api/v1/credits/usage/api-keys?${RANGE}`));
    const known = [
      {
        api_key_id: k1,
        api_key_name: "default",
        api_key_purpose: "custom",
        is_active: true,
        is_unknown: false,
        totals: totals(12, 4),
        series: [point("2026-03-01", 1, 0), point("2026-03-02", 11, 0), point("2026-03-03", 0, 4)],
      },
      {
        // Deactivated since, still named; the upper-case spelling of its id is the same key.
        api_key_id: k2,
        api_key_name: "sheets",
        api_key_purpose: "google sheets",
        is_active: false,
        is_unknown: false,
        totals: totals(3, 0),
        series: [point("2026-03-01", 1, 0), point("2026-03-02", 0, 0), point("2026-03-03", 2, 0)],
      },
      {
        // No longer in api_keys: its id, no name, purpose or active flag.
        api_key_id: deleted,
        is_unknown: false,
        totals: totals(1, 0),
        series: [point("2026-03-01", 0, 0), point("2026-03-02", 1, 0), point("2026-03-03", 0, 0)],
      },
      {
        // Exists, but belongs to another user: nothing about it is revealed.
        api_key_id: otherKey,
        is_unknown: false,
        totals: totals(1, 0),
        series: [point("2026-03-01", 0, 0), point("2026-03-02", 1, 0), point("2026-03-03", 0, 0)],
      },
    ].sort((a, b) => byId(a.api_key_id, b.api_key_id));
    assert.deepEqual(body, {
      user_id: u.userId,
      from: "2026-03-01T06:00:00.000Z",
      to: "2026-03-03T18:00:00.000Z",
      keys: [
        ...known,
        {
          // Legacy rows without source (a grant and a deduction), "not-a-uuid" and a null id.
          is_unknown: true,
          totals: totals(4, 500),
          series: [point("2026-03-01", 0, 500), point("2026-03-02", 0, 0), point("2026-03-03", 4, 0)],
        },
      ],
    });
  });

  test("the buckets add up to the api_key rows plus the rows without source", async () => {
    const keys = okJson<KeysBody>(await get(history.u, `/api/v1/credits/usage/api-keys?${RANGE}`)).keys;
    const sum = (field: "used_credits" | "granted_credits") =>
      keys.reduce((n, k) => n + (k.totals as Record<string, number>)[field]!, 0);
    const all = okJson<UsageBody>(await get(history.u, `/api/v1/credits/usage?${RANGE}`)).totals;
    const frontend = okJson<UsageBody>(
      await get(history.u, `/api/v1/credits/usage?${RANGE}&source=frontend`),
    ).totals;
    assert.equal(sum("used_credits"), all.used_credits - frontend.used_credits);
    assert.equal(sum("granted_credits"), all.granted_credits - frontend.granted_credits);
  });

  test("api_key_id keeps only that key's bucket (any letter case)", async () => {
    const { u, k2 } = history;
    for (const id of [k2, k2.toUpperCase()]) {
      const body = okJson<KeysBody>(await get(u, `/api/v1/credits/usage/api-keys?${RANGE}&api_key_id=${id}`));
      assert.deepEqual(body.keys, [
        {
          api_key_id: k2,
          api_key_name: "sheets",
          api_key_purpose: "google sheets",
          is_active: false,
          is_unknown: false,
          totals: totals(3, 0),
          series: [point("2026-03-01", 1, 0), point("2026-03-02", 0, 0), point("2026-03-03", 2, 0)],
        },
      ]);
    }
  });

  test("api_key_id of a deleted key still finds its rows", async () => {
    const body = okJson<KeysBody>(
      await get(history.u, `/api/v1/credits/usage/api-keys?${RANGE}&api_key_id=${history.deleted}`),
    );
    assert.deepEqual(
      body.keys.map((k) => [k.api_key_id, k.totals]),
      [[history.deleted, totals(1, 0)]],
    );
  });

  test("api_key_id with no rows in the range → no bucket", async () => {
    const body = okJson<KeysBody>(
      await get(history.u, `/api/v1/credits/usage/api-keys?${RANGE}&api_key_id=${newId()}`),
    );
    assert.deepEqual(body.keys, []);
  });

  test("another user's report is its own: its key named, u's rows absent", async () => {
    const { other, otherKey } = history;
    const body = okJson<KeysBody>(await get(other, `/api/v1/credits/usage/api-keys?${RANGE}`));
    assert.deepEqual(body.keys, [
      {
        api_key_id: otherKey,
        api_key_name: "default",
        api_key_purpose: "custom",
        is_active: true,
        is_unknown: false,
        totals: totals(7, 0),
        series: [point("2026-03-01", 0, 0), point("2026-03-02", 7, 0), point("2026-03-03", 0, 0)],
      },
    ]);
  });

  test("a user whose ledger has only frontend rows has no buckets", async () => {
    const fresh = await ctx.createUser(0);
    await writeLedger(ctx.db, fresh.userId, [
      { amount: 5, at: "2026-03-01T09:00:00Z", metadata: { source: "frontend" } },
      { amount: -2, at: "2026-03-01T10:00:00Z", metadata: { source: "frontend" } },
    ]);
    const body = okJson<KeysBody>(await get(fresh, `/api/v1/credits/usage/api-keys?${RANGE}`));
    assert.deepEqual(body.keys, []);
  });
});

describe("UTC days whatever the database session's time zone", () => {
  test("a session at UTC+14 (and one at UTC−10) buckets the same rows into the same UTC days", async () => {
    const window = windowOf({ from: new Date("2026-03-01T06:00:00Z"), to: new Date("2026-03-03T18:00:00Z") });
    for (const zone of ["Pacific/Kiritimati", "Pacific/Honolulu"]) {
      const grouped = await ctx.db.transaction(async (tx) => {
        await tx.query(`set local time zone '${zone}'`);
        return sumCreditUsage(tx, history.u.userId, window, "all");
      });
      assert.deepEqual(grouped.totals, { used: 25, granted: 506 }, zone);
      assert.deepEqual(
        Object.fromEntries(grouped.byDay),
        {
          "2026-03-01": { used: 2, granted: 502 },
          "2026-03-02": { used: 17, granted: 0 },
          "2026-03-03": { used: 6, granted: 4 },
        },
        zone,
      );
    }
  });
});
