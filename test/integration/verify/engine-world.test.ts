// One test per behaviour of the engine against the mail-world simulator (real DNS server, real
// SMTP servers on loopback). Each test pins the exact result fields.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AbortedError } from "../../../src/verify/abort.ts";
import type { Engine } from "../../../src/verify/engine.ts";
import type { ConnectPort } from "../../../src/verify/ports.ts";
import { startMailWorld, type DomainSpec, type MailWorld } from "../../support/mail-world/index.ts";
import { engineFor, expected, facts } from "./helpers.ts";

const users = (n: number): string[] => Array.from({ length: n }, (_, i) => `user${i.toString()}`);

const DOMAINS: DomainSpec[] = [
  {
    name: "known.test",
    hosts: [{ name: "mx1.known.test" }],
    mailboxes: ["bob", "info"],
    fullMailboxes: ["full"],
    disabledMailboxes: ["gone"],
  },
  { name: "catchall.test", hosts: [{ name: "mx.catchall.test" }], catchAll: true },
  { name: "aonly.test", dns: "a_only", hosts: [{ name: "aonly.test" }], mailboxes: ["bob"] },
  { name: "nullmx.test", dns: "null_mx" },
  { name: "nx.test", dns: "nxdomain" },
  { name: "norecords.test", dns: "no_records" },
  { name: "noaddr.test", hosts: [{ name: "mx.noaddr.test", hasAddress: false }], mailboxes: ["bob"] },
  { name: "servfail.test", dns: "servfail" },
  { name: "dnstimeout.test", dns: "timeout" },
  {
    name: "fallback.test",
    hosts: [
      { name: "mx1.fallback.test", preference: 10, refuseConnections: true },
      { name: "mx2.fallback.test", preference: 20 },
    ],
    mailboxes: ["bob"],
  },
  { name: "refused.test", hosts: [{ name: "mx.refused.test", refuseConnections: true }], mailboxes: ["bob"] },
  { name: "grey.test", hosts: [{ name: "mx.grey.test" }], mailboxes: ["bob"], greylistSeconds: 300 },
  { name: "tarpit.test", hosts: [{ name: "mx.tarpit.test", bannerDelayMs: 12_000 }], mailboxes: ["bob"] },
  { name: "drop.test", hosts: [{ name: "mx.drop.test", dropAfterBanner: true }], mailboxes: ["bob"] },
  {
    name: "blockconn.test",
    hosts: [
      {
        name: "mx.blockconn.test",
        connectReply: {
          code: 554,
          text: "5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org",
        },
      },
    ],
    mailboxes: ["bob"],
  },
  {
    name: "blockrcpt.test",
    hosts: [
      {
        name: "mx.blockrcpt.test",
        rcptReply: { code: 550, text: "5.7.606 Access denied, banned sending IP [127.0.0.1]." },
      },
    ],
    mailboxes: ["bob"],
  },
  {
    name: "policy.test",
    hosts: [
      {
        name: "mx.policy.test",
        rcptReply: { code: 550, text: "5.7.1 Recipient address rejected: Access denied by policy" },
      },
    ],
    mailboxes: ["bob"],
  },
  {
    name: "ratelimit.test",
    hosts: [{ name: "mx.ratelimit.test", rateLimitAfterConnections: 0 }],
    mailboxes: ["bob"],
  },
  { name: "limit.test", hosts: [{ name: "mx.limit.test", maxRcptPerMessage: 4 }], mailboxes: users(10) },
  { name: "noptr.test", hosts: [{ name: "mx.noptr.test", hasPtr: false }], mailboxes: ["bob"] },
  {
    name: "google.test",
    hosts: [{ name: "aspmx.l.google.com", kind: "google", preference: 1 }],
    mailboxes: ["bob"],
  },
  { name: "exim.test", hosts: [{ name: "mail.exim.test", kind: "exim" }], mailboxes: ["bob"] },
  { name: "generic.test", hosts: [{ name: "smtp.generic.test", kind: "generic" }], mailboxes: ["bob"] },
  { name: "yahoo.test", hosts: [{ name: "mta5.am0.yahoodns.net", kind: "yahoo" }], mailboxes: ["bob"] },
  {
    name: "outlook.test",
    hosts: [{ name: "outlook-test.olc.protection.outlook.com", kind: "outlook" }],
    mailboxes: ["bob"],
  },
  {
    name: "pp.test",
    hosts: [{ name: "mx0a-00000001.pphosted.com", kind: "proofpoint" }],
    mailboxes: ["bob"],
  },
  {
    name: "mimecast.test",
    hosts: [{ name: "eu-smtp-inbound-1.mimecast.com", kind: "mimecast" }],
    mailboxes: ["bob"],
  },
  {
    name: "m365.test",
    hosts: [{ name: "m365-test.mail.protection.outlook.com", kind: "microsoft365" }],
    mailboxes: ["bob"],
  },
  {
    name: "m365all.test",
    hosts: [{ name: "m365all-test.mail.protection.outlook.com", kind: "microsoft365" }],
    catchAll: true,
  },
  { name: "pipe.test", hosts: [{ name: "mx.pipe.test", latencyMs: 25 }], mailboxes: users(60) },
  { name: "deadline.test", hosts: [{ name: "mx.deadline.test", bannerDelayMs: 12_000 }], mailboxes: ["bob"] },
  { name: "cache.test", hosts: [{ name: "mx.cache.test" }], mailboxes: ["bob", "ann"] },
  { name: "gate.test", hosts: [{ name: "mx.gate.test" }], mailboxes: ["bob"] },
];

let world: MailWorld;
const engines: Engine[] = [];
/** A fresh engine per test: no cache carries over between behaviours. */
const newEngine = (
  ...args: Parameters<typeof engineFor> extends [unknown, ...infer R] ? R : never
): Engine => {
  const engine = engineFor(world, ...args);
  engines.push(engine);
  return engine;
};

before(async () => {
  world = await startMailWorld({ domains: DOMAINS });
});
after(async () => {
  await Promise.all(engines.map((e) => e.close()));
  await world.close();
});

void test("known user → valid", async () => {
  const r = await newEngine().verifyOne("Bob@Known.test");
  assert.equal(r.email, "bob@known.test");
  assert.equal(r.domainName, "known.test");
  assert.deepEqual(
    facts(r),
    expected({ status: "valid", hostName: "mx1.known.test", serverType: "postfix" }),
  );
});

void test("unknown user → invalid (Postfix 550 5.1.1 User unknown)", async () => {
  const r = await newEngine().verifyOne("nobody.here@known.test");
  assert.deepEqual(
    facts(r),
    expected({ status: "invalid", hostName: "mx1.known.test", serverType: "postfix" }),
  );
});

void test("role account is flagged and still verified", async () => {
  const r = await newEngine().verifyOne("info@known.test");
  assert.deepEqual(
    facts(r),
    expected({ status: "valid", isRoleBased: true, hostName: "mx1.known.test", serverType: "postfix" }),
  );
});

void test("mailbox full → valid (the mailbox exists); disabled → invalid", async () => {
  const [full, gone] = await newEngine().verifyGroup("known.test", ["full@known.test", "gone@known.test"]);
  assert.deepEqual(
    facts(full!),
    expected({ status: "valid", hostName: "mx1.known.test", serverType: "postfix" }),
  );
  assert.deepEqual(
    facts(gone!),
    expected({ status: "invalid", hostName: "mx1.known.test", serverType: "postfix" }),
  );
});

void test("disposable domain → disposable_domain without DNS or SMTP", async () => {
  const r = await newEngine().verifyOne("someone@mailinator.com");
  assert.deepEqual(
    facts(r),
    expected({ status: "disposable_domain", isDisposable: true, hasMxRecords: false, hasReverseDns: false }),
  );
});

void test("catch-all domain → catchall", async () => {
  const r = await newEngine().verifyOne("anyone@catchall.test");
  assert.deepEqual(
    facts(r),
    expected({ status: "catchall", isCatchall: true, hostName: "mx.catchall.test", serverType: "postfix" }),
  );
});

void test("A-only domain → implicit MX on the domain itself", async () => {
  const r = await newEngine().verifyOne("bob@aonly.test");
  assert.deepEqual(
    facts(r),
    expected({ status: "valid", hasMxRecords: false, hostName: "aonly.test", serverType: "postfix" }),
  );
});

void test("null MX (RFC 7505) → invalid, no MX records", async () => {
  const r = await newEngine().verifyOne("bob@nullmx.test");
  assert.deepEqual(facts(r), expected({ status: "invalid", hasMxRecords: false, hasReverseDns: false }));
});

void test("NXDOMAIN and a name without records → invalid", async () => {
  const engine = newEngine();
  for (const address of ["bob@nx.test", "bob@norecords.test"]) {
    assert.deepEqual(
      facts(await engine.verifyOne(address)),
      expected({ status: "invalid", hasMxRecords: false, hasReverseDns: false }),
      address,
    );
  }
});

void test("MX whose hosts have no address → invalid, but MX records exist", async () => {
  const r = await newEngine().verifyOne("bob@noaddr.test");
  assert.deepEqual(facts(r), expected({ status: "invalid", hasMxRecords: true, hasReverseDns: false }));
});

void test("SERVFAIL → unknown dns_error", async () => {
  const r = await newEngine().verifyOne("bob@servfail.test");
  assert.deepEqual(
    facts(r),
    expected({ status: "unknown", unknownReason: "dns_error", hasMxRecords: false, hasReverseDns: false }),
  );
});

void test("DNS server never answers → unknown dns_timeout", async () => {
  const r = await newEngine().verifyOne("bob@dnstimeout.test");
  assert.deepEqual(
    facts(r),
    expected({ status: "unknown", unknownReason: "dns_timeout", hasMxRecords: false, hasReverseDns: false }),
  );
});

void test("primary refuses connections → the secondary MX answers", async () => {
  const r = await newEngine().verifyOne("bob@fallback.test");
  assert.deepEqual(
    facts(r),
    expected({ status: "valid", hostName: "mx2.fallback.test", serverType: "postfix" }),
  );
  assert.equal(world.counters("mx2.fallback.test").connections, 1);
});

void test("every host refuses → unknown connection_failed", async () => {
  const r = await newEngine().verifyOne("bob@refused.test");
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "connection_failed",
      hostName: "mx.refused.test",
      serverType: "unknown",
    }),
  );
});

void test("every host times out at connect → unknown port25_blocked (our egress is filtered)", async () => {
  // A black hole: the connect never completes; only our connect timeout (an abort) ends it.
  const connect: ConnectPort = {
    connect: (_host, _port, signal) =>
      new Promise((_resolve, reject) =>
        signal.addEventListener("abort", () => reject(new AbortedError()), { once: true }),
      ),
  };
  const r = await newEngine({ smtpConnectTimeoutMs: 150 }, { connect }).verifyOne("bob@fallback.test");
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "port25_blocked",
      hostName: "mx2.fallback.test",
      serverType: "unknown",
    }),
  );
});

void test("greylisting → unknown greylisted, and no immediate reconnect", async () => {
  const before = world.counters("mx.grey.test").connections;
  const r = await newEngine().verifyOne("bob@grey.test");
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "greylisted",
      hostName: "mx.grey.test",
      serverType: "postfix",
    }),
  );
  assert.equal(world.counters("mx.grey.test").connections - before, 1);
});

void test("tarpit (banner later than the greeting timeout) → unknown smtp_timeout", async () => {
  const started = Date.now();
  const r = await newEngine({ smtpGreetingTimeoutMs: 400 }).verifyOne("bob@tarpit.test");
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "smtp_timeout",
      hostName: "mx.tarpit.test",
      serverType: "unknown",
    }),
  );
  assert.ok(Date.now() - started < 3000);
});

void test("connection dropped after the banner → unknown connection_dropped", async () => {
  const r = await newEngine().verifyOne("bob@drop.test");
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "connection_dropped",
      hostName: "mx.drop.test",
      serverType: "postfix",
    }),
  );
});

void test("blocklisted at connect (554 Spamhaus instead of a banner) → unknown ip_blocklisted", async () => {
  const r = await newEngine().verifyOne("bob@blockconn.test");
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "ip_blocklisted",
      hostName: "mx.blockconn.test",
      serverType: "unknown",
    }),
  );
});

void test("blocklisted at RCPT (550 5.7.606 banned sending IP) → unknown ip_blocklisted, never invalid", async () => {
  const results = await newEngine().verifyGroup("blockrcpt.test", [
    "bob@blockrcpt.test",
    "ghost@blockrcpt.test",
  ]);
  for (const r of results) {
    assert.deepEqual(
      facts(r),
      expected({
        status: "unknown",
        unknownReason: "ip_blocklisted",
        hostName: "mx.blockrcpt.test",
        serverType: "postfix",
      }),
    );
  }
});

void test("policy rejection at RCPT (550 5.7.1 ... by policy) → unknown policy_rejection", async () => {
  const r = await newEngine().verifyOne("ghost@policy.test");
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "policy_rejection",
      hostName: "mx.policy.test",
      serverType: "postfix",
    }),
  );
});

void test("421 too many connections at connect → unknown rate_limited", async () => {
  const r = await newEngine().verifyOne("bob@ratelimit.test");
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "rate_limited",
      hostName: "mx.ratelimit.test",
      serverType: "unknown",
    }),
  );
});

void test("452 after 4 RCPTs: the group is still fully answered with shrunken transactions", async () => {
  world.resetCounters();
  const addresses = [...users(10), ...Array.from({ length: 10 }, (_, i) => `ghost${i.toString()}`)].map(
    (l) => `${l}@limit.test`,
  );
  const results = await newEngine().verifyGroup("limit.test", addresses);
  assert.deepEqual(
    results.map((r) => r.status),
    addresses.map((a) => (a.startsWith("user") ? "valid" : "invalid")),
  );
  const c = world.counters("mx.limit.test");
  // control + probe + 20 addresses; 11 rejections (probe and ghosts) exceed one connection's
  // error budget of 9, so a second connection finishes the group.
  assert.equal(c.connections, 2);
  for (const errors of c.errorsPerSession) assert.ok(errors <= 9, `errors ${errors.toString()}`);
});

void test("no PTR for the mail host → has_reverse_dns false", async () => {
  const r = await newEngine().verifyOne("bob@noptr.test");
  assert.deepEqual(
    facts(r),
    expected({ status: "valid", hasReverseDns: false, hostName: "mx.noptr.test", serverType: "postfix" }),
  );
});

void test("server types from MX names and banners, with each persona's unknown-user reply classified", async () => {
  const engine = newEngine();
  const cases: [
    domain: string,
    host: string,
    type: string,
    bobStatus: string,
    needsPhysicalVerify: boolean,
  ][] = [
    ["google.test", "aspmx.l.google.com", "google", "valid", false],
    ["exim.test", "mail.exim.test", "exim", "valid", false],
    // The generic persona answers unknown users in Postfix's words ("User unknown in virtual mailbox table").
    ["generic.test", "smtp.generic.test", "postfix", "valid", false],
    ["yahoo.test", "mta5.am0.yahoodns.net", "yahoo", "valid", false],
    ["outlook.test", "outlook-test.olc.protection.outlook.com", "outlook", "valid", false],
    ["pp.test", "mx0a-00000001.pphosted.com", "proofpoint", "valid", false],
    ["mimecast.test", "eu-smtp-inbound-1.mimecast.com", "mimecast", "valid", false],
  ];
  for (const [domain, host, serverType, status] of cases) {
    const [bob, ghost] = await engine.verifyGroup(domain, [`bob@${domain}`, `ghost@${domain}`]);
    assert.deepEqual(
      facts(bob!),
      expected({ status: status as "valid", hostName: host, serverType }),
      domain,
    );
    assert.deepEqual(facts(ghost!), expected({ status: "invalid", hostName: host, serverType }), domain);
  }
});

void test("Microsoft 365 with edge blocking: its 5.4.1 rejection of the probe makes accepts meaningful", async () => {
  const [bob, ghost] = await newEngine().verifyGroup("m365.test", ["bob@m365.test", "ghost@m365.test"]);
  const host = "m365-test.mail.protection.outlook.com";
  assert.deepEqual(facts(bob!), expected({ status: "valid", hostName: host, serverType: "microsoft365" }));
  assert.deepEqual(
    facts(ghost!),
    expected({ status: "invalid", hostName: host, serverType: "microsoft365" }),
  );
});

void test("Microsoft 365 accepting everything → catchall + needs_physical_verify", async () => {
  const r = await newEngine().verifyOne("bob@m365all.test");
  assert.deepEqual(
    facts(r),
    expected({
      status: "catchall",
      isCatchall: true,
      needsPhysicalVerify: true,
      hostName: "m365all-test.mail.protection.outlook.com",
      serverType: "microsoft365",
    }),
  );
});

void test("PIPELINING: 120 addresses, half of them dead, within the error budget of each connection", async () => {
  world.resetCounters();
  const addresses = Array.from({ length: 120 }, (_, i) => `user${i.toString()}@pipe.test`);
  const results = await newEngine().verifyGroup("pipe.test", addresses);
  assert.equal(results.length, 120);
  assert.deepEqual(
    results.map((r) => r.status),
    addresses.map((_, i) => (i < 60 ? "valid" : "invalid")),
  );
  const c = world.counters("mx.pipe.test");
  // control + probe + 120 = 122 RCPTs; 61 rejections at ≤ 9 per connection = 7 connections,
  // one after the other.
  assert.equal(
    c.rcptPerSession.reduce((a, b) => a + b, 0),
    122,
  );
  assert.equal(c.connections, 7);
  assert.equal(c.maxConcurrent, 1);
  for (const errors of c.errorsPerSession) assert.ok(errors <= 9, `errors ${errors.toString()}`);
});

void test("deadline during SMTP → partial unknown timeout_smtp with the known facts", async () => {
  const deadline = new AbortController();
  setTimeout(() => deadline.abort(), 300);
  const started = Date.now();
  const r = await newEngine().verifyOne("bob@deadline.test", { signal: deadline.signal });
  assert.ok(Date.now() - started < 1000);
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "timeout_smtp",
      hostName: "mx.deadline.test",
      serverType: "unknown",
      hasReverseDns: true,
    }),
  );
});

void test("deadline during DNS → partial unknown timeout_dns", async () => {
  const deadline = new AbortController();
  setTimeout(() => deadline.abort(), 100);
  const r = await newEngine({ dnsTimeoutMs: 2000 }).verifyOne("bob@dnstimeout.test", {
    signal: deadline.signal,
  });
  assert.deepEqual(
    facts(r),
    expected({ status: "unknown", unknownReason: "timeout_dns", hasMxRecords: false, hasReverseDns: false }),
  );
});

void test("the catch-all verdict is cached: the second session sends no probe", async () => {
  world.resetCounters();
  const engine = newEngine();
  assert.equal((await engine.verifyOne("bob@cache.test")).status, "valid");
  assert.equal((await engine.verifyOne("ann@cache.test")).status, "valid");
  // control + probe + bob, then ann alone: the control's and the probe's answers are cached too.
  // ann's transaction runs on the connection bob's session left idle.
  const c = world.counters("mx.cache.test");
  assert.deepEqual(c.rcptPerSession, [4]);
  assert.equal(Object.keys(c.rcptByAddress).length, 4);
  assert.ok(
    Object.values(c.rcptByAddress).every((n) => n === 1),
    "each address asked once",
  );
});

void test("the host gate is acquired per server IP before connecting and released after QUIT", async () => {
  const events: string[] = [];
  const hostGate = {
    acquire: async (host: string) => {
      events.push(`acquire ${host}`);
      return () => events.push(`release ${host}`);
    },
  };
  const engine = newEngine({}, { hostGate });
  assert.equal((await engine.verifyOne("bob@gate.test")).status, "valid");
  await engine.close();
  const ip = world.addressOf("mx.gate.test");
  assert.deepEqual(events, [`acquire ${ip}`, `release ${ip}`]);
  // The server sees the close a moment after we do.
  for (let i = 0; i < 100 && world.counters("mx.gate.test").concurrent > 0; i++)
    await new Promise((r) => setTimeout(r, 10));
  assert.equal(world.counters("mx.gate.test").concurrent, 0);
});
