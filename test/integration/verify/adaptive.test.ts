// Sessions that adapt to each server's stock limits: Postfix's error limits, per-connection
// recipient caps, STARTTLS (offered or required), a 421 mid-way, greylisting hints, and the
// per-host session limit under concurrent single verifications.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startMailWorld, type DomainSpec, type MailWorld } from "../../support/mail-world/index.ts";
import { engineFor } from "./helpers.ts";

const users = (n: number, prefix = "user"): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}${i.toString()}`);

const domains: DomainSpec[] = [
  {
    name: "errlimits.test",
    hosts: [{ name: "mx.errlimits.test", postfixErrorLimits: true }],
    mailboxes: users(5),
  },
  {
    name: "percap.test",
    hosts: [{ name: "mx.percap.test", maxRcptPerConnection: 20 }],
    mailboxes: users(60),
  },
  { name: "tlsreq.test", hosts: [{ name: "mx.tlsreq.test", startTls: "require" }], mailboxes: ["bob"] },
  { name: "tlsoffer.test", hosts: [{ name: "mx.tlsoffer.test", startTls: "offer" }], mailboxes: ["bob"] },
  { name: "hard3.test", hosts: [{ name: "mx.hard3.test", hardErrorLimit: 3 }], mailboxes: ["bob"] },
  {
    name: "hint.test",
    hosts: [{ name: "mx.hint.test" }],
    mailboxes: ["bob"],
    greylistSeconds: 120,
    greylistStyle: "hint",
  },
  {
    name: "postgrey.test",
    hosts: [{ name: "mx.postgrey.test" }],
    mailboxes: ["bob"],
    greylistSeconds: 300,
    greylistStyle: "postgrey",
  },
  { name: "busy.test", hosts: [{ name: "mx.busy.test", latencyMs: 20 }], mailboxes: users(30) },
];

let world: MailWorld;
before(async () => {
  world = await startMailWorld({ domains });
});
after(async () => {
  await world.close();
});

void test("Postfix's error limits: 30 dead addresses never trip them; every address answered", async () => {
  world.resetCounters();
  const addresses = [...users(5), ...users(30, "ghost")].map((l) => `${l}@errlimits.test`);
  const engine = engineFor(world);
  const results = await engine.verifyGroup("errlimits.test", addresses);
  await engine.close();
  assert.deepEqual(
    results.map((r) => r.status),
    addresses.map((a) => (a.startsWith("user") ? "valid" : "invalid")),
  );
  const c = world.counters("mx.errlimits.test");
  // 31 rejections (probe + 30) at most 9 per connection, one connection at a time.
  for (const errors of c.errorsPerSession) assert.ok(errors <= 9, `errors ${errors.toString()}`);
  assert.equal(c.connections, 4);
  assert.equal(c.maxConcurrent, 1);
  assert.deepEqual(c.violations, []);
});

void test("a per-connection recipient cap that survives RSET: reconnect and continue", async () => {
  world.resetCounters();
  const addresses = users(60).map((l) => `${l}@percap.test`);
  const engine = engineFor(world, { smtpErrorBudget: 100 });
  const results = await engine.verifyGroup("percap.test", addresses);
  await engine.close();
  assert.ok(results.every((r) => r.status === "valid"));
  const c = world.counters("mx.percap.test");
  // control + probe + 60 = 62 RCPTs; the first connection learns the cap of 20 (its 21st gets
  // 452 even in a new transaction), the others stay within it.
  assert.ok(c.connections >= 4 && c.connections <= 5, `connections ${c.connections.toString()}`);
  assert.equal(c.maxConcurrent, 1);
});

void test("STARTTLS required (530 5.7.0): the session runs under TLS and answers everything", async () => {
  world.resetCounters();
  const engine = engineFor(world);
  const [bob, ghost] = await engine.verifyGroup("tlsreq.test", ["bob@tlsreq.test", "ghost@tlsreq.test"]);
  await engine.close();
  assert.equal(bob?.status, "valid");
  assert.equal(ghost?.status, "invalid");
  const c = world.counters("mx.tlsreq.test");
  assert.equal(c.tlsSessions, c.connections);
  assert.deepEqual(c.violations, []);
});

void test("STARTTLS offered: used before MAIL (opportunistic); off when SMTP_STARTTLS=false", async () => {
  world.resetCounters();
  const engine = engineFor(world);
  assert.equal((await engine.verifyOne("bob@tlsoffer.test")).status, "valid");
  await engine.close();
  assert.equal(world.counters("mx.tlsoffer.test").tlsSessions, 1);
  world.resetCounters();
  const plain = engineFor(world, { smtpStartTls: false });
  assert.equal((await plain.verifyOne("bob@tlsoffer.test")).status, "valid");
  await plain.close();
  assert.equal(world.counters("mx.tlsoffer.test").tlsSessions, 0);
});

void test("a 421 mid-session re-queues the unanswered recipients on a new connection at once", async () => {
  world.resetCounters();
  const addresses = ["bob", ...users(6, "ghost")].map((l) => `${l}@hard3.test`);
  const engine = engineFor(world);
  const results = await engine.verifyGroup("hard3.test", addresses);
  await engine.close();
  assert.deepEqual(
    results.map((r) => r.status),
    addresses.map((a) => (a.startsWith("bob") ? "valid" : "invalid")),
  );
  const c = world.counters("mx.hard3.test");
  assert.ok(c.connections >= 3, `connections ${c.connections.toString()}`);
  assert.equal(c.maxConcurrent, 1);
  assert.ok(!c.violations.some((v) => /STARTTLS after 421/.test(v)), c.violations.join(", "));
});

void test("greylisting: the server's hint becomes the retry time; postgrey's stock text means 300 s", async () => {
  const engine = engineFor(world);
  const hinted = await engine.verifyOne("bob@hint.test");
  const postgrey = await engine.verifyOne("bob@postgrey.test");
  await engine.close();
  assert.equal(hinted.status, "unknown");
  assert.equal(hinted.unknownReason, "greylisted");
  assert.ok(
    hinted.retryAfterMs !== null &&
      hinted.retryAfterMs !== undefined &&
      hinted.retryAfterMs > 100_000 &&
      hinted.retryAfterMs <= 120_000,
    String(hinted.retryAfterMs),
  );
  assert.equal(postgrey.unknownReason, "greylisted");
  assert.equal(postgrey.retryAfterMs, 300_000);
});

void test("60 concurrent single verifications of one domain: at most 2 sessions, shared by micro-batching", async () => {
  world.resetCounters();
  const engine = engineFor(world);
  const addresses = Array.from({ length: 60 }, (_, i) =>
    i % 2 === 0 ? `user${(i % 30).toString()}` : `ghost${i.toString()}`,
  );
  const results = await Promise.all(addresses.map((l) => engine.verifyOne(`${l}@busy.test`)));
  await engine.close();
  assert.deepEqual(
    results.map((r) => r.status),
    addresses.map((l) => (l.startsWith("user") ? "valid" : "invalid")),
  );
  const c = world.counters("mx.busy.test");
  assert.ok(c.maxConcurrent <= 2, `max concurrent ${c.maxConcurrent.toString()}`);
  // One request per session would be 60 sessions; micro-batching shares them.
  assert.ok(c.connections < 15, `connections ${c.connections.toString()}`);
});
