// What the dashboard's task page asks beyond the task itself: its addresses searched by text
// (GET /api/v1/tasks/{id}/jobs?q=) and its cost, from the ledger rows of that task
// (GET /api/v1/credits/transactions?task_id=). Tasks are created at a clock in 2099 with no
// worker running, so their jobs stay pending and the ledger holds exactly what the test made.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";

const IDLE = "2099-01-05T10:00:00.000Z";

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext({ clock: new ManualClock(IDLE) });
});

after(async () => {
  await ctx?.close();
});

const get = (who: TestUser, url: string) =>
  ctx.app.inject({ method: "GET", url, headers: ctx.bearer(who.apiKey) });

async function newTask(who: TestUser, emails: string[]): Promise<string> {
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(who.apiKey),
    payload: { emails },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: string }>().id;
}

interface JobList {
  jobs: Array<{ email_address: string }>;
  count: number;
}

interface Ledger {
  transactions: Array<{ amount: number; reason?: string; metadata: { task_id?: string } }>;
  total: number;
}

describe("GET /api/v1/tasks/{id}/jobs?q=", () => {
  test("a case-insensitive substring of the address; count is the matching total", async () => {
    const user = await ctx.createUser(10);
    const id = await newTask(user, [
      "ann@acme.test",
      "bob@acme.test",
      "anna@other.test",
      "joann@shop.test",
      "a_b@acme.test",
    ]);
    const search = async (q: string, extra = "") => {
      const res = await get(user, `/api/v1/tasks/${id}/jobs?q=${encodeURIComponent(q)}${extra}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<JobList>();
      return { count: body.count, found: body.jobs.map((j) => j.email_address).sort() };
    };
    assert.deepEqual(await search("ANN"), {
      count: 3,
      found: ["ann@acme.test", "anna@other.test", "joann@shop.test"],
    });
    assert.deepEqual(await search("@acme.test"), {
      count: 3,
      found: ["a_b@acme.test", "ann@acme.test", "bob@acme.test"],
    });
    // LIKE's wildcards are plain characters here.
    assert.deepEqual(await search("_"), { count: 1, found: ["a_b@acme.test"] });
    assert.deepEqual(await search("%"), { count: 0, found: [] });
    // With a status filter and a page: count stays the matching total.
    assert.deepEqual(await search("ann", "&status=pending&limit=1"), {
      count: 3,
      found: ["joann@shop.test"],
    });
    assert.deepEqual(await search("ann", "&status=valid"), { count: 0, found: [] });
  });

  test("an empty or over-long q is a 400 naming q; another user's task stays hidden", async () => {
    const user = await ctx.createUser(2);
    const other = await ctx.createUser(2);
    const id = await newTask(user, ["ann@acme.test"]);
    for (const q of ["", "a".repeat(255)]) {
      const res = await get(user, `/api/v1/tasks/${id}/jobs?q=${q}`);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json<{ error: { details: Array<{ field: string }> } }>().error.details[0]!.field, "q");
    }
    const foreign = await get(other, `/api/v1/tasks/${id}/jobs?q=ann`);
    assert.equal(foreign.statusCode, 404, foreign.body);
  });
});

describe("GET /api/v1/credits/transactions?task_id=", () => {
  test("only the task's rows: its reservation and, once cancelled, its refund", async () => {
    const user = await ctx.createUser(10);
    const cancelled = await newTask(user, ["a@acme.test", "b@acme.test", "c@acme.test"]);
    const running = await newTask(user, ["d@acme.test", "e@acme.test"]);
    const cancel = await ctx.app.inject({
      method: "POST",
      url: `/api/v1/tasks/${cancelled}/cancel`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(cancel.statusCode, 200, cancel.body);

    const rowsOf = async (query: string) => {
      const res = await get(user, `/api/v1/credits/transactions${query}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<Ledger>();
    };
    const ofCancelled = await rowsOf(`?task_id=${cancelled}`);
    assert.equal(ofCancelled.total, 2);
    assert.deepEqual(
      ofCancelled.transactions.map((t) => [t.reason, t.amount]),
      [
        ["task_cancelled_refund", 3],
        ["task_reservation", -3],
      ],
    );
    assert.ok(ofCancelled.transactions.every((t) => t.metadata.task_id === cancelled));
    const ofRunning = await rowsOf(`?task_id=${running}&limit=1`);
    assert.equal(ofRunning.total, 1);
    assert.deepEqual(
      ofRunning.transactions.map((t) => [t.reason, t.amount]),
      [["task_reservation", -2]],
    );
    // Without the filter: the opening grant and all three task rows.
    assert.equal((await rowsOf("")).total, 4);
  });

  test("another user's task id finds nothing; a malformed one is a 400", async () => {
    const user = await ctx.createUser(5);
    const other = await ctx.createUser(5);
    const id = await newTask(user, ["a@acme.test"]);
    const foreign = await get(other, `/api/v1/credits/transactions?task_id=${id}`);
    assert.equal(foreign.statusCode, 200, foreign.body);
    assert.deepEqual(foreign.json<Ledger>().transactions, []);
    assert.equal(foreign.json<Ledger>().total, 0);
    const bad = await get(user, "/api/v1/credits/transactions?task_id=not-a-uuid");
    assert.equal(bad.statusCode, 400, bad.body);
    assert.equal(
      bad.json<{ error: { details: Array<{ field: string }> } }>().error.details[0]!.field,
      "task_id",
    );
  });
});
