// A domain that publishes 500 MX records (any zone may) costs the engine one MX query and an
// address lookup per host it actually tries, counted at the simulator's DNS server: never an
// A/AAAA query per published record.
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { MAX_MX_TARGETS } from "../../../src/verify/resolve-domain.ts";
import {
  startMailWorld,
  type DomainSpec,
  type HostSpec,
  type MailWorld,
} from "../../support/mail-world/index.ts";
import { engineFor } from "./helpers.ts";

const RECORDS = 500;
// dns2 takes about a second to serialise 500 MX records, once for UDP (then truncated: TC) and
// again for TCP; the helpers' 500 ms DNS timeout is for ordinary answers.
const OPTIONS = { dnsTimeoutMs: 10_000 };
// The session's own bound on hosts tried (smtp/session-types.ts MAX_HOSTS_TRIED).
const MAX_HOSTS_TRIED = 5;

/** 500 MX hosts at preferences 0…499 (no ties: the order is fixed); `answering` listen, the others refuse. */
function manyMx(name: string, answering: ReadonlySet<number>): DomainSpec {
  const hosts: HostSpec[] = Array.from({ length: RECORDS }, (_, i) => ({
    name: `mx${i.toString()}.${name}`,
    preference: i,
    refuseConnections: !answering.has(i),
  }));
  return { name, hosts, mailboxes: ["bob"] };
}

let world: MailWorld;
before(async () => {
  world = await startMailWorld({
    domains: [
      manyMx("first.test", new Set([0])),
      manyMx("fourth.test", new Set([3, 4])),
      manyMx("dead.test", new Set()),
    ],
  });
});
beforeEach(() => world.resetDnsQueries());
after(async () => {
  await world.close();
});

/** Address queries (A and AAAA) for the MX hosts of `domain`. */
function addressQueries(domain: string): { names: string[]; total: number } {
  const names: string[] = [];
  let total = 0;
  for (const type of ["A", "AAAA"]) {
    for (const [name, count] of world.dnsQueries(type)) {
      if (!name.endsWith(`.${domain}`)) continue;
      names.push(name);
      total += count;
    }
  }
  return { names, total };
}

void test("the first host answers: one address lookup of 500 records", async () => {
  const engine = engineFor(world, OPTIONS);
  const r = await engine.verifyOne("bob@first.test");
  await engine.close();
  assert.equal(r.status, "valid", r.evidence);
  assert.equal(r.hostName, "mx0.first.test");
  assert.deepEqual(addressQueries("first.test"), { names: ["mx0.first.test"], total: 1 });
});

void test("three hosts refuse: the fourth answers, and exactly the four tried were looked up", async () => {
  const engine = engineFor(world, OPTIONS);
  const r = await engine.verifyOne("bob@fourth.test");
  await engine.close();
  assert.equal(r.status, "valid", r.evidence);
  assert.equal(r.hostName, "mx3.fourth.test");
  const { names, total } = addressQueries("fourth.test");
  assert.deepEqual(names.sort(), [
    "mx0.fourth.test",
    "mx1.fourth.test",
    "mx2.fourth.test",
    "mx3.fourth.test",
  ]);
  assert.equal(total, 4);
  assert.equal(world.counters("mx4.fourth.test").connections, 0);
});

void test("every host refuses: the session stops at its try limit, with as many lookups", async () => {
  const engine = engineFor(world, OPTIONS);
  const r = await engine.verifyOne("bob@dead.test");
  await engine.close();
  assert.equal(r.status, "unknown");
  assert.equal(r.unknownReason, "connection_failed");
  assert.equal(r.hostName, `mx${(MAX_HOSTS_TRIED - 1).toString()}.dead.test`);
  const { total } = addressQueries("dead.test");
  assert.equal(total, MAX_HOSTS_TRIED);
  assert.ok(total <= MAX_MX_TARGETS);
});

void test("a second verification within the cache TTL asks DNS nothing more", async () => {
  const engine = engineFor(world, OPTIONS);
  await engine.verifyOne("bob@fourth.test");
  const before = { a: addressQueries("fourth.test").total, mx: world.dnsQueries("MX").get("fourth.test") };
  const r = await engine.verifyOne("nobody@fourth.test");
  await engine.close();
  assert.equal(r.status, "invalid", r.evidence);
  assert.deepEqual(
    { a: addressQueries("fourth.test").total, mx: world.dnsQueries("MX").get("fourth.test") },
    before,
  );
});
