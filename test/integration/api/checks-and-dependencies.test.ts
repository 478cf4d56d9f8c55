// The spec's Errors section through the real app: every result carries per-check status
// (realtime, jobs, downloads), and our own resolvers or SOCKS proxy failing is a 424 with a
// DEPENDENCY_* code, nothing charged, nothing stored, while a target domain's DNS failure stays
// a result.
import assert from "node:assert/strict";
import dgram from "node:dgram";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { parse } from "csv-parse/sync";
import { createWorkerRole } from "../../../src/app/worker-role.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

let world: MailWorld;
let ctx: TestContext;
const closers: Array<() => Promise<void>> = [];

before(async () => {
  world = await startMailWorld({
    domains: [
      { name: "acme.test", hosts: [{ name: "mx.acme.test", kind: "postfix" }], mailboxes: ["ann"] },
      { name: "broken.test", dns: "servfail" },
      { name: "ghost.test", dns: "nxdomain" },
    ],
  });
  // The SERVFAIL domain is retried (unreachable class): quickly here, so the task settles in seconds.
  ctx = await createTestContext({ env: worldEnv(world, { VERIFY_UNREACHABLE_RETRY_DELAYS: "0.05,0.05" }) });
});

after(async () => {
  for (const close of closers.reverse()) await close();
  await ctx?.close();
  await world?.close();
});

/** Another app on the same database whose DNS or egress is broken as `env` says. */
async function brokenContext(env: Record<string, string>): Promise<TestContext> {
  const broken = await createTestContext({ env: worldEnv(world, env), db: ctx.db });
  closers.push(() => broken.close());
  return broken;
}

const verify = (on: TestContext, user: TestUser, email: string) =>
  on.app.inject({
    method: "POST",
    url: "/api/v1/verify",
    headers: on.bearer(user.apiKey),
    payload: { email },
  });

async function ledgerOf(user: TestUser) {
  const { rows } = await ctx.db.query<{ n: number }>(
    "select count(*)::int as n from credit_transactions where user_id = $1 and type = 'deduction'",
    [user.userId],
  );
  const stored = await ctx.db.query<{ n: number }>(
    "select count(*)::int as n from email_verifications where user_id = $1",
    [user.userId],
  );
  return {
    balance: (await ctx.services.credits.balance(user.userId)).balance,
    deductions: rows[0]!.n,
    stored: stored.rows[0]!.n,
  };
}

/** A UDP port nothing listens on (bound, then released). */
async function closedUdpPort(): Promise<number> {
  const socket = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

describe("per-check status", () => {
  test("a realtime result carries checks", async () => {
    const user = await ctx.createUser(5);
    const res = await verify(ctx, user, "ann@acme.test");
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().checks, {
      syntax: { status: "passed", reason: null },
      dns: { status: "passed", reason: null },
      mx: { status: "passed", reason: "mx_records" },
      reverse_dns: { status: "passed", reason: null },
      smtp: { status: "passed", reason: "accepted" },
    });
  });

  test("the target domain's SERVFAIL is a result (unknown, dns error), not a 424, and not charged", async () => {
    const user = await ctx.createUser(5);
    const res = await verify(ctx, user, "ann@broken.test");
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.status, "unknown");
    assert.equal(body.unknown_reason, "dns_error");
    assert.equal(body.has_mx_records, false);
    assert.deepEqual(body.checks.dns, { status: "error", reason: "servfail" });
    assert.deepEqual(body.checks.smtp, { status: "skipped", reason: "dns_error" });
    assert.equal((await ledgerOf(user)).balance, 5);
  });

  test("a task's jobs and its download carry the checks; a row stored before checks reads sensibly", async () => {
    const user = await ctx.createUser(10);
    const created = await ctx.app.inject({
      method: "POST",
      url: "/api/v1/tasks",
      headers: ctx.bearer(user.apiKey),
      payload: { emails: ["ann@acme.test", "ann@ghost.test", "ann@broken.test"] },
    });
    assert.equal(created.statusCode, 201, created.body);
    const taskId = created.json<{ id: string }>().id;
    const role = createWorkerRole(ctx.services);
    role.start();
    try {
      await waitForTaskFinished(ctx.db, taskId, 60_000);
    } finally {
      await role.stop(5_000);
    }

    const jobs = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${taskId}/jobs?limit=10`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(jobs.statusCode, 200, jobs.body);
    const byAddress = new Map(
      jobs
        .json<{
          jobs: Array<{ email_address: string; email: { checks: Record<string, { status: string }> } }>;
        }>()
        .jobs.map((j) => [j.email_address, j.email.checks]),
    );
    assert.equal(byAddress.get("ann@acme.test")?.smtp?.status, "passed");
    assert.deepEqual(byAddress.get("ann@ghost.test")?.dns, { status: "failed", reason: "nxdomain" });
    assert.equal(byAddress.get("ann@broken.test")?.dns?.status, "error");

    const csv = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${taskId}/download?format=csv`,
      headers: ctx.bearer(user.apiKey),
    });
    assert.equal(csv.statusCode, 200, csv.body);
    const table: string[][] = parse(csv.body, { bom: true });
    const [header, ...rows] = table;
    assert.deepEqual(header!.slice(-5), [
      "check_syntax",
      "check_dns",
      "check_mx",
      "check_reverse_dns",
      "check_smtp",
    ]);
    const rowOf = (email: string) => rows.find((r) => r[0] === email)!.slice(-5);
    assert.deepEqual(rowOf("ann@acme.test"), ["passed", "passed", "passed", "passed", "passed"]);
    assert.deepEqual(rowOf("ann@ghost.test"), ["passed", "failed", "skipped", "skipped", "skipped"]);
    assert.deepEqual(rowOf("ann@broken.test"), ["passed", "error", "skipped", "skipped", "skipped"]);

    // A row written before migration 0015 has no checks: it reads with what its columns prove.
    await ctx.db.query("update email_verifications set checks = null where task_id = $1 and email = $2", [
      taskId,
      "ann@acme.test",
    ]);
    const legacy = await ctx.app.inject({
      method: "GET",
      url: `/api/v1/tasks/${taskId}/jobs?limit=10`,
      headers: ctx.bearer(user.apiKey),
    });
    const acme = legacy
      .json<{ jobs: Array<{ email_address: string; email: { checks: unknown } }> }>()
      .jobs.find((j) => j.email_address === "ann@acme.test")!;
    assert.deepEqual(acme.email.checks, {
      syntax: { status: "passed", reason: null },
      dns: { status: "skipped", reason: "not_recorded" },
      mx: { status: "passed", reason: "mx_records" },
      reverse_dns: { status: "passed", reason: null },
      smtp: { status: "passed", reason: "accepted" },
    });
  });
});

describe("our own dependencies failing → 424, nothing charged, nothing stored", () => {
  test("resolvers that cannot be reached → 424 DEPENDENCY_UNAVAILABLE; once they are back, a fresh verification", async () => {
    const broken = await brokenContext({ DNS_SERVERS: `127.0.0.1:${(await closedUdpPort()).toString()}` });
    const user = await ctx.createUser(5);
    const res = await verify(broken, user, "ann@acme.test");
    assert.equal(res.statusCode, 424, res.body);
    assert.equal(res.json().error.code, "DEPENDENCY_UNAVAILABLE");
    assert.match(res.json().error.message, /DNS resolvers/);
    assert.deepEqual(await ledgerOf(user), { balance: 5, deductions: 0, stored: 0 });

    // Nothing was cached: the working node verifies afresh and charges once.
    const again = await verify(ctx, user, "ann@acme.test");
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().status, "valid");
    assert.deepEqual(await ledgerOf(user), { balance: 4, deductions: 1, stored: 1 });
  });

  test("resolvers that never answer → 424 DEPENDENCY_TIMEOUT", async () => {
    const silent = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => silent.bind(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => silent.close(() => resolve())));
    const broken = await brokenContext({
      DNS_SERVERS: `127.0.0.1:${silent.address().port.toString()}`,
      DNS_TIMEOUT_MS: "200",
    });
    const user = await ctx.createUser(5);
    const res = await verify(broken, user, "ann@acme.test");
    assert.equal(res.statusCode, 424, res.body);
    assert.equal(res.json().error.code, "DEPENDENCY_TIMEOUT");
    assert.deepEqual(await ledgerOf(user), { balance: 5, deductions: 0, stored: 0 });
  });

  test("a SOCKS proxy that is down → 424 DEPENDENCY_UNAVAILABLE; one that closes us at once → DEPENDENCY_RATE_LIMIT", async () => {
    const dead = net.createServer();
    await new Promise<void>((resolve) => dead.listen(0, "127.0.0.1", resolve));
    const deadPort = (dead.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => dead.close(() => resolve()));
    const accepted = new Set<net.Socket>();
    const throttling = net.createServer((socket) => {
      accepted.add(socket);
      socket.on("error", () => undefined);
      socket.end();
    });
    await new Promise<void>((resolve) => throttling.listen(0, "127.0.0.1", resolve));
    closers.push(() => {
      // close() waits for every connection: a half-closed one would hold the file open.
      for (const socket of accepted) socket.destroy();
      return new Promise<void>((resolve) => throttling.close(() => resolve()));
    });

    const user = await ctx.createUser(5);
    const down = await brokenContext({ SMTP_PROXY: `socks5://127.0.0.1:${deadPort.toString()}` });
    const r1 = await verify(down, user, "ann@acme.test");
    assert.equal(r1.statusCode, 424, r1.body);
    assert.equal(r1.json().error.code, "DEPENDENCY_UNAVAILABLE");

    const throttled = await brokenContext({
      SMTP_PROXY: `socks5://127.0.0.1:${(throttling.address() as net.AddressInfo).port.toString()}`,
    });
    const r2 = await verify(throttled, user, "ann@acme.test");
    assert.equal(r2.statusCode, 424, r2.body);
    assert.equal(r2.json().error.code, "DEPENDENCY_RATE_LIMIT");
    assert.deepEqual(await ledgerOf(user), { balance: 5, deductions: 0, stored: 0 });
  });
});
