// The realtime hot path: what a cached answer costs the database (counted statement by
// statement on the real database), that the one-statement charge stays exact under concurrency
// across nodes, and that the per-node caches never outlive a revocation or a deletion. Two
// "nodes" are two service graphs (each with its own memory) on one database; on PostgreSQL the
// last test runs two real `mailprobe serve` processes.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import type { ChannelHandlers, Database, Queryable, Transaction } from "../../../src/db/client.ts";
import { worldEnv } from "../../support/batch.ts";
import {
  exitOf,
  freePort,
  inheritedEnv,
  startMailprobe,
  type MailprobeChild,
} from "../../support/child-process.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { openTestDatabase, testDatabaseUrl } from "../../support/test-db.ts";
import { createTestContext, ManualClock, type TestContext, type TestUser } from "../../support/test-app.ts";

const HOUR = 3_600_000;
const PG = Boolean(process.env.TEST_DATABASE_URL);

/**
 * Every statement a node sends, with BEGIN and COMMIT/ROLLBACK of its transactions, except the
 * once-a-minute `last_used_at` touch of a key (fire-and-forget, not part of any request's work).
 */
class StatementCounter {
  private all: string[] = [];
  get statements(): string[] {
    return this.all.filter((s) => !s.includes("last_used_at"));
  }
  get roundTrips(): number {
    return this.statements.length;
  }
  get writes(): number {
    return this.statements.filter((s) => /\b(insert|update|delete)\b/i.test(s.replace(/for update/gi, "")))
      .length;
  }
  reset(): void {
    this.all = [];
  }
  wrap(db: Database): Database {
    const counted =
      (q: Queryable): Queryable["query"] =>
      (text: string, params?: readonly unknown[]) => {
        this.all.push(text);
        return q.query(text, params);
      };
    return {
      kind: db.kind,
      query: counted(db),
      transaction: (fn) =>
        db.transaction((tx: Transaction) => {
          this.all.push("begin");
          return fn({ query: counted(tx), exec: (sql) => tx.exec(sql) }).finally(() =>
            this.all.push("commit"),
          );
        }),
      exec: (sql) => db.exec(sql),
      subscribe: (channel: string, handlers: ChannelHandlers) => db.subscribe(channel, handlers),
      close: () => db.close(),
    };
  }
}

let world: MailWorld;
let db: Database;
const counter = new StatementCounter();
let nodeA: TestContext;
let nodeB: TestContext;
const clock = new ManualClock("2026-05-04T08:00:00Z");

before(async () => {
  world = await startMailWorld({
    domains: [
      {
        name: "acme.test",
        hosts: [{ name: "mx1.acme.test", kind: "postfix" }],
        mailboxes: ["alice", "bob", "carol", "dave", "erin", "frank"],
      },
    ],
  });
  // A cache window longer than the free-repeat window: cached answers that must be charged exist.
  const env = { ...worldEnv(world), VERIFY_CACHE_TTL_SECONDS: String(48 * 3600) };
  db = await openTestDatabase();
  nodeA = await createTestContext({ env, clock, db: counter.wrap(db) });
  nodeB = await createTestContext({ env, clock, db });
  for (const node of [nodeA, nodeB]) {
    while (!node.services.invalidations.live) await delay(10);
  }
});

after(async () => {
  await nodeB?.close();
  await nodeA?.close();
  await db?.close();
  await world?.close();
});

const verify = (node: TestContext, user: TestUser, email: string, key = user.apiKey) =>
  node.app.inject({
    method: "POST",
    url: "/api/v1/verify",
    headers: node.bearer(key),
    payload: { email },
  });

const balanceOf = async (user: TestUser): Promise<number> =>
  (await nodeB.services.credits.balance(user.userId)).balance;

async function deductionsOf(user: TestUser): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "select count(*)::int as n from credit_transactions where user_id = $1 and type = 'deduction'",
    [user.userId],
  );
  return rows[0]!.n;
}

async function rowsOf(user: TestUser): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "select count(*)::int as n from email_verifications where user_id = $1",
    [user.userId],
  );
  return rows[0]!.n;
}

/**
 * Waits until the fresh verifications before have handed back their SMTP host slots: the release
 * runs after the answer (the session closes in the background) and is not a repeat's work.
 */
async function settled(): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await db.query<{ n: number }>(
      "select count(*)::int as n from smtp_host_slots where holder is not null",
    );
    if (rows[0]!.n === 0) return;
    await delay(10);
  }
  assert.fail("SMTP host slots still held after 5 s");
}

describe("what a cached answer costs the database", () => {
  test("a free repeat: no statement at all, so no write (auth, result and charge from memory)", async () => {
    const user = await nodeA.createUser(5);
    assert.equal((await verify(nodeA, user, "alice@acme.test")).statusCode, 200);
    // Two repeats first: on PostgreSQL other test files' NOTIFYs (same database) may make a node
    // skip one cache fill, which is the rule (a fill racing an invalidation is dropped).
    for (let i = 0; i < 2; i++) assert.equal((await verify(nodeA, user, "alice@acme.test")).statusCode, 200);
    const rows = await rowsOf(user);
    await settled();
    counter.reset();
    for (let i = 0; i < 20; i++) {
      const res = await verify(nodeA, user, "alice@acme.test");
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().status, "valid");
    }
    assert.deepEqual(counter.statements, [], "20 free repeats sent no statement");
    assert.equal(await balanceOf(user), 4, "charged once");
    assert.equal(await rowsOf(user), rows, "nothing stored per repeat");
  });

  test("a charged cached answer is one statement: claim, debit, ledger row and record together", async () => {
    const user = await nodeA.createUser(5);
    assert.equal((await verify(nodeA, user, "bob@acme.test")).statusCode, 200);
    clock.advance(25 * HOUR); // past the free-repeat window, inside the 48 h cache window
    await settled();
    counter.reset();
    const res = await verify(nodeA, user, "bob@acme.test");
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(counter.roundTrips, 1, counter.statements.join("\n---\n"));
    assert.equal(counter.writes, 1);
    assert.equal(await balanceOf(user), 3, "charged again after 24 h");
    const { rows } = await db.query<{ from_cache: boolean; linked: boolean }>(
      `select v.from_cache, t.id is not null as linked
         from email_verifications v left join credit_transactions t on t.id = v.credit_transaction_id
        where v.id = $1`,
      [res.json().id],
    );
    assert.deepEqual(rows, [{ from_cache: true, linked: true }], "a new record, linked to its charge");
    counter.reset();
    assert.equal((await verify(nodeA, user, "bob@acme.test")).statusCode, 200);
    assert.equal(counter.roundTrips, 0, "and the next repeat is free again, from memory");
  });

  test("an empty balance refuses a charged cached answer and leaves nothing behind", async () => {
    const user = await nodeA.createUser(1);
    assert.equal((await verify(nodeA, user, "carol@acme.test")).statusCode, 200);
    clock.advance(25 * HOUR);
    const before = await db.query("select charged_at from address_charges where user_id = $1", [user.userId]);
    const rows = await rowsOf(user);
    const res = await verify(nodeA, user, "carol@acme.test");
    assert.equal(res.statusCode, 402, res.body);
    assert.equal(res.json().error.code, "INSUFFICIENT_CREDITS");
    const afterRefusal = await db.query("select charged_at from address_charges where user_id = $1", [
      user.userId,
    ]);
    assert.deepEqual(afterRefusal.rows, before.rows, "the claim was rolled back with the refused debit");
    assert.equal(await rowsOf(user), rows);
    assert.equal(await balanceOf(user), 0);
    await nodeB.services.credits.grant(user.userId, 1, "top-up");
    assert.equal((await verify(nodeA, user, "carol@acme.test")).statusCode, 200);
    assert.equal(await balanceOf(user), 0, "charged once the balance allows it");
    assert.equal(await deductionsOf(user), 2);
  });
});

describe("exact under concurrency, on two nodes", () => {
  test("50 concurrent identical verifies over both nodes charge once, fresh and then cached", async () => {
    const user = await nodeA.createUser(100);
    const burst = () =>
      Promise.all(
        // 20 over two nodes stays within VERIFY_MAX_IN_FLIGHT_PER_USER (10 per node).
        Array.from({ length: 20 }, (_, i) => verify(i % 2 ? nodeA : nodeB, user, "dave@acme.test")),
      );
    for (const res of await burst()) assert.equal(res.statusCode, 200, res.body);
    assert.equal(await deductionsOf(user), 1, "fresh: one charge for 50 requests");
    assert.equal(await balanceOf(user), 99);

    clock.advance(25 * HOUR);
    for (const res of await burst()) assert.equal(res.statusCode, 200, res.body);
    assert.equal(await deductionsOf(user), 2, "cached after 24 h: one more charge for 50 requests");
    assert.equal(await balanceOf(user), 98);
  });

  test("20 concurrent distinct verifies with 8 credits: 8 charged, 12 refused, never negative", async () => {
    const user = await nodeA.createUser(8);
    const emails = ["alice", "bob", "carol", "dave", "erin", "frank"].map((m) => `${m}@acme.test`);
    // Cached for another user only: each address is fresh for this one (the cache is per user).
    const results = await Promise.all(
      // 20 over two nodes stays within VERIFY_MAX_IN_FLIGHT_PER_USER (10 per node).
      Array.from({ length: 20 }, (_, i) =>
        verify(i % 2 ? nodeA : nodeB, user, `${emails[i % emails.length]!.replace("@", `+${i}@`)}`),
      ),
    );
    const ok = results.filter((r) => r.statusCode === 200).length;
    const refused = results.filter((r) => r.statusCode === 402).length;
    assert.equal(ok + refused, 20, results.map((r) => r.statusCode).join(","));
    assert.equal(ok, 8);
    assert.equal(await deductionsOf(user), 8);
    assert.equal(await balanceOf(user), 0);
  });
});

describe("caches never outlive what invalidates them", () => {
  test("a key revoked on node A is refused on node B at once (both had it cached)", async () => {
    const user = await nodeA.createUser(5);
    const spare = await nodeA.services.apiKeys.create(user.userId, "spare", "custom");
    for (const node of [nodeA, nodeB])
      assert.equal((await verify(node, user, "erin@acme.test", spare.plaintext)).statusCode, 200);
    const revoked = await nodeA.app.inject({
      method: "DELETE",
      url: `/api/v1/api-keys/${spare.record.id}`,
      headers: nodeA.bearer(user.apiKey),
    });
    assert.equal(revoked.statusCode < 300, true, revoked.body);
    assert.equal((await verify(nodeA, user, "erin@acme.test", spare.plaintext)).statusCode, 401);
    const started = Date.now();
    while ((await verify(nodeB, user, "erin@acme.test", spare.plaintext)).statusCode !== 401) {
      assert.ok(Date.now() - started < 1_000, "node B still accepts the revoked key after 1 s");
      await delay(10);
    }
    assert.equal((await verify(nodeB, user, "erin@acme.test")).statusCode, 200, "the other key still works");
  });

  test("deleting a task makes every node forget the user's remembered results", async () => {
    const user = await nodeA.createUser(5);
    assert.equal((await verify(nodeB, user, "frank@acme.test")).statusCode, 200);
    let forgotten = 0;
    nodeB.services.invalidations.on((m) => {
      if (m?.kind === "user_results" && m.userId === user.userId) forgotten++;
    });
    // A finished task of this user, deleted through node A.
    const created = await nodeA.app.inject({
      method: "POST",
      url: "/api/v1/tasks",
      headers: nodeA.bearer(user.apiKey),
      payload: { emails: ["frank@acme.test"] },
    });
    assert.equal(created.statusCode, 201, created.body);
    const taskId = created.json().task_id ?? created.json().id;
    await nodeA.app.inject({
      method: "POST",
      url: `/api/v1/tasks/${taskId}/cancel`,
      headers: nodeA.bearer(user.apiKey),
    });
    const deleted = await nodeA.app.inject({
      method: "DELETE",
      url: `/api/v1/tasks/${taskId}`,
      headers: nodeA.bearer(user.apiKey),
    });
    assert.equal(deleted.statusCode < 300, true, deleted.body);
    const started = Date.now();
    while (forgotten === 0) {
      assert.ok(Date.now() - started < 1_000, "node B was not told within 1 s");
      await delay(10);
    }
  });

  test(
    "a lost LISTEN connection: caches bypassed meanwhile, emptied when it is back",
    { skip: !PG },
    async () => {
      const user = await nodeA.createUser(5);
      const spare = await nodeA.services.apiKeys.create(user.userId, "spare", "custom");
      assert.equal((await verify(nodeB, user, "alice@acme.test", spare.plaintext)).statusCode, 200);
      await db.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
        where application_name = 'mailprobe-listen' and datname = current_database()`,
      );
      // Deactivated behind the service's back: no notification, only the gap can tell node B.
      await db.query("update api_keys set is_active = false where id = $1", [spare.record.id]);
      const started = Date.now();
      while ((await verify(nodeB, user, "alice@acme.test", spare.plaintext)).statusCode !== 401) {
        assert.ok(Date.now() - started < 10_000, "node B kept serving a cached key across the gap");
        await delay(20);
      }
      while (!nodeB.services.invalidations.live) {
        assert.ok(Date.now() - started < 10_000, "node B did not listen again");
        await delay(20);
      }
    },
  );
});

describe("two real processes on PostgreSQL", { skip: !PG && "one process owns an embedded database" }, () => {
  const children: MailprobeChild[] = [];
  let dataDir: string;
  after(async () => {
    for (const child of children) {
      child.proc.kill("SIGKILL");
      await exitOf(child);
    }
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test("a key revoked through node A is refused by node B within 1 s", async () => {
    dataDir = await mkdtemp(join(tmpdir(), "mailprobe-hot-"));
    const url = testDatabaseUrl(db)!;
    const start = async (name: string) => {
      const port = await freePort();
      const env = {
        ...inheritedEnv(),
        ...worldEnv(world),
        PORT: String(port),
        HOST: "127.0.0.1",
        DATA_DIR: dataDir,
        LOG_LEVEL: "warn",
        DATABASE_URL: url,
        ENCRYPTION_KEY: "11".repeat(32),
      };
      children.push(await startMailprobe(name, ["serve", "--no-worker"], env, "listening on"));
      return `http://127.0.0.1:${port}`;
    };
    const [a, b] = await Promise.all([start("node-a"), start("node-b")]);
    const user = await nodeA.createUser(5);
    const spare = await nodeA.services.apiKeys.create(user.userId, "spare", "custom");
    const call = (base: string, key: string) =>
      fetch(`${base}/api/v1/credits/balance`, { headers: { authorization: `Bearer ${key}` } }).then(
        (r) => r.status,
      );
    for (const base of [a, b]) assert.equal(await call(base, spare.plaintext), 200);
    const revoked = await fetch(`${a}/api/v1/api-keys/${spare.record.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${user.apiKey}` },
    });
    assert.ok(revoked.ok, await revoked.text());
    const started = Date.now();
    while ((await call(b, spare.plaintext)) !== 401) {
      assert.ok(Date.now() - started < 1_000, "node B still accepts the revoked key after 1 s");
      await delay(10);
    }
    assert.equal(await call(b, user.apiKey), 200);
  });
});
