// did_you_mean and is_free_provider end to end, against the mail-world simulator and
// the test database (PGlite, and PostgreSQL with --pg): realtime answers, the stored row, a cached
// answer, a batch task's jobs and its csv download. The gate: a domain that receives mail never
// gets a suggestion, typo-looking or not; a dead look-alike of a popular domain does.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parse as parseCsv } from "csv-parse/sync";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

let world: MailWorld;
let ctx: TestContext;
let role: WorkerRole;

before(async () => {
  world = await startMailWorld({
    domains: [
      // Popular domains, alive.
      {
        name: "gmail.com",
        hosts: [{ name: "gmail-smtp-in.l.google.com", kind: "google" }],
        mailboxes: ["bob"],
      },
      // A company's domain: two edits from me.com, and it receives mail.
      { name: "acme.com", hosts: [{ name: "mx1.acme.com" }], mailboxes: ["bob"] },
      // A look-alike of outlook.com that receives mail (a typo catcher): never "corrected".
      { name: "outlok.com", hosts: [{ name: "mx.outlok.com" }], catchAll: true },
      // Look-alikes that cannot take mail. gamil.com is not in the zone: NXDOMAIN.
      { name: "yaho.com", dns: "null_mx" },
      { name: "hotmal.com", dns: "no_records" },
    ],
  });
  ctx = await createTestContext({ env: worldEnv(world) });
  role = createWorkerRole(ctx.services);
  role.start();
});

after(async () => {
  await role?.stop(1000);
  await ctx?.close();
  await world?.close();
});

/** address → [status, did_you_mean, is_free_provider] */
const EXPECTED: Record<string, [string, string | null, boolean]> = {
  "bob@gmail.com": ["valid", null, true],
  "bob@acme.com": ["valid", null, false],
  "bob@outlok.com": ["catchall", null, false],
  "bob@gamil.com": ["invalid", "bob@gmail.com", false],
  "ann.lee@yaho.com": ["invalid", "ann.lee@yahoo.com", false],
  "bob@hotmal.com": ["invalid", "bob@hotmail.com", false],
  // On the disposable list (it is also a typo catcher's domain): no DNS, suggestion made.
  "bob@hotmial.com": ["disposable_domain", "bob@hotmail.com", false],
};
const ADDRESSES = Object.keys(EXPECTED);

const verify = (user: TestUser, email: string) =>
  ctx.app.inject({
    method: "POST",
    url: "/api/v1/verify",
    headers: ctx.bearer(user.apiKey),
    payload: { email },
  });

const get = (user: TestUser, url: string) =>
  ctx.app.inject({ method: "GET", url, headers: ctx.bearer(user.apiKey) });

describe("realtime", () => {
  test("each address: status, did_you_mean and is_free_provider, in the answer and the stored row", async () => {
    const user = await ctx.createUser(ADDRESSES.length);
    for (const address of ADDRESSES) {
      const res = await verify(user, address);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<Record<string, unknown>>();
      const [status, suggestion, free] = EXPECTED[address]!;
      assert.deepEqual(
        [body.status, body.did_you_mean, body.is_free_provider],
        [status, suggestion, free],
        address,
      );
      const { rows } = await ctx.db.query<{ did_you_mean: string | null; is_free_provider: boolean }>(
        "select did_you_mean, is_free_provider from email_verifications where id = $1",
        [body.id],
      );
      assert.deepEqual(rows, [{ did_you_mean: suggestion, is_free_provider: free }], address);
    }
  });

  test("a cached answer (a repeat within the cache window) carries both fields", async () => {
    const user = await ctx.createUser(2);
    const typo = (await verify(user, "bob@gamil.com")).json<Record<string, unknown>>();
    const free = (await verify(user, "bob@gmail.com")).json<Record<string, unknown>>();
    const connections = world.counters("gmail-smtp-in.l.google.com").connections;
    const typoAgain = (await verify(user, "Bob@Gamil.com")).json<Record<string, unknown>>();
    const freeAgain = (await verify(user, "bob@gmail.com")).json<Record<string, unknown>>();
    assert.equal(world.counters("gmail-smtp-in.l.google.com").connections, connections, "no SMTP: cached");
    assert.deepEqual(typoAgain, typo);
    assert.deepEqual(freeAgain, free);
    assert.equal(typoAgain.did_you_mean, "bob@gmail.com");
    assert.equal(freeAgain.is_free_provider, true);
  });
});

describe("batch", () => {
  test("a task's jobs and its csv download carry both fields", async () => {
    const user = await ctx.createUser(ADDRESSES.length);
    const created = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/tasks",
      headers: ctx.bearer(user.apiKey),
      payload: { emails: ADDRESSES },
    });
    assert.equal(created.statusCode, 201, created.body);
    const taskId = created.json<{ id: string }>().id;
    await waitForTaskFinished(ctx.db, taskId, 60_000);

    const jobs = (await get(user, `/api/v1/tasks/${taskId}/jobs?limit=100`)).json<{
      jobs: Array<{ email_address: string; email: Record<string, unknown> }>;
    }>().jobs;
    assert.equal(jobs.length, ADDRESSES.length);
    for (const job of jobs) {
      const [status, suggestion, free] = EXPECTED[job.email_address]!;
      assert.deepEqual(
        [job.email.status, job.email.did_you_mean, job.email.is_free_provider],
        [status, suggestion, free],
        job.email_address,
      );
    }

    const res = await get(user, `/api/v1/tasks/${taskId}/download?format=csv`);
    assert.equal(res.statusCode, 200, res.body);
    const records: string[][] = parseCsv(res.rawPayload, { bom: true });
    const [header, ...rows] = records;
    assert.ok(header);
    const col = (name: string) => header.indexOf(name);
    assert.deepEqual(header.slice(-8, -5), ["did_you_mean", "is_free_provider", "validated_at"]);
    assert.equal(rows.length, ADDRESSES.length);
    for (const row of rows) {
      const address = row[col("email")]!;
      const [status, suggestion, free] = EXPECTED[address]!;
      assert.deepEqual(
        [row[col("status")], row[col("did_you_mean")], row[col("is_free_provider")]],
        [status, suggestion ?? "", String(free)],
        address,
      );
    }
  });
});

describe("metrics", () => {
  test("total_free_provider_emails counts the free-provider results", async () => {
    const user = await ctx.createUser(3);
    for (const address of ["bob@gmail.com", "bob@acme.com", "bob@gamil.com"])
      assert.equal((await verify(user, address)).statusCode, 200);
    const res = await get(user, "/api/v1/metrics/verifications");
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().total_free_provider_emails, 1);
    assert.equal(res.json().total_verifications, 3);
  });
});
