// PostgreSQL out of reach under a real server: every API call answers 503 SERVICE_UNAVAILABLE with
// Retry-After in the error envelope (it answered 500 INTERNAL_ERROR before), /readyz 503 too,
// /healthz 200, and everything answers normally once the database is back. The app reaches this
// file's schema of the shared test server through a TCP proxy on loopback that the test controls:
// it holds queries in flight, drops connections, terminates their backends (57P01) or stops
// listening (connection refused). The shared server itself is never stopped. PostgreSQL only:
// PGlite runs inside the process and cannot become unreachable.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import type { Database } from "../../../src/db/client.ts";
import { openPostgres } from "../../../src/db/postgres.ts";
import { SANDBOX_DOMAIN } from "../../../src/verify/index.ts";
import { openTestDatabase, testDatabaseUrl } from "../../support/test-db.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

const SKIP = process.env.TEST_DATABASE_URL
  ? false
  : "needs PostgreSQL (TEST_DATABASE_URL): embedded PGlite runs in-process and cannot become unreachable";

interface Pair {
  client: Socket;
  upstream: Socket;
  /** Client→server bytes held back while the proxy stalls. */
  held: Buffer[];
}

/** A loopback TCP proxy to PostgreSQL whose faults the test decides. */
class PgProxy {
  readonly pairs = new Set<Pair>();
  private server: Server | null = null;
  private stalled = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async listen(port = 0): Promise<void> {
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  private accept(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    const pair: Pair = { client, upstream, held: [] };
    this.pairs.add(pair);
    const drop = (): void => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.on("data", (chunk: Buffer) => {
      if (this.stalled) pair.held.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => client.write(chunk));
  }

  /** From now on the statements sent through the proxy wait (a query is then in flight). */
  stall(): void {
    this.stalled = true;
  }

  /** Pairs with a statement waiting in the proxy. */
  waiting(): Pair[] {
    return [...this.pairs].filter((p) => p.held.length > 0);
  }

  /** Forwards what was held and stops holding. */
  resume(): void {
    this.stalled = false;
    for (const p of this.pairs) for (const chunk of p.held.splice(0)) p.upstream.write(chunk);
  }

  /** Drops every open connection (the server went away mid-conversation). */
  dropAll(): void {
    for (const p of [...this.pairs]) {
      p.client.destroy();
      p.upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Stops listening and drops everything: new connections are refused. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.stalled = false;
    // close() resolves once the open connections are gone: drop them first.
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : undefined;
    this.dropAll();
    await closed;
  }

  async up(): Promise<void> {
    await this.listen(this.port);
  }
}

let base: Database;
let direct: Database;
let appDb: Database;
let proxy: PgProxy;
let ctx: TestContext;
let origin: string;
let user: TestUser;

before(async () => {
  if (SKIP) return;
  base = await openTestDatabase();
  const url = new URL(testDatabaseUrl(base)!);
  direct = openPostgres(url.toString(), 1);
  proxy = new PgProxy({ host: url.hostname, port: Number(url.port || 5432) });
  await proxy.listen();
  url.hostname = "127.0.0.1";
  url.port = String(proxy.port);
  appDb = openPostgres(url.toString(), 4);
  ctx = await createTestContext({ db: appDb });
  await ctx.app.listen({ port: 0, host: "127.0.0.1" });
  origin = `http://127.0.0.1:${(ctx.app.server.address() as { port: number }).port}`;
  user = await ctx.createUser(1_000);
});

after(async () => {
  if (SKIP) return;
  await ctx?.close();
  await appDb?.close();
  await proxy?.down();
  await direct?.close();
  await base?.close();
});

const auth = () => ({ authorization: `Bearer ${user.apiKey}` });

function uploadForm(): { body: string; contentType: string } {
  const boundary = `----outage-${randomBytes(8).toString("hex")}`;
  const body =
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="list.txt"\r\n` +
    `Content-Type: text/plain\r\n\r\nann@example.com\nbob@example.com\n\r\n--${boundary}--\r\n`;
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The calls the outage must not turn into 500s, each with the status it answers when all is well. */
const CALLS: Array<{ name: string; ok: number; send: () => Promise<Response> }> = [
  {
    name: "POST /api/v1/verify",
    ok: 200,
    send: () =>
      fetch(`${origin}/api/v1/verify`, {
        method: "POST",
        headers: { ...auth(), "content-type": "application/json" },
        body: JSON.stringify({ email: `valid@${SANDBOX_DOMAIN}` }),
      }),
  },
  { name: "GET /api/v1/tasks", ok: 200, send: () => fetch(`${origin}/api/v1/tasks`, { headers: auth() }) },
  {
    name: "POST /api/v1/tasks",
    ok: 201,
    send: () =>
      fetch(`${origin}/api/v1/tasks`, {
        method: "POST",
        headers: { ...auth(), "content-type": "application/json" },
        body: JSON.stringify({ emails: ["ann@example.com"] }),
      }),
  },
  {
    name: "POST /api/v1/tasks/batch/upload",
    ok: 202,
    send: () => {
      const form = uploadForm();
      return fetch(`${origin}/api/v1/tasks/batch/upload`, {
        method: "POST",
        headers: { ...auth(), "content-type": form.contentType },
        body: form.body,
      });
    },
  },
  {
    name: "GET /api/v1/credits/balance",
    ok: 200,
    send: () => fetch(`${origin}/api/v1/credits/balance`, { headers: auth() }),
  },
];

/** 503 SERVICE_UNAVAILABLE in the error envelope, with Retry-After and the request id. */
async function assertUnavailable(res: Response, what: string): Promise<void> {
  const text = await res.text();
  assert.equal(res.status, 503, `${what}: ${text}`);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/, what);
  const retryAfter = Number(res.headers.get("retry-after"));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 30, `${what}: Retry-After`);
  assert.ok(res.headers.get("x-request-id"), `${what}: request id`);
  const body = JSON.parse(text) as { error: { code: string; message: string } };
  assert.equal(body.error.code, "SERVICE_UNAVAILABLE", what);
  assert.ok(body.error.message.length > 0, what);
  assert.doesNotMatch(text, /ECONNREFUSED|terminat|stack|\.ts:/i, `${what}: no driver detail`);
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await delay(20);
  }
  assert.fail(`${what}: not within 10 s`);
}

/** Sends a balance request and waits until one of its statements is held in the proxy. */
async function requestInFlight(): Promise<{ res: Promise<Response>; pairs: Pair[] }> {
  proxy.stall();
  const res = fetch(`${origin}/api/v1/credits/balance`, { headers: auth() });
  await waitFor("a statement in flight", () => proxy.waiting().length > 0);
  return { res, pairs: proxy.waiting() };
}

async function backendPidsOf(pairs: Pair[]): Promise<number[]> {
  const ports = pairs.map((p) => p.upstream.localPort);
  const { rows } = await direct.query<{ pid: number }>(
    "select pid from pg_stat_activity where client_port = any($1::int[]) and client_addr in ('127.0.0.1', '::1')",
    [ports],
  );
  return rows.map((r) => r.pid);
}

describe("the database out of reach", { skip: SKIP }, () => {
  test("all is well first", async () => {
    for (const call of CALLS) {
      const res = await call.send();
      assert.equal(res.status, call.ok, `${call.name}: ${await res.text()}`);
    }
  });

  test("a connection dropped mid-query (no SQLSTATE): 503, then served again", async () => {
    const { res } = await requestInFlight();
    proxy.dropAll();
    proxy.resume();
    await assertUnavailable(await res, "dropped mid-query");
    const again = await fetch(`${origin}/api/v1/credits/balance`, { headers: auth() });
    assert.equal(again.status, 200, "the pool reconnects");
  });

  test("its backend terminated mid-query (57P01 admin_shutdown): 503, then served again", async () => {
    const { res, pairs } = await requestInFlight();
    const pids = await backendPidsOf(pairs);
    assert.ok(pids.length > 0, "the app's backends are found by their client ports");
    await direct.query("select pg_terminate_backend(pid) from unnest($1::int[]) as pid", [pids]);
    const answer = await res;
    proxy.resume();
    await assertUnavailable(answer, "57P01 mid-query");
    const again = await fetch(`${origin}/api/v1/credits/balance`, { headers: auth() });
    assert.equal(again.status, 200, "the pool reconnects");
  });

  test("connection refused: every call 503 with Retry-After, /readyz 503, /healthz 200; all back after", async () => {
    await proxy.down();
    try {
      for (const call of CALLS) await assertUnavailable(await call.send(), call.name);
      await assertUnavailable(await fetch(`${origin}/readyz`), "/readyz");
      const health = await fetch(`${origin}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: "ok" });
    } finally {
      await proxy.up();
    }
    await waitFor("/readyz back to 200", async () => (await fetch(`${origin}/readyz`)).status === 200);
    for (const call of CALLS) {
      const res = await call.send();
      assert.equal(res.status, call.ok, `${call.name} after the outage: ${await res.text()}`);
    }
  });
});
