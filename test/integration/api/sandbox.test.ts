// Sandbox addresses (docs/api.md) through the real app, on both engines: realtime verify,
// JSON tasks and uploads answer every address under sandbox.mailprobe.invalid with its fixed
// result, charge no credit (no ledger row at all) and open no socket. "No socket" is measured:
// DNS_SERVERS and SMTP_PORT point at local trap servers that count every DNS packet and TCP
// connection they get (the last test shows the DNS trap does see an ordinary address).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createSocket, type Socket } from "node:dgram";
import { once } from "node:events";
import { createServer, type AddressInfo, type Server } from "node:net";
import { after, before, test } from "node:test";
import { parse as parseCsv } from "csv-parse/sync";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import { waitForTaskFinished } from "../../support/batch.ts";
import { bindPortPair } from "../../support/port-pair.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

const D = "sandbox.mailprobe.invalid";
const HOST = "mx.sandbox.mailprobe.invalid";

/** A DNS server (UDP and TCP on one port) and an SMTP port that count what reaches them and never answer. */
interface Traps {
  dnsPort: number;
  smtpPort: number;
  counts: { dnsPackets: number; dnsConnections: number; smtpConnections: number };
  close(): Promise<void>;
}

function listenTcp(server: Server, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** A UDP socket and a TCP server on one port, counting what reaches them and never answering. */
async function bindDnsOnce(counts: Traps["counts"]): Promise<{ udp: Socket; tcp: Server; port: number }> {
  const udp: Socket = createSocket("udp4");
  udp.on("message", () => counts.dnsPackets++);
  udp.bind(0, "127.0.0.1");
  await once(udp, "listening");
  const port = udp.address().port;
  const tcp = createServer((s) => {
    counts.dnsConnections++;
    s.destroy();
  });
  try {
    await listenTcp(tcp, port);
    return { udp, tcp, port };
  } catch (error) {
    await new Promise<void>((resolve) => udp.close(() => resolve()));
    throw error;
  }
}

async function startTraps(): Promise<Traps> {
  const counts = { dnsPackets: 0, dnsConnections: 0, smtpConnections: 0 };
  const {
    udp,
    tcp: dnsTcp,
    port: dnsPort,
  } = await bindPortPair("sandbox DNS trap", () => bindDnsOnce(counts));
  const smtp = createServer((s) => {
    counts.smtpConnections++;
    s.destroy();
  });
  const smtpPort = await listenTcp(smtp);
  return {
    dnsPort,
    smtpPort,
    counts,
    close: async () => {
      udp.close();
      await Promise.all([
        new Promise((resolve) => dnsTcp.close(resolve)),
        new Promise((resolve) => smtp.close(resolve)),
      ]);
    },
  };
}

let traps: Traps;
let ctx: TestContext;
let role: WorkerRole;

before(async () => {
  traps = await startTraps();
  ctx = await createTestContext({
    env: {
      DNS_SERVERS: `127.0.0.1:${traps.dnsPort.toString()}`,
      SMTP_PORT: traps.smtpPort.toString(),
      DNS_TIMEOUT_MS: "300",
      DNS_TRIES: "1",
      SMTP_CONNECT_TIMEOUT_MS: "500",
      SMTP_HELO_NAME: "probe.mailprobe.test",
      SMTP_ALLOW_PRIVATE_HOSTS: "true",
      WORKER_POLL_INTERVAL_MS: "50",
      // Cached answers on: sandbox answers must not depend on them either way.
      VERIFY_CACHE_TTL_SECONDS: "3600",
    },
  });
  role = createWorkerRole(ctx.services);
  role.start();
});

after(async () => {
  await role?.stop(1000);
  await ctx?.close();
  await traps?.close();
});

const noNetwork = (): void =>
  assert.deepEqual(traps.counts, { dnsPackets: 0, dnsConnections: 0, smtpConnections: 0 });

// ---------------------------------------------------------------------------------------------
// helpers

const verify = (user: TestUser, email: string) =>
  ctx.app.inject({
    method: "POST",
    url: "/api/v1/verify",
    headers: ctx.bearer(user.apiKey),
    payload: { email },
  });

const balanceOf = async (user: TestUser): Promise<number> =>
  (await ctx.services.credits.balance(user.userId)).balance;

/** The user's ledger after the grant that created the account. */
async function ledgerRows(user: TestUser): Promise<Array<{ amount: number; reason: string }>> {
  const { rows } = await ctx.db.query<{ amount: number; reason: string }>(
    `select amount, reason from credit_transactions
      where user_id = $1 and reason <> 'initial_grant' order by created_at, id`,
    [user.userId],
  );
  return rows;
}

/** The spec fields a sandbox answer fixes (validated_at and id vary). */
interface Expected {
  status: string;
  unknown_reason: string | null;
  is_role_based: boolean;
  is_disposable: boolean;
  is_catchall: boolean;
  needs_physical_verify: boolean;
  has_mx_records: boolean;
  has_reverse_dns: boolean;
  host_name: string;
  server_type: string;
  domain_name: string;
}

const smtp = { has_mx_records: true, has_reverse_dns: true, host_name: HOST, server_type: "sandbox" };
const base = {
  unknown_reason: null,
  is_role_based: false,
  is_disposable: false,
  is_catchall: false,
  needs_physical_verify: false,
  domain_name: D,
};

/** The README's sandbox table. */
const TABLE: Record<string, Expected> = {
  [`valid@${D}`]: { ...base, ...smtp, status: "valid" },
  [`invalid@${D}`]: { ...base, ...smtp, status: "invalid" },
  [`catchall@${D}`]: { ...base, ...smtp, status: "catchall", is_catchall: true },
  [`physical@${D}`]: { ...base, ...smtp, status: "catchall", is_catchall: true, needs_physical_verify: true },
  [`disposable@${D}`]: {
    ...base,
    status: "disposable_domain",
    is_disposable: true,
    has_mx_records: false,
    has_reverse_dns: false,
    host_name: "",
    server_type: "unknown",
  },
  [`info@${D}`]: { ...base, ...smtp, status: "valid", is_role_based: true },
  [`unknown-greylisted@${D}`]: { ...base, ...smtp, status: "unknown", unknown_reason: "greylisted" },
  [`unknown-timeout@${D}`]: { ...base, ...smtp, status: "unknown", unknown_reason: "smtp_timeout" },
  [`timeout@${D}`]: { ...base, ...smtp, status: "unknown", unknown_reason: "timeout_smtp" },
  [`jane.doe@${D}`]: { ...base, ...smtp, status: "invalid" },
  [`valid+order-42@${D}`]: { ...base, ...smtp, status: "valid" },
};

const pick = (body: Record<string, unknown>): Expected => ({
  status: body.status as string,
  unknown_reason: body.unknown_reason as string | null,
  is_role_based: body.is_role_based as boolean,
  is_disposable: body.is_disposable as boolean,
  is_catchall: body.is_catchall as boolean,
  needs_physical_verify: body.needs_physical_verify as boolean,
  has_mx_records: body.has_mx_records as boolean,
  has_reverse_dns: body.has_reverse_dns as boolean,
  host_name: body.host_name as string,
  server_type: body.server_type as string,
  domain_name: body.domain_name as string,
});

// ---------------------------------------------------------------------------------------------
// realtime

test("realtime, balance 0: every sandbox address answers 200 with its fixed result (timeout@ → 408), free", async () => {
  const user = await ctx.createUser(0);
  for (const [email, expected] of Object.entries(TABLE)) {
    // Twice: a repeat is no different (no cache, no free-repeat bookkeeping needed).
    for (let i = 0; i < 2; i++) {
      const res = await verify(user, email);
      if (email.startsWith("timeout@")) {
        assert.equal(res.statusCode, 408, res.body);
        const body = res.json<{ error: { code: string }; result: Record<string, unknown> }>();
        assert.equal(body.error.code, "VERIFICATION_TIMEOUT");
        assert.deepEqual(pick(body.result), expected, email);
      } else {
        assert.equal(res.statusCode, 200, `${email}: ${res.body}`);
        const body = res.json<Record<string, unknown>>();
        assert.deepEqual(pick(body), expected, email);
        assert.equal(body.email, email);
      }
    }
  }
  assert.equal(await balanceOf(user), 0);
  assert.deepEqual(await ledgerRows(user), []);
  // Stored like any other verification (history, metrics), charged to nothing, marked in evidence.
  const { rows } = await ctx.db.query<{ n: number; charged: number; marked: number }>(
    `select count(*)::int as n, count(credit_transaction_id)::int as charged,
            count(*) filter (where evidence like 'sandbox: %')::int as marked
       from email_verifications where user_id = $1`,
    [user.userId],
  );
  assert.deepEqual(rows[0], {
    n: 2 * Object.keys(TABLE).length,
    charged: 0,
    marked: 2 * Object.keys(TABLE).length,
  });
  noNetwork();
});

test("realtime: case is canonicalised, bad syntax under the domain is invalid_syntax, all free", async () => {
  const user = await ctx.createUser(0);
  const upper = await verify(user, `  VALID@Sandbox.MailProbe.Invalid `);
  assert.equal(upper.statusCode, 200, upper.body);
  assert.equal(upper.json<{ email: string }>().email, `valid@${D}`);
  const bad = await verify(user, `invalid..syntax@${D}`);
  assert.equal(bad.statusCode, 200, bad.body);
  assert.equal(bad.json<{ status: string }>().status, "invalid_syntax");
  assert.equal(await balanceOf(user), 0);
  assert.deepEqual(await ledgerRows(user), []);
  noNetwork();
});

test("realtime: a user who could pay is not charged either", async () => {
  const user = await ctx.createUser(3);
  for (const email of [`valid@${D}`, `invalid@${D}`, `catchall@${D}`, `disposable@${D}`]) {
    assert.equal((await verify(user, email)).statusCode, 200);
  }
  assert.equal(await balanceOf(user), 3);
  assert.deepEqual(await ledgerRows(user), []);
  noNetwork();
});

// ---------------------------------------------------------------------------------------------
// tasks

interface JobsReply {
  jobs: Array<{ email_address: string; status: string; email?: Record<string, unknown> }>;
  count: number;
}

async function jobsOf(user: TestUser, taskId: string): Promise<JobsReply> {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/tasks/${taskId}/jobs?limit=100`,
    headers: ctx.bearer(user.apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<JobsReply>();
}

test("a task of only sandbox addresses, balance 0: reserves nothing, completes with the fixed results, no ledger row", async () => {
  const user = await ctx.createUser(0);
  const emails = [...Object.keys(TABLE), `VALID@${D}`, `invalid..syntax@${D}`];
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(user.apiKey),
    payload: { emails },
  });
  assert.equal(res.statusCode, 201, res.body);
  const created = res.json<{ id: string; email_count: number; unique_count: number }>();
  assert.equal(created.email_count, emails.length);
  // valid@ and VALID@ are one address.
  assert.equal(created.unique_count, Object.keys(TABLE).length + 1);
  assert.deepEqual(await ledgerRows(user), []);
  await waitForTaskFinished(ctx.db, created.id, 20_000);

  const task = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/tasks/${created.id}`,
    headers: ctx.bearer(user.apiKey),
  });
  const metrics = task.json<{
    metrics: { job_status: Record<string, number>; verification_status: Record<string, number> };
  }>().metrics;
  assert.equal(metrics.job_status.completed, created.unique_count);
  assert.equal(metrics.job_status.pending, 0);
  assert.equal(metrics.job_status.failed, 0);
  // Sandbox unknowns are final (no retry schedule): greylisted, smtp_timeout, timeout_smtp.
  assert.equal(metrics.verification_status.unknown, 3);
  assert.equal(metrics.verification_status.invalid_syntax, 1);
  assert.equal(metrics.verification_status.disposable_domain, 1);

  // Each job was claimed once: no greylisting schedule, no "interrupted" requeue of timeout@.
  const { rows: claims } = await ctx.db.query<{ attempts: number; retries: number }>(
    `select max(attempts)::int as attempts, sum(deferred_retries + unreachable_retries)::int as retries
       from email_jobs where task_id = $1`,
    [created.id],
  );
  assert.deepEqual(claims[0], { attempts: 1, retries: 0 });

  const { jobs } = await jobsOf(user, created.id);
  for (const job of jobs) {
    assert.equal(job.status, "completed");
    const expected = TABLE[job.email_address];
    if (expected) assert.deepEqual(pick(job.email!), expected, job.email_address);
  }
  // No reservation, and no refund for the unknowns it never reserved.
  assert.equal(await balanceOf(user), 0);
  assert.deepEqual(await ledgerRows(user), []);

  const download = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/tasks/${created.id}/download?format=csv`,
    headers: ctx.bearer(user.apiKey),
  });
  assert.equal(download.statusCode, 200);
  const rows = parseCsv<Record<string, string>>(download.body, { columns: true, bom: true });
  assert.equal(rows.find((r) => r.email === `catchall@${D}`)?.status, "catchall");
  assert.equal(rows.find((r) => r.email === `unknown-greylisted@${D}`)?.unknown_reason, "greylisted");
  noNetwork();
});

test("a mixed task reserves only the ordinary addresses; the finish refunds only their unknowns", async () => {
  // Two ordinary addresses that need no network either: bad syntax (billed) and an address
  // literal (unknown, refunded).
  const ordinary = ["a..b@example.com", "someone@[192.0.2.1]"];
  const emails = [`valid@${D}`, `unknown-greylisted@${D}`, `timeout@${D}`, ...ordinary];
  const poor = await ctx.createUser(1);
  const refused = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: ctx.bearer(poor.apiKey),
    payload: { emails },
  });
  assert.equal(refused.statusCode, 402, refused.body);
  assert.match(refused.json<{ error: { message: string } }>().error.message, /needs 2, the balance is 1/);

  const user = await ctx.createUser(2);
  const id = await ctx.createTask(user, emails);
  assert.deepEqual(await ledgerRows(user), [{ amount: -2, reason: "task_reservation" }]);
  await waitForTaskFinished(ctx.db, id, 20_000);
  // Final charge = the one ordinary non-unknown result (invalid_syntax); the literal's credit returns.
  assert.deepEqual(await ledgerRows(user), [
    { amount: -2, reason: "task_reservation" },
    { amount: 1, reason: "task_unknown_refund" },
  ]);
  assert.equal(await balanceOf(user), 1);
  noNetwork();
});

test("an upload of sandbox addresses, balance 0: accepted, completed, nothing billed", async () => {
  const user = await ctx.createUser(0);
  const boundary = `----mailprobe-test-${randomBytes(12).toString("hex")}`;
  const csv = `email,name\nvalid@${D},Val\ninvalid@${D},Ivan\nunknown-greylisted@${D},Gary\n`;
  const payload = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="sandbox.csv"\r\n` +
        "Content-Type: text/csv\r\n\r\n",
    ),
    Buffer.from(csv, "utf8"),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const res = await ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks/batch/upload",
    headers: { ...ctx.bearer(user.apiKey), "content-type": `multipart/form-data; boundary=${boundary}` },
    payload,
  });
  assert.equal(res.statusCode, 202, res.body);
  const { task_id: taskId, email_count: count } = res.json<{ task_id: string; email_count: number }>();
  assert.equal(count, 3);
  await waitForTaskFinished(ctx.db, taskId, 20_000);
  const { jobs } = await jobsOf(user, taskId);
  assert.deepEqual(jobs.map((j) => [j.email_address, j.email?.status]).sort(), [
    [`invalid@${D}`, "invalid"],
    [`unknown-greylisted@${D}`, "unknown"],
    [`valid@${D}`, "valid"],
  ]);
  assert.equal(await balanceOf(user), 0);
  assert.deepEqual(await ledgerRows(user), []);
  noNetwork();
});

// ---------------------------------------------------------------------------------------------
// the control: the traps do see an ordinary address

test("control: an ordinary address does reach the DNS trap (so the zero counts above mean something)", async () => {
  const user = await ctx.createUser(1);
  const res = await verify(user, "someone@example.test");
  // The trap counts and never answers: to the engine, our resolver is silent (a 424, not a result).
  assert.equal(res.statusCode, 424, res.body);
  assert.equal(res.json<{ error: { code: string } }>().error.code, "DEPENDENCY_TIMEOUT");
  assert.ok(traps.counts.dnsPackets + traps.counts.dnsConnections > 0, JSON.stringify(traps.counts));
});
