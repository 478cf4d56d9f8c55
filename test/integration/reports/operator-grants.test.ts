// Spec rule 4: operator grants are labelled. Every way an operator grants credits
// writes metadata.source = "operator" (users create's opening credits, credits grant, the
// loopback admin API behind both while `serve` runs, the ADMIN_TOKEN console), and the usage
// reports count those rows under source=operator, never in the per-key report's unknown bucket.
// Legacy rows without a source are reported as before. Migration 0016 labels the grants the two
// commands wrote with `{}` before, and nothing else. The CLI itself: cli/operator-grants.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Database } from "../../../src/db/client.ts";
import { loadMigrations, migrate } from "../../../src/db/migrate.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";
import { openEmptyDatabase } from "../../support/test-db.ts";
import { okJson, point, totals, writeLedger } from "./history.ts";

const ADMIN_TOKEN = "loopback-admin-token-0123456789";
const CONSOLE_TOKEN = "operator-console-token-0123456789";
const clock = new ManualClock("2026-04-10T12:00:00Z");
let ctx: TestContext;
before(async () => {
  ctx = await createTestContext({ clock, adminToken: ADMIN_TOKEN, env: { ADMIN_TOKEN: CONSOLE_TOKEN } });
});
after(async () => {
  await ctx.close();
});

interface LedgerRow {
  type: string;
  amount: number;
  reason: string | null;
  metadata: Record<string, unknown>;
}

async function ledgerOf(userId: string): Promise<LedgerRow[]> {
  const { rows } = await ctx.db.query<LedgerRow>(
    `select type, amount::int as amount, reason, metadata from credit_transactions
      where user_id = $1 order by created_at, id`,
    [userId],
  );
  return rows;
}

const get = (user: TestUser, url: string) =>
  ctx.app.inject({ method: "GET", url, headers: ctx.bearer(user.apiKey) });

const RANGE = "from=2026-04-10T00:00:00Z&to=2026-04-11T00:00:00Z";
const usage = async (user: TestUser, source: string) =>
  okJson<{ totals: ReturnType<typeof totals>; series: Array<ReturnType<typeof point>> }>(
    await get(user, `/api/v1/credits/usage?${RANGE}&source=${source}`),
  );

describe("rule 4: every operator grant carries metadata.source = operator", () => {
  let user: TestUser;
  before(async () => {
    clock.set("2026-04-10T12:00:00Z");
    user = await ctx.createUser(100); // users.create: what `users create --credits 100` runs
    clock.set("2026-04-10T13:00:00Z");
    await ctx.services.credits.grant(user.userId, 5, "promo"); // what `credits grant` runs directly
    clock.set("2026-04-10T14:00:00Z");
    const loopback = await ctx.app.inject({
      method: "POST",
      url: "/admin/v1/credits/grant", // what `credits grant` calls while `serve` owns DATA_DIR
      headers: { "x-admin-token": ADMIN_TOKEN },
      payload: { user_id: user.userId, amount: 7, reason: "while serving" },
    });
    assert.equal(loopback.statusCode, 201, loopback.body);
    clock.set("2026-04-10T15:00:00Z");
    const viaConsole = await ctx.app.inject({
      method: "POST",
      url: `/api/v1/operator/users/${user.userId}/grants`,
      headers: ctx.bearer(CONSOLE_TOKEN),
      payload: { amount: 11, reason: "goodwill" },
    });
    assert.equal(viaConsole.statusCode, 201, viaConsole.body);
    // The user's own activity, and two rows without source written the way legacy rows look.
    const key = { source: "api_key", api_key_id: user.apiKeyId, api_key_purpose: "custom" };
    await writeLedger(ctx.db, user.userId, [
      { amount: -2, at: "2026-04-10T16:00:00Z", metadata: key },
      { amount: -1, at: "2026-04-10T17:00:00Z", metadata: { source: "frontend" } },
      { amount: -4, at: "2026-04-10T18:00:00Z", metadata: {} },
      { amount: 6, at: "2026-04-10T19:00:00Z", metadata: {} },
    ]);
  });

  test("the ledger rows of users create, credits grant (direct and through the admin API) and the console", async () => {
    const operator = { source: "operator" };
    assert.deepEqual((await ledgerOf(user.userId)).slice(0, 4), [
      { type: "grant", amount: 100, reason: "initial_grant", metadata: operator },
      { type: "grant", amount: 5, reason: "promo", metadata: operator },
      { type: "grant", amount: 7, reason: "while serving", metadata: operator },
      { type: "grant", amount: 11, reason: "goodwill", metadata: operator },
    ]);
    // The API shows the label too (metadata.source, CreditTransaction).
    const listed = okJson<{ transactions: Array<{ reason: string; metadata: { source?: string } }> }>(
      await get(user, "/api/v1/credits/transactions?limit=100"),
    );
    const opening = listed.transactions.find((t) => t.reason === "initial_grant");
    assert.equal(opening?.metadata.source, "operator");
  });

  test("a user created through the admin API (`users create` while serving) gets a labelled opening grant", async () => {
    const res = await ctx.app.inject({
      method: "POST",
      url: "/admin/v1/users",
      headers: { "x-admin-token": ADMIN_TOKEN },
      payload: { credits: 3, email: null },
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(await ledgerOf(res.json<{ user_id: string }>().user_id), [
      { type: "grant", amount: 3, reason: "initial_grant", metadata: { source: "operator" } },
    ]);
  });

  test("GET /credits/usage?source=operator: exactly the operator grants, in their own bucket", async () => {
    const body = await usage(user, "operator");
    assert.deepEqual(body.totals, totals(0, 123));
    assert.deepEqual(body.series, [point("2026-04-10", 0, 123), point("2026-04-11", 0, 0)]);
  });

  test("all = frontend + api_key + operator + the rows without source (legacy, reported as before)", async () => {
    const all = await usage(user, "all");
    const frontend = await usage(user, "frontend");
    const apiKey = await usage(user, "api_key");
    const operator = await usage(user, "operator");
    assert.deepEqual(all.totals, totals(7, 129));
    assert.deepEqual(frontend.totals, totals(1, 0));
    assert.deepEqual(apiKey.totals, totals(2, 0));
    assert.deepEqual(operator.totals, totals(0, 123));
    const legacy = totals(4, 6);
    assert.equal(
      all.totals.used_credits,
      frontend.totals.used_credits +
        apiKey.totals.used_credits +
        operator.totals.used_credits +
        legacy.used_credits,
    );
    assert.equal(
      all.totals.granted_credits,
      frontend.totals.granted_credits +
        apiKey.totals.granted_credits +
        operator.totals.granted_credits +
        legacy.granted_credits,
    );
    const balance = okJson<{ balance: number }>(await get(user, "/api/v1/credits/balance")).balance;
    assert.equal(-all.totals.net_credits, balance, "the whole history: −net = balance");
  });

  test("the per-key report leaves operator grants out: the unknown bucket holds only the legacy rows", async () => {
    const body = okJson<{ keys: Array<Record<string, unknown>> }>(
      await get(user, `/api/v1/credits/usage/api-keys?${RANGE}`),
    );
    assert.deepEqual(
      body.keys.map((k) => [k.is_unknown, k.api_key_id ?? null, k.totals]),
      [
        [false, user.apiKeyId, totals(2, 0)],
        [true, null, totals(4, 6)],
      ],
    );
  });

  test("source=operator is a documented filter value; other spellings stay a 400", async () => {
    for (const bad of ["OPERATOR", "operators", "admin"]) {
      const res = await get(user, `/api/v1/credits/usage?${RANGE}&source=${bad}`);
      assert.equal(res.statusCode, 400, `${bad}: ${res.body}`);
      assert.deepEqual(res.json<{ error: { details: unknown } }>().error.details, [
        { field: "source", reason: "must be equal to one of the allowed values" },
      ]);
    }
    const doc = (await ctx.app.inject({ method: "GET", url: "/openapi.json" })).json<{
      paths: Record<
        string,
        { get: { parameters: Array<{ name: string; schema: Record<string, unknown> }> } }
      >;
      components?: { schemas?: Record<string, { enum?: string[] }> };
    }>();
    const param = doc.paths["/api/v1/credits/usage"]!.get.parameters.find((p) => p.name === "source");
    // Inline, or a named enum component.
    const ref = typeof param?.schema.$ref === "string" ? param.schema.$ref.split("/").pop()! : null;
    const values = ref ? doc.components?.schemas?.[ref]?.enum : (param?.schema.enum as string[] | undefined);
    assert.deepEqual(values, ["all", "frontend", "api_key", "operator"], JSON.stringify(param));
  });
});

describe("migration 0016: the grants written with `{}` by users create / credits grant are labelled", () => {
  /** A database migrated up to 0015, then 0016 on its own: PGlite fresh, or a PostgreSQL schema. */
  const openBefore0016 = () => openEmptyDatabase("m16");

  test("operator grants → source operator; everything else, deductions and keyed grants included, untouched", async () => {
    const all = await loadMigrations();
    const { db, close } = await openBefore0016();
    try {
      await migrate(
        db,
        all.filter((m) => m.version < 16),
      );
      const userId = "5f0c1d6e-0000-4000-8000-000000000016";
      await db.query("insert into users (id, balance, webhook_secret) values ($1, 1000, 'whsec_x')", [
        userId,
      ]);
      // As the ledger looked before 0016 (balance_after is not what this test is about).
      const rows: Array<[string, string, number, string, string, string | null]> = [
        ["initial", "grant", 100, "initial_grant", "{}", null], // users create --credits
        ["promo", "grant", 5, "promo", "{}", null], // credits grant --reason promo
        ["console", "grant", 11, "goodwill", '{"source":"operator"}', null],
        ["refund", "grant", 3, "task_unknown_refund", '{"source":"api_key","task_id":"t"}', "task:t:refund"],
        ["keyed", "grant", 2, "top-up", "{}", "k-1"], // never written by an operator path
        ["noted", "grant", 4, "import", '{"note":"x"}', null], // has metadata, no source: legacy
        ["legacy-deduction", "deduction", -6, "verification", "{}", null],
        ["charge", "deduction", -1, "verification", '{"source":"frontend"}', "v:1"],
      ];
      const ids = new Map<string, string>();
      for (const [name, type, amount, reason, metadata, key] of rows) {
        const id = `0000${String(ids.size).padStart(4, "0")}-0000-4000-8000-000000000000`;
        ids.set(name, id);
        await db.query(
          `insert into credit_transactions (id, user_id, type, amount, balance_after, reason, metadata, idempotency_key)
           values ($1, $2, $3, $4, 500, $5, $6::jsonb, $7)`,
          [id, userId, type, amount, reason, metadata, key],
        );
      }
      const before = await metadataById(db);

      assert.deepEqual(
        await migrate(
          db,
          all.filter((m) => m.version === 16),
        ),
        [16],
      );
      const after = await metadataById(db);
      const changed = [...ids].filter(
        ([, id]) => JSON.stringify(after.get(id)) !== JSON.stringify(before.get(id)),
      );
      assert.deepEqual(
        changed.map(([name]) => name),
        ["initial", "promo"],
      );
      assert.deepEqual(after.get(ids.get("initial")!), { source: "operator" });
      assert.deepEqual(after.get(ids.get("promo")!), { source: "operator" });
      const sums = await db.query<{ n: number; total: number }>(
        "select count(*)::int as n, sum(amount)::int as total from credit_transactions",
      );
      assert.deepEqual(sums.rows[0], { n: rows.length, total: 118 }, "no row added, removed or re-priced");
    } finally {
      await close();
    }
  });
});

async function metadataById(db: Database): Promise<Map<string, unknown>> {
  const { rows } = await db.query<{ id: string; metadata: unknown }>(
    "select id, metadata from credit_transactions",
  );
  return new Map(rows.map((r) => [r.id, r.metadata]));
}
