// Tests of the mail-world simulator itself: its DNS answers through Node's resolver (the one the
// engine uses) and its SMTP behaviours through a raw socket client.

import assert from "node:assert/strict";
import { promises as dnsPromises } from "node:dns";
import { after, before, describe, test } from "node:test";

import { TCPClient } from "dns2";

import {
  DEFAULT_MIX,
  STOCK_MIX,
  STOCK_REPLIES,
  createExpectation,
  generateMixedWorld,
  startMailWorld,
  tenantFrontEnd,
} from "../support/mail-world/index.ts";
import type { DomainSpec, MailWorld, WorldSpec } from "../support/mail-world/index.ts";
import { errorLimits } from "../support/mail-world/rules.ts";
import { RawSmtp } from "../support/raw-smtp.ts";

const SPAMHAUS = "5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org";

const SPEC: WorldSpec = {
  domains: [
    {
      name: "acme.test",
      // Listed out of preference order on purpose: the MX answer must sort them.
      hosts: [
        { name: "mx2.acme.test", preference: 20, hasPtr: false },
        { name: "mx1.acme.test", preference: 10 },
      ],
      mailboxes: ["alice", "Bob"],
      fullMailboxes: ["full"],
      disabledMailboxes: ["gone"],
    },
    { name: "gmail-like.test", hosts: [{ name: "aspmx.l.google.com", preference: 1, kind: "google" }] },
    { name: "catch.test", hosts: [{ name: "mx.catch.test" }], catchAll: true },
    { name: "grey.test", hosts: [{ name: "mx.grey.test" }], mailboxes: ["alice"], greylistSeconds: 1 },
    {
      name: "limit.test",
      hosts: [{ name: "mx.limit.test", maxRcptPerMessage: 2 }],
      mailboxes: ["a", "b", "c"],
    },
    { name: "block.test", hosts: [{ name: "mx.block.test", connectReply: { code: 554, text: SPAMHAUS } }] },
    {
      name: "rcptblock.test",
      hosts: [{ name: "mx.rcptblock.test", rcptReply: { code: 550, text: "5.7.1 Client host rejected" } }],
    },
    { name: "drop.test", hosts: [{ name: "mx.drop.test", dropAfterBanner: true }] },
    { name: "refused.test", hosts: [{ name: "mx.refused.test", refuseConnections: true }] },
    { name: "rate.test", hosts: [{ name: "mx.rate.test", rateLimitAfterConnections: 1 }], mailboxes: ["a"] },
    { name: "slow.test", hosts: [{ name: "mx.slow.test", latencyMs: 150 }], mailboxes: ["a", "b", "c"] },
    { name: "tarpit.test", hosts: [{ name: "mx.tarpit.test", bannerDelayMs: 400 }] },
    { name: "counted.test", hosts: [{ name: "mx.counted.test" }], mailboxes: ["a"] },
    { name: "aonly.test", dns: "a_only", hosts: [{ name: "aonly.test" }] },
    { name: "noaddr.test", hosts: [{ name: "mx.noaddr.test", hasAddress: false }] },
    { name: "null.test", dns: "null_mx" },
    { name: "nx.test", dns: "nxdomain" },
    { name: "empty.test", dns: "no_records" },
    { name: "sf.test", dns: "servfail" },
    { name: "to.test", dns: "timeout" },
    // Stock behaviours of real mail software.
    { name: "nopm.test", hosts: [{ name: "mx.nopm.test" }], mailboxes: ["a"], rejectPostmaster: true },
    {
      name: "errors.test",
      hosts: [{ name: "mx.errors.test", softErrorLimit: 3, errorSleepMs: 200, hardErrorLimit: 5 }],
      mailboxes: ["a"],
    },
    {
      name: "cap.test",
      hosts: [{ name: "mx.cap.test", maxRcptPerConnection: 3 }],
      mailboxes: ["a", "b", "c", "d"],
    },
    { name: "tls.test", hosts: [{ name: "mx.tls.test", startTls: "offer" }], mailboxes: ["a"] },
    {
      name: "tlsreq.test",
      hosts: [{ name: "mx.tlsreq.test", startTls: "require", latencyMs: 30 }],
      mailboxes: ["a"],
    },
    {
      name: "pg.test",
      hosts: [{ name: "mx.pg.test" }],
      mailboxes: ["alice"],
      greylistSeconds: 300,
      greylistStyle: "postgrey",
    },
    { name: "hint.test", hosts: [{ name: "mx.hint.test" }], greylistSeconds: 30, greylistStyle: "hint" },
    {
      name: "greytext.test",
      hosts: [{ name: "mx.greytext.test" }],
      greylistSeconds: 120,
      greylistText: "4.7.1 Come back in %s seconds (%r)",
    },
    {
      name: "rbl.test",
      hosts: [{ name: "mx.rbl.test", blockExceptPostmaster: STOCK_REPLIES.spamhausBlock }],
      mailboxes: ["alice"],
    },
    {
      name: "silent.test",
      hosts: [
        {
          name: "mx.silent.test",
          kind: "exim",
          blockExceptPostmaster: STOCK_REPLIES.eximAdministrativeProhibition,
        },
      ],
      mailboxes: ["alice"],
    },
    {
      name: "eximstock.test",
      hosts: [{ name: "mx.eximstock.test", kind: "exim", unknownUserReply: STOCK_REPLIES.eximUnrouteable }],
      mailboxes: ["a"],
    },
    {
      name: "ironport.test",
      hosts: [{ name: "mx.ironport.test", unknownUserReply: STOCK_REPLIES.eximUnrouteable }],
      mailboxes: ["a"],
      // The domain's wording wins over the host's.
      unknownUserReply: STOCK_REPLIES.ironportRejected,
    },
    {
      name: "osmtpd.test",
      hosts: [{ name: "mx.osmtpd.test", kind: "opensmtpd" }],
      mailboxes: ["a"],
    },
    {
      name: "oinvalid.test",
      hosts: [{ name: "mx.oinvalid.test", kind: "opensmtpd" }],
      mailboxes: ["a"],
      unknownUserReply: STOCK_REPLIES.opensmtpdInvalid,
    },
    { name: "exch.test", hosts: [{ name: "mx.exch.test", kind: "exchange" }], mailboxes: ["a"] },
    { name: "strict.test", hosts: [{ name: "mx.strict.test" }], mailboxes: ["a"] },
    // Overlays: per-recipient refusals, recipients that end the connection, front ends.
    {
      name: "sblock.test",
      hosts: [{ name: "mx.sblock.test", kind: "mimecast" }],
      mailboxes: ["alice"],
      senderBlockedMailboxes: ["bob"],
    },
    {
      name: "barracuda.test",
      hosts: [{ name: "mx.barracuda.test" }],
      mailboxes: ["alice", "carol"],
      senderBlockedMailboxes: ["carol"],
      senderBlockReply: STOCK_REPLIES.barracudaBlocked,
    },
    {
      name: "busy.test",
      hosts: [{ name: "mx.busy.test", kind: "google" }],
      mailboxes: ["alice", "bob"],
      busyMailboxes: ["bob"],
    },
    {
      name: "gw.test",
      hosts: [{ name: "mx.gw.test", kind: "google", latencyMs: 20 }],
      mailboxes: ["a", "b", "c"],
      closeOnRcpt: [
        { local: "culprit", action: "421" },
        { local: "dropper", action: "drop" },
      ],
    },
    ...tenantFrontEnd({
      tenants: 3,
      label: "fe1.protection.outlook.test",
      domainPrefix: "fe-tenant",
      mailboxesPerTenant: 2,
      frontEndMaxConnections: 3,
    }),
  ],
};

const FRONT_END = "fe1.protection.outlook.test";
const TENANT_MX = [1, 2, 3].map((i) => `fe-tenant${i.toString()}-test.mail.protection.outlook.test`);

let world: MailWorld;
let resolver: dnsPromises.Resolver;

before(async () => {
  world = await startMailWorld(SPEC);
  resolver = new dnsPromises.Resolver({ timeout: 500, tries: 1 });
  resolver.setServers([`${world.dns.host}:${world.dns.port.toString()}`]);
});

after(async () => {
  await world.close();
});

async function rejectsWithCode(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (error: NodeJS.ErrnoException) => {
    assert.equal(error.code, code);
    return true;
  });
}

/** Opens a session, checks the banner, says EHLO and starts a transaction. */
async function transaction(host: string, from = "probe@verifier.test"): Promise<RawSmtp> {
  const client = await RawSmtp.open(world, host);
  assert.equal((await client.reply()).code, 220);
  assert.equal((await client.command("EHLO verifier.test")).code, 250);
  assert.equal((await client.command(`MAIL FROM:<${from}>`)).code, 250);
  return client;
}

async function rcptCodes(host: string, recipients: string[]): Promise<number[]> {
  const client = await transaction(host);
  const codes: number[] = [];
  for (const r of recipients) codes.push((await client.command(`RCPT TO:<${r}>`)).code);
  await client.command("QUIT");
  client.destroy();
  return codes;
}

// ---------------------------------------------------------------------------------------------

describe("DNS", () => {
  test("MX records come sorted by preference, names are case-insensitive with a trailing dot", async () => {
    assert.deepEqual(await resolver.resolveMx("ACME.Test."), [
      { exchange: "mx1.acme.test", priority: 10 },
      { exchange: "mx2.acme.test", priority: 20 },
    ]);
  });

  test("null MX is a single record with preference 0 and an empty exchange", async () => {
    assert.deepEqual(await resolver.resolveMx("null.test"), [{ exchange: "", priority: 0 }]);
  });

  test("A records point at the host's loopback address; AAAA has no data", async () => {
    const address = world.addressOf("mx1.acme.test");
    assert.match(address, /^127\.0\.\d+\.\d+$/);
    assert.deepEqual(await resolver.resolve4("mx1.acme.test"), [address]);
    assert.notEqual(world.addressOf("mx2.acme.test"), address);
    await rejectsWithCode(resolver.resolve6("mx1.acme.test"), "ENODATA");
  });

  test("a_only domain: no MX (NODATA), an A record at hosts[0]'s address", async () => {
    await rejectsWithCode(resolver.resolveMx("aonly.test"), "ENODATA");
    assert.deepEqual(await resolver.resolve4("aonly.test"), [world.addressOf("aonly.test")]);
  });

  test("PTR exists for a host by default and is absent with hasPtr: false", async () => {
    assert.deepEqual(await resolver.reverse(world.addressOf("mx1.acme.test")), ["mx1.acme.test"]);
    await rejectsWithCode(resolver.reverse(world.addressOf("mx2.acme.test")), "ENOTFOUND");
  });

  test("nxdomain domains and unknown names are NXDOMAIN (ENOTFOUND)", async () => {
    await rejectsWithCode(resolver.resolveMx("nx.test"), "ENOTFOUND");
    await rejectsWithCode(resolver.resolve4("not-in-the-world.test"), "ENOTFOUND");
  });

  test("an MX host without address has no A record", async () => {
    assert.deepEqual(await resolver.resolveMx("noaddr.test"), [{ exchange: "mx.noaddr.test", priority: 10 }]);
    await rejectsWithCode(resolver.resolve4("mx.noaddr.test"), "ENOTFOUND");
    assert.throws(() => world.addressOf("mx.noaddr.test"));
  });

  test("no_records domains answer NODATA for MX and A", async () => {
    await rejectsWithCode(resolver.resolveMx("empty.test"), "ENODATA");
    await rejectsWithCode(resolver.resolve4("empty.test"), "ENODATA");
  });

  test("servfail domains answer SERVFAIL", async () => {
    await rejectsWithCode(resolver.resolveMx("sf.test"), "ESERVFAIL");
  });

  test("timeout domains get no answer at all", async () => {
    const started = Date.now();
    await rejectsWithCode(resolver.resolveMx("to.test"), "ETIMEOUT");
    assert.ok(Date.now() - started >= 400, "the resolver should have waited for its timeout");
  });

  test("the same port answers over TCP", async () => {
    const query = TCPClient({ dns: world.dns.host, port: world.dns.port });
    const response = await query("acme.test", "MX");
    assert.deepEqual(
      response.answers.map((a) => [a.priority, a.exchange]),
      [
        [10, "mx1.acme.test"],
        [20, "mx2.acme.test"],
      ],
    );
  });
});

describe("SMTP", () => {
  test("banner and EHLO follow the host's kind and advertise PIPELINING, not AUTH/STARTTLS", async () => {
    const client = await RawSmtp.open(world, "mx1.acme.test");
    assert.equal((await client.reply()).lines[0], "220 mx1.acme.test ESMTP Postfix");
    const ehlo = await client.command("EHLO verifier.test");
    assert.equal(ehlo.code, 250);
    assert.equal(ehlo.lines[0], "250-mx1.acme.test");
    assert.ok(ehlo.text.split("\n").includes("PIPELINING"), ehlo.text);
    assert.doesNotMatch(ehlo.text, /AUTH|STARTTLS/);
    client.destroy();

    const google = await RawSmtp.open(world, "aspmx.l.google.com");
    assert.match((await google.reply()).lines[0] ?? "", /^220 aspmx\.l\.google\.com ESMTP .* - gsmtp$/);
    google.destroy();
  });

  test("RCPT: known 250, full 552, disabled 550 5.2.1, unknown 550 5.1.1, case-insensitive", async () => {
    const client = await transaction("mx1.acme.test");
    const known = await client.command("RCPT TO:<Alice@ACME.test>");
    assert.equal(known.code, 250);
    assert.match(known.text, /^2\.1\.5/);
    assert.equal((await client.command("RCPT TO:<bob@acme.test>")).code, 250);
    const full = await client.command("RCPT TO:<full@acme.test>");
    assert.deepEqual([full.code, full.text.slice(0, 5)], [552, "5.2.2"]);
    const disabled = await client.command("RCPT TO:<gone@acme.test>");
    assert.deepEqual([disabled.code, disabled.text.slice(0, 5)], [550, "5.2.1"]);
    const unknown = await client.command("RCPT TO:<nobody@acme.test>");
    assert.equal(unknown.code, 550);
    assert.match(unknown.text, /^5\.1\.1 <nobody@acme\.test>: Recipient address rejected: User unknown/);
    client.destroy();
  });

  test("google kind rejects an unknown user with a multi-line 550-5.1.1", async () => {
    const client = await transaction("aspmx.l.google.com");
    const reply = await client.command("RCPT TO:<nobody@gmail-like.test>");
    assert.equal(reply.code, 550);
    assert.ok(reply.lines.length > 1);
    assert.match(
      reply.lines[0] ?? "",
      /^550-5\.1\.1 The email account that you tried to reach does not exist/,
    );
    client.destroy();
  });

  test("catch-all accepts any recipient; a foreign domain is relay-denied", async () => {
    assert.deepEqual(await rcptCodes("mx.catch.test", ["x7q@catch.test", "foo@other.test"]), [250, 554]);
  });

  test("greylisting: 451 until greylistSeconds have passed since the first attempt", async () => {
    assert.deepEqual(await rcptCodes("mx.grey.test", ["alice@grey.test"]), [451]);
    assert.deepEqual(await rcptCodes("mx.grey.test", ["alice@grey.test"]), [451]);
    // Another sender is another triplet: greylisted on its own.
    const other = await transaction("mx.grey.test", "other@verifier.test");
    assert.equal((await other.command("RCPT TO:<alice@grey.test>")).code, 451);
    other.destroy();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    assert.deepEqual(await rcptCodes("mx.grey.test", ["alice@grey.test", "nobody@grey.test"]), [250, 451]);
    // A later pass of the same triplet is not recorded again.
    assert.deepEqual(await rcptCodes("mx.grey.test", ["alice@grey.test"]), [250]);
    const passed = world.counters("mx.grey.test").greylistPassed;
    assert.equal(passed.length, 1);
    assert.deepEqual([passed[0]?.recipient, passed[0]?.sender], ["alice@grey.test", "probe@verifier.test"]);
    const waited = (passed[0]?.passedAt ?? 0) - (passed[0]?.firstAttemptAt ?? 0);
    assert.ok(waited >= 1000 && waited < 3000, `passed after ${waited.toString()} ms`);
  });

  test("maxRcptPerMessage: 452 4.5.3 beyond K, a new transaction starts over", async () => {
    const client = await transaction("mx.limit.test");
    assert.equal((await client.command("RCPT TO:<a@limit.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<zz@limit.test>")).code, 550);
    const over = await client.command("RCPT TO:<c@limit.test>");
    assert.deepEqual([over.code, over.text], [452, "4.5.3 Too many recipients"]);
    assert.equal((await client.command("RSET")).code, 250);
    assert.equal((await client.command("MAIL FROM:<probe@verifier.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<c@limit.test>")).code, 250);
    client.destroy();
  });

  test("rcptReply replaces the mailbox logic", async () => {
    const client = await transaction("mx.rcptblock.test");
    const reply = await client.command("RCPT TO:<anyone@rcptblock.test>");
    assert.deepEqual([reply.code, reply.text], [550, "5.7.1 Client host rejected"]);
    client.destroy();
  });

  test("connectReply is sent instead of the banner, then the connection closes", async () => {
    const client = await RawSmtp.open(world, "mx.block.test");
    const reply = await client.reply();
    assert.deepEqual([reply.code, reply.text], [554, SPAMHAUS]);
    await client.waitClosed();
  });

  test("dropAfterBanner: a 220 banner, then the connection closes", async () => {
    const client = await RawSmtp.open(world, "mx.drop.test");
    assert.equal((await client.reply()).code, 220);
    await client.waitClosed();
    assert.ok(client.isClosed);
  });

  test("refuseConnections: nothing listens at the host's address", async () => {
    await rejectsWithCode(RawSmtp.open(world, "mx.refused.test"), "ECONNREFUSED");
  });

  test("rateLimitAfterConnections: 421 at connect once the limit is used up", async () => {
    const first = await RawSmtp.open(world, "mx.rate.test");
    assert.equal((await first.reply()).code, 220);
    const second = await RawSmtp.open(world, "mx.rate.test");
    const reply = await second.reply();
    assert.equal(reply.code, 421);
    assert.match(reply.text, /^4\.7\.0 .*Too many connections/);
    await second.waitClosed();
    first.destroy();
  });

  test("DATA is always refused with 554 5.7.1 and the session goes on", async () => {
    const client = await transaction("mx1.acme.test");
    assert.equal((await client.command("RCPT TO:<alice@acme.test>")).code, 250);
    const data = await client.command("DATA");
    assert.equal(data.code, 554);
    assert.match(data.text, /^5\.7\.1/);
    assert.equal((await client.command("QUIT")).code, 221);
    await client.waitClosed();
  });

  test("latency delays every reply; pipelined commands are answered after one latency", async () => {
    const started = Date.now();
    const client = await RawSmtp.open(world, "mx.slow.test");
    await client.reply();
    await client.command("EHLO verifier.test");
    const lockStep = Date.now() - started;
    // 100 ms early-talker pause + banner latency + EHLO latency.
    assert.ok(lockStep >= 100 + 2 * 150 - 20, `banner+EHLO took ${lockStep.toString()} ms`);
    const burst = Date.now();
    client.write(
      "MAIL FROM:<p@verifier.test>\r\nRCPT TO:<a@slow.test>\r\nRCPT TO:<b@slow.test>\r\nRCPT TO:<x@slow.test>\r\n",
    );
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) codes.push((await client.reply()).code);
    const pipelined = Date.now() - burst;
    assert.deepEqual(codes, [250, 250, 250, 550]);
    assert.ok(pipelined >= 140 && pipelined < 3 * 150, `pipelined replies took ${pipelined.toString()} ms`);
    client.destroy();
  });

  test("bannerDelayMs holds the banner back (tarpit)", async () => {
    const started = Date.now();
    const client = await RawSmtp.open(world, "mx.tarpit.test");
    assert.equal((await client.reply()).code, 220);
    assert.ok(Date.now() - started >= 400, `banner after ${(Date.now() - started).toString()} ms`);
    client.destroy();
  });

  test("counters: connections, concurrency, commands and RCPT per session", async () => {
    world.resetCounters();
    assert.deepEqual(world.counters("mx.counted.test"), {
      connections: 0,
      concurrent: 0,
      maxConcurrent: 0,
      commands: 0,
      rcptPerSession: [],
      rcptByAddress: {},
      errorsPerSession: [],
      tlsSessions: 0,
      violations: [],
      greylistPassed: [],
      connectionLimitRefusals: 0,
      crossTenantRefusals: 0,
      byClient: {},
    });
    const [one, two] = await Promise.all([transaction("mx.counted.test"), transaction("mx.counted.test")]);
    assert.equal(world.counters("mx.counted.test").concurrent, 2);
    assert.deepEqual(world.counters("mx.counted.test").byClient["127.0.0.1"], {
      connections: 2,
      concurrent: 2,
      maxConcurrent: 2,
      refusals: 0,
    });
    await one.command("RCPT TO:<a@counted.test>");
    await one.command("RCPT TO:<b@counted.test>");
    await one.command("QUIT");
    await two.command("RCPT TO:<a@counted.test>");
    await two.command("NOOP");
    await two.command("QUIT");
    await Promise.all([one.waitClosed(), two.waitClosed()]);
    // The server sees the close a moment after the client does.
    for (let i = 0; i < 100 && world.counters("mx.counted.test").concurrent > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const counters = world.counters("mx.counted.test");
    assert.equal(counters.connections, 2);
    assert.equal(counters.concurrent, 0);
    assert.equal(counters.maxConcurrent, 2);
    // EHLO + MAIL per session (4), then 3 RCPT + NOOP + 2 QUIT.
    assert.equal(counters.commands, 10);
    assert.deepEqual(
      [...counters.rcptPerSession].sort((a, b) => a - b),
      [1, 2],
    );
    assert.deepEqual(counters.rcptByAddress, { "a@counted.test": 2, "b@counted.test": 1 });
    // b@counted.test is unknown: one error reply in that session.
    assert.deepEqual(
      [...counters.errorsPerSession].sort((a, b) => a - b),
      [0, 1],
    );
    assert.deepEqual(counters.violations, []);
    assert.ok(world.allCounters().has("mx.counted.test"));
  });
});

// ---------------------------------------------------------------------------------------------
// Stock behaviours of real mail software.

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until the server has seen the close of every session of a host (its counters lag the client). */
async function settled(host: string): Promise<void> {
  for (let i = 0; i < 100 && world.counters(host).concurrent > 0; i++) await sleep(10);
}

describe("postmaster and abuse (RFC 5321 §4.5.1, RFC 2142)", () => {
  test("postmaster@ is accepted everywhere unless rejectPostmaster; abuse@ per kind", async () => {
    // acme.test lists neither; postfix kind has abuse@ from its stock aliases.
    assert.deepEqual(
      await rcptCodes("mx1.acme.test", ["postmaster@acme.test", "Abuse@acme.test", "nobody@acme.test"]),
      [250, 250, 550],
    );
    // Google: postmaster yes, abuse only if the customer created it.
    assert.deepEqual(
      await rcptCodes("aspmx.l.google.com", ["postmaster@gmail-like.test", "abuse@gmail-like.test"]),
      [250, 550],
    );
    const client = await transaction("mx.nopm.test");
    const refused = await client.command("RCPT TO:<postmaster@nopm.test>");
    assert.equal(refused.code, 550);
    assert.match(refused.text, /^5\.1\.1 <postmaster@nopm\.test>: Recipient address rejected: User unknown/);
    client.destroy();
  });
});

describe("Postfix error limits", () => {
  test("postfixErrorLimits is 10 / 1000 ms / 20; explicit fields win", () => {
    assert.deepEqual(errorLimits({ name: "x", postfixErrorLimits: true }), {
      soft: 10,
      sleepMs: 1000,
      hard: 20,
    });
    assert.deepEqual(errorLimits({ name: "x", postfixErrorLimits: true, hardErrorLimit: 5 }), {
      soft: 10,
      sleepMs: 1000,
      hard: 5,
    });
    assert.equal(errorLimits({ name: "x" }), undefined);
  });

  test("lock-step: every reply sleeps once errors reach the soft limit; RSET does not reset; 421 at the hard limit", async () => {
    world.resetCounters();
    const client = await transaction("mx.errors.test");
    for (const local of ["x1", "x2", "x3"]) {
      assert.equal((await client.command(`RCPT TO:<${local}@errors.test>`)).code, 550);
    }
    // Three errors: from now on every reply, a 250 included, waits errorSleepMs (200 ms).
    let started = Date.now();
    assert.equal((await client.command("RCPT TO:<a@errors.test>")).code, 250);
    assert.equal((await client.command("RSET")).code, 250);
    assert.equal((await client.command("MAIL FROM:<probe@verifier.test>")).code, 250);
    const slept = Date.now() - started;
    assert.ok(slept >= 3 * 200 - 20, `3 replies took ${slept.toString()} ms`);
    // Error 4, then error 5 = the hard limit: its own reply, then an unasked 421, then close.
    assert.equal((await client.command("RCPT TO:<x4@errors.test>")).code, 550);
    started = Date.now();
    const fifth = await client.command("RCPT TO:<x5@errors.test>");
    assert.equal(fifth.code, 550);
    const bye = await client.reply();
    assert.deepEqual([bye.code, bye.text], [421, "4.7.0 mx.errors.test Error: too many errors"]);
    assert.ok(Date.now() - started >= 2 * 200 - 20, "the 421 sleeps too");
    await client.waitClosed();
    await settled("mx.errors.test");
    const counters = world.counters("mx.errors.test");
    assert.deepEqual(counters.errorsPerSession, [5]);
    assert.deepEqual(counters.violations, []);
  });

  test("pipelined: replies are paced one by one, commands behind the 421 are never answered", async () => {
    world.resetCounters();
    const client = await RawSmtp.open(world, "mx.errors.test", { allowHalfOpen: true });
    assert.equal((await client.reply()).code, 220);
    assert.equal((await client.command("EHLO verifier.test")).code, 250);
    const started = Date.now();
    const rcpts = Array.from({ length: 8 }, (_, i) => `RCPT TO:<y${i.toString()}@errors.test>\r\n`).join("");
    client.write(`MAIL FROM:<probe@verifier.test>\r\n${rcpts}`);
    const codes: number[] = [];
    for (let i = 0; i < 7; i++) codes.push((await client.reply()).code);
    // MAIL, 5 RCPT refused (the 4th and 5th after a 200 ms sleep each), the 421 (slept as well).
    assert.deepEqual(codes, [250, 550, 550, 550, 550, 550, 421]);
    const took = Date.now() - started;
    assert.ok(took >= 3 * 200 - 20 && took < 2000, `took ${took.toString()} ms`);
    // Sending after the 421 is a client bug the host records (STARTTLS here: the known trap).
    client.write("STARTTLS\r\n");
    await sleep(100);
    client.destroy();
    await settled("mx.errors.test");
    const counters = world.counters("mx.errors.test");
    assert.deepEqual(counters.errorsPerSession, [5]);
    // All 8 RCPT lines were received; the ones pipelined before the 421 are no violation.
    assert.deepEqual(counters.rcptPerSession, [8]);
    assert.deepEqual(counters.violations, ["STARTTLS after 421"]);
  });
});

describe("per-connection recipient cap", () => {
  test("maxRcptPerConnection counts across transactions; a new connection starts over", async () => {
    const client = await transaction("mx.cap.test");
    assert.equal((await client.command("RCPT TO:<a@cap.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<zz@cap.test>")).code, 550);
    assert.equal((await client.command("RSET")).code, 250);
    assert.equal((await client.command("MAIL FROM:<probe@verifier.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<b@cap.test>")).code, 250);
    const over = await client.command("RCPT TO:<c@cap.test>");
    assert.deepEqual([over.code, over.text], [452, "4.5.3 Too many recipients"]);
    assert.equal((await client.command("RSET")).code, 250);
    assert.equal((await client.command("EHLO verifier.test")).code, 250);
    assert.equal((await client.command("MAIL FROM:<probe@verifier.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<d@cap.test>")).code, 452);
    client.destroy();
    assert.deepEqual(await rcptCodes("mx.cap.test", ["c@cap.test", "d@cap.test"]), [250, 250]);
  });
});

describe("STARTTLS", () => {
  test("offer: advertised in EHLO, optional", async () => {
    const client = await RawSmtp.open(world, "mx.tls.test");
    await client.reply();
    const ehlo = await client.command("EHLO verifier.test");
    assert.ok(ehlo.text.split("\n").includes("STARTTLS"), ehlo.text);
    assert.doesNotMatch(ehlo.text, /REQUIRETLS/);
    assert.equal((await client.command("MAIL FROM:<probe@verifier.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<a@tls.test>")).code, 250);
    client.destroy();
  });

  test("require: 530 5.7.0 before TLS; after the handshake and a new EHLO the session works", async () => {
    world.resetCounters();
    const client = await RawSmtp.open(world, "mx.tlsreq.test");
    assert.equal((await client.reply()).code, 220);
    assert.ok((await client.command("EHLO verifier.test")).text.split("\n").includes("STARTTLS"));
    const mail = await client.command("MAIL FROM:<probe@verifier.test>");
    assert.deepEqual([mail.code, mail.text], [530, "5.7.0 Must issue a STARTTLS command first"]);
    assert.equal((await client.command("RCPT TO:<a@tlsreq.test>")).code, 530);
    const ready = await client.command("STARTTLS");
    assert.deepEqual([ready.code, ready.text], [220, "2.0.0 Ready to start TLS"]);
    const secure = await client.startTls();
    assert.ok(secure.encrypted);
    const ehlo = await client.command("EHLO verifier.test");
    assert.equal(ehlo.code, 250);
    assert.ok(!ehlo.text.split("\n").includes("STARTTLS"), ehlo.text);
    assert.equal((await client.command("MAIL FROM:<probe@verifier.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<a@tlsreq.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<zz@tlsreq.test>")).code, 550);
    // Latency still applies inside TLS (30 ms per reply on this host).
    const started = Date.now();
    assert.equal((await client.command("NOOP")).code, 250);
    assert.ok(Date.now() - started >= 25, "TLS replies are delayed too");
    assert.equal((await client.command("QUIT")).code, 221);
    await client.waitClosed();
    await settled("mx.tlsreq.test");
    const counters = world.counters("mx.tlsreq.test");
    assert.equal(counters.tlsSessions, 1);
    assert.equal(counters.concurrent, 0);
    // 2 x 530 and one 550; RCPT lines are counted on both sides of the handshake.
    assert.deepEqual(counters.errorsPerSession, [3]);
    assert.deepEqual(counters.rcptPerSession, [3]);
    assert.deepEqual(counters.violations, []);
  });
});

describe("greylisting wordings", () => {
  test("postgrey: 450 4.2.0 with its help URL; postmaster@ is not greylisted", async () => {
    const client = await transaction("mx.pg.test");
    const reply = await client.command("RCPT TO:<alice@pg.test>");
    assert.deepEqual(
      [reply.code, reply.text],
      [
        450,
        "4.2.0 <alice@pg.test>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/pg.test.html",
      ],
    );
    assert.equal((await client.command("RCPT TO:<postmaster@pg.test>")).code, 250);
    client.destroy();
  });

  test("hint: the seconds left; greylistText: a template with %s and %r", async () => {
    const first = await transaction("mx.hint.test");
    const reply = await first.command("RCPT TO:<x@hint.test>");
    assert.deepEqual([reply.code, reply.text], [451, "4.7.1 Greylisted, please try again in 30 seconds"]);
    first.destroy();
    const custom = await transaction("mx.greytext.test");
    const text = await custom.command("RCPT TO:<x@greytext.test>");
    assert.deepEqual([text.code, text.text], [451, "4.7.1 Come back in 120 seconds (greytext.test)"]);
    custom.destroy();
  });
});

describe("blocklist with a postmaster exemption", () => {
  test("every RCPT but postmaster/abuse gets the block, existing mailbox or not", async () => {
    const client = await transaction("mx.rbl.test");
    for (const local of ["alice", "nobody"]) {
      const reply = await client.command(`RCPT TO:<${local}@rbl.test>`);
      assert.deepEqual(
        [reply.code, reply.text],
        [STOCK_REPLIES.spamhausBlock.code, STOCK_REPLIES.spamhausBlock.text],
      );
    }
    assert.equal((await client.command("RCPT TO:<postmaster@rbl.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<abuse@rbl.test>")).code, 250);
    client.destroy();
  });

  test("a wording that names no block: Exim's 550 Administrative prohibition", async () => {
    const client = await transaction("mx.silent.test");
    const reply = await client.command("RCPT TO:<alice@silent.test>");
    assert.deepEqual([reply.code, reply.text], [550, "Administrative prohibition"]);
    assert.equal((await client.command("RCPT TO:<postmaster@silent.test>")).code, 250);
    client.destroy();
  });
});

describe("stock unknown-user wordings and personas", () => {
  test("unknownUserReply: Exim's Unrouteable address, also for a random catch-all probe", async () => {
    const client = await transaction("mx.eximstock.test");
    assert.equal((await client.command("RCPT TO:<a@eximstock.test>")).code, 250);
    for (const local of ["nobody", "x7f3kq9z"]) {
      const reply = await client.command(`RCPT TO:<${local}@eximstock.test>`);
      assert.deepEqual([reply.code, reply.text], [550, "Unrouteable address"]);
    }
    client.destroy();
  });

  test("a domain's unknownUserReply wins over its host's; %a is the address", async () => {
    const ironport = await transaction("mx.ironport.test");
    const reply = await ironport.command("RCPT TO:<nobody@ironport.test>");
    assert.deepEqual([reply.code, reply.text], [550, "#5.1.0 Address rejected."]);
    ironport.destroy();
    const invalid = await transaction("mx.oinvalid.test");
    const text = await invalid.command("RCPT TO:<nobody@oinvalid.test>");
    assert.deepEqual([text.code, text.text], [550, "Invalid recipient: <nobody@oinvalid.test>"]);
    invalid.destroy();
  });

  test("opensmtpd: banner, no PIPELINING, 524 5.2.4 for a name missing from its virtual table", async () => {
    const client = await RawSmtp.open(world, "mx.osmtpd.test");
    assert.equal((await client.reply()).lines[0], "220 mx.osmtpd.test ESMTP OpenSMTPD");
    const ehlo = await client.command("EHLO verifier.test");
    assert.match(ehlo.lines[0] ?? "", /^250-mx\.osmtpd\.test Hello \[127\.0\.0\.1\], pleased to meet you$/);
    assert.ok(!ehlo.text.split("\n").includes("PIPELINING"), ehlo.text);
    assert.equal((await client.command("MAIL FROM:<probe@verifier.test>")).text, "2.0.0 Ok");
    const ok = await client.command("RCPT TO:<a@osmtpd.test>");
    assert.deepEqual([ok.code, ok.text], [250, "2.1.5 Destination address valid: Recipient ok"]);
    const unknown = await client.command("RCPT TO:<nobody@osmtpd.test>");
    assert.deepEqual(
      [unknown.code, unknown.text],
      [524, "5.2.4 Mailing list expansion problem: <nobody@osmtpd.test>"],
    );
    client.destroy();
  });

  test("exchange (on premises): banner and 550 5.1.10 RESOLVER.ADR.RecipientNotFound", async () => {
    const client = await RawSmtp.open(world, "mx.exch.test");
    assert.match(
      (await client.reply()).lines[0] ?? "",
      /^220 mx\.exch\.test Microsoft ESMTP MAIL Service ready at \w{3}, \d{2} \w{3} \d{4} /,
    );
    await client.command("EHLO verifier.test");
    await client.command("MAIL FROM:<probe@verifier.test>");
    const reply = await client.command("RCPT TO:<nobody@exch.test>");
    assert.deepEqual(
      [reply.code, reply.text],
      [550, "5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup"],
    );
    client.destroy();
  });
});

describe("per-recipient refusals of mailboxes that exist", () => {
  test("sender block: Mimecast's 550 Envelope blocked - User Entry; other recipients as usual", async () => {
    const client = await transaction("mx.sblock.test");
    assert.equal((await client.command("RCPT TO:<alice@sblock.test>")).code, 250);
    const blocked = await client.command("RCPT TO:<Bob@sblock.test>");
    assert.deepEqual(
      [blocked.code, blocked.text],
      [550, "Envelope blocked - User Entry - https://community.mimecast.com/docs/DOC-1369#550"],
    );
    assert.equal((await client.command("RCPT TO:<nobody@sblock.test>")).code, 550);
    assert.match((await client.command("RCPT TO:<nobody@sblock.test>")).text, /^Invalid Recipient/);
    client.destroy();
  });

  test("sender block with a configured reply: %a is the address", async () => {
    const client = await transaction("mx.barracuda.test");
    const blocked = await client.command("RCPT TO:<carol@barracuda.test>");
    assert.deepEqual(
      [blocked.code, blocked.text],
      [550, "permanent failure for one or more recipients (carol@barracuda.test:blocked)"],
    );
    assert.equal((await client.command("RCPT TO:<alice@barracuda.test>")).code, 250);
    client.destroy();
  });

  test("busy mailbox: Gmail's multi-line 450-4.2.1 for it only, every time", async () => {
    const client = await transaction("mx.busy.test");
    assert.equal((await client.command("RCPT TO:<alice@busy.test>")).code, 250);
    for (let i = 0; i < 2; i++) {
      const busy = await client.command("RCPT TO:<bob@busy.test>");
      assert.equal(busy.code, 450);
      assert.equal(
        busy.lines[0],
        "450-4.2.1 The user you are trying to contact is receiving mail too quickly. Please",
      );
      assert.match(
        busy.lines.at(-1) ?? "",
        /^450 4\.2\.1 {2}https:\/\/support\.google\.com\/mail\/\?p=ReceivingRate \S+ - gsmtp$/,
      );
      assert.equal(busy.lines.length, 5);
    }
    assert.equal((await client.command("RCPT TO:<nobody@busy.test>")).code, 550);
    client.destroy();
  });
});

describe("recipients that end the connection", () => {
  test("421: the culprit gets Google's refusal, the host closes, pipelined commands are not answered", async () => {
    world.resetCounters();
    const client = await RawSmtp.open(world, "mx.gw.test");
    assert.equal((await client.reply()).code, 220);
    assert.equal((await client.command("EHLO verifier.test")).code, 250);
    client.write(
      "MAIL FROM:<probe@verifier.test>\r\nRCPT TO:<a@gw.test>\r\nRCPT TO:<culprit@gw.test>\r\n" +
        "RCPT TO:<b@gw.test>\r\nNOOP\r\n",
    );
    assert.equal((await client.reply()).code, 250);
    assert.equal((await client.reply()).code, 250);
    const refusal = await client.reply();
    assert.deepEqual(
      [refusal.code, refusal.text],
      [421, "4.7.0 IP not in whitelist for RCPT domain, closing connection."],
    );
    await client.waitClosed();
    await assert.rejects(client.reply(), /connection closed; unread: ""/);
    await settled("mx.gw.test");
    const counters = world.counters("mx.gw.test");
    // All three RCPT lines arrived; the one behind the 421 never reached recipient processing.
    assert.deepEqual(counters.rcptPerSession, [3]);
    assert.deepEqual(counters.rcptByAddress, { "a@gw.test": 1, "culprit@gw.test": 1 });
    assert.deepEqual(counters.violations, []);
  });

  test("421: every later connection does the same for the culprit, and only for it", async () => {
    assert.deepEqual(
      await rcptCodes("mx.gw.test", ["b@gw.test", "zz@gw.test", "c@gw.test"]),
      [250, 550, 250],
    );
    const client = await transaction("mx.gw.test");
    assert.equal((await client.command("RCPT TO:<CULPRIT@gw.test>")).code, 421);
    await client.waitClosed();
  });

  test("drop: no reply to the culprit, the connection closes, nothing behind it is answered", async () => {
    const client = await RawSmtp.open(world, "mx.gw.test");
    assert.equal((await client.reply()).code, 220);
    assert.equal((await client.command("EHLO verifier.test")).code, 250);
    client.write(
      "MAIL FROM:<probe@verifier.test>\r\nRCPT TO:<a@gw.test>\r\nRCPT TO:<dropper@gw.test>\r\n" +
        "RCPT TO:<b@gw.test>\r\n",
    );
    assert.equal((await client.reply()).code, 250);
    assert.equal((await client.reply()).code, 250);
    await assert.rejects(client.reply(), /connection closed; unread: ""/);
    assert.ok(client.isClosed);
    // Again on a new connection; the other recipients stay fine.
    assert.deepEqual(await rcptCodes("mx.gw.test", ["c@gw.test"]), [250]);
    const again = await transaction("mx.gw.test");
    again.write("RCPT TO:<dropper@gw.test>\r\n");
    await assert.rejects(again.reply(), /connection closed; unread: ""/);
  });
});

describe("multi-tenant front ends", () => {
  test("every name of a front end resolves to one IP, whose PTR is the front end's label", async () => {
    const address = world.addressOf(FRONT_END);
    for (const name of TENANT_MX) {
      assert.equal(world.addressOf(name), address);
      assert.deepEqual(await resolver.resolve4(name), [address]);
    }
    assert.deepEqual(await resolver.resolveMx("fe-tenant2.test"), [{ exchange: TENANT_MX[1], priority: 0 }]);
    assert.deepEqual(await resolver.reverse(address), [FRONT_END]);
    const client = await RawSmtp.open(world, TENANT_MX[0] ?? "");
    assert.match(
      (await client.reply()).text,
      /^fe1\.protection\.outlook\.test Microsoft ESMTP MAIL Service ready/,
    );
    client.destroy();
  });

  test("one counters object per IP: any name, the label and the address give the same; listed once", async () => {
    world.resetCounters();
    const [one, two] = await Promise.all([
      RawSmtp.open(world, TENANT_MX[0] ?? ""),
      RawSmtp.open(world, TENANT_MX[1] ?? ""),
    ]);
    await Promise.all([one.reply(), two.reply()]);
    const viaName = world.counters(TENANT_MX[2] ?? "");
    assert.equal(viaName.connections, 2);
    assert.deepEqual(world.counters(TENANT_MX[0] ?? ""), viaName);
    assert.deepEqual(world.counters(FRONT_END), viaName);
    assert.deepEqual(world.countersOfAddress(world.addressOf(FRONT_END)), viaName);
    const all = world.allCounters();
    assert.ok(all.has(FRONT_END));
    assert.ok(
      TENANT_MX.every((name) => !all.has(name)),
      "members are not listed on their own",
    );
    assert.equal([...all.values()].filter((c) => c.connections === 2).length, 1);
    one.destroy();
    two.destroy();
    await settled(FRONT_END);
    assert.throws(() => world.countersOfAddress("127.0.0.1"));
  });

  test("the concurrency limit counts every name: one over frontEndMaxConnections gets anvil's 421", async () => {
    world.resetCounters();
    const open = await Promise.all(TENANT_MX.map((name) => RawSmtp.open(world, name)));
    for (const client of open) assert.equal((await client.reply()).code, 220);
    assert.equal(world.counters(FRONT_END).concurrent, 3);
    const over = await RawSmtp.open(world, TENANT_MX[0] ?? "");
    const refusal = await over.reply();
    assert.deepEqual(
      [refusal.code, refusal.text],
      [421, `4.7.0 ${FRONT_END} Error: too many connections from 127.0.0.1`],
    );
    await over.waitClosed();
    for (const client of open) client.destroy();
    await settled(FRONT_END);
    const counters = world.counters(FRONT_END);
    assert.equal(counters.maxConcurrent, 4);
    assert.equal(counters.connections, 4);
    assert.equal(counters.connectionLimitRefusals, 1);
    // Room again once they are closed.
    assert.deepEqual(await rcptCodes(TENANT_MX[1] ?? "", ["user1@fe-tenant2.test"]), [250]);
  });

  test("tenant attribution: another tenant's RCPT is refused in the transaction, served after RSET+MAIL", async () => {
    world.resetCounters();
    const client = await transaction(TENANT_MX[0] ?? "");
    // A refused recipient attributes nothing.
    assert.equal((await client.command("RCPT TO:<nobody@fe-tenant1.test>")).code, 550);
    assert.equal((await client.command("RCPT TO:<user1@fe-tenant2.test>")).code, 250);
    const refused = await client.command("RCPT TO:<user1@fe-tenant1.test>");
    assert.deepEqual(
      [refused.code, refused.text],
      [452, `4.5.3 Recipients belong to multiple regions ATTR38 [${FRONT_END}]`],
    );
    assert.equal((await client.command("RCPT TO:<user2@fe-tenant2.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<user1@fe-tenant3.test>")).code, 452);
    assert.equal((await client.command("RSET")).code, 250);
    assert.equal((await client.command("MAIL FROM:<probe@verifier.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<user1@fe-tenant1.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<nobody@fe-tenant1.test>")).code, 550);
    assert.equal((await client.command("RCPT TO:<user2@fe-tenant2.test>")).code, 452);
    client.destroy();
    await settled(FRONT_END);
    assert.equal(world.counters(FRONT_END).crossTenantRefusals, 3);
  });

  test("a front end's label may not be the name of a host outside it", async () => {
    const clash: DomainSpec[] = [
      { name: "a.test", hosts: [{ name: "shared.test" }] },
      { name: "b.test", hosts: [{ name: "mx.b.test", frontEnd: "shared.test" }] },
    ];
    await assert.rejects(startMailWorld({ domains: clash }), /front end "shared\.test"/);
  });

  test("tenantFrontEnd builds N tenants on one front end; 50 of them share one listener", async () => {
    const tenants = tenantFrontEnd({ tenants: 50, mailboxesPerTenant: 2, frontEndMaxConnections: 20 });
    assert.equal(tenants.length, 50);
    assert.deepEqual(tenants[9], {
      name: "tenant10.test",
      hosts: [
        {
          name: "tenant10-test.mail.protection.outlook.test",
          preference: 0,
          kind: "microsoft365",
          frontEnd: "am6eur05ft001.mail.protection.outlook.test",
          tenantAttribution: true,
          frontEndMaxConnections: 20,
        },
      ],
      mailboxes: ["user1", "user2"],
    });
    const fifty = await startMailWorld({ domains: tenants });
    try {
      const addresses = new Set(tenants.map((d) => fifty.addressOf(d.hosts?.[0]?.name ?? "")));
      assert.equal(addresses.size, 1);
      assert.deepEqual([...fifty.allCounters().keys()], ["am6eur05ft001.mail.protection.outlook.test"]);
      assert.deepEqual(fifty.expectation("user2@tenant50.test"), { status: "valid", unknownReason: null });
      assert.deepEqual(fifty.expectation("user3@tenant50.test"), { status: "invalid", unknownReason: null });
    } finally {
      await fifty.close();
    }
  });
});

describe("protocol violations", () => {
  test("command after QUIT, RCPT before MAIL; pipelining where it is advertised is fine", async () => {
    world.resetCounters();
    const client = await RawSmtp.open(world, "mx.strict.test");
    await client.reply();
    client.write("EHLO verifier.test\r\nMAIL FROM:<p@verifier.test>\r\nRCPT TO:<a@strict.test>\r\n");
    for (let i = 0; i < 3; i++) await client.reply();
    assert.equal((await client.command("RSET")).code, 250);
    assert.equal((await client.command("RCPT TO:<a@strict.test>")).code, 503);
    client.write("QUIT\r\nNOOP\r\n");
    assert.equal((await client.reply()).code, 221);
    await client.waitClosed();
    await settled("mx.strict.test");
    assert.deepEqual(world.counters("mx.strict.test").violations, ["RCPT before MAIL", "NOOP after QUIT"]);
  });

  test("pipelined commands to a host that does not advertise PIPELINING", async () => {
    world.resetCounters();
    const client = await RawSmtp.open(world, "mx.osmtpd.test");
    await client.reply();
    client.write("EHLO verifier.test\r\nMAIL FROM:<p@verifier.test>\r\n");
    assert.equal((await client.reply()).code, 250);
    assert.equal((await client.reply()).code, 250);
    client.destroy();
    assert.deepEqual(world.counters("mx.osmtpd.test").violations, [
      "pipelined commands without PIPELINING advertised",
    ]);
  });

  test("STARTTLS after a 421 at connect", async () => {
    world.resetCounters();
    const client = await RawSmtp.open(world, "mx.rate.test", { allowHalfOpen: true });
    assert.equal((await client.reply()).code, 421);
    client.write("STARTTLS\r\n");
    await sleep(100);
    client.destroy();
    const counters = world.counters("mx.rate.test");
    assert.deepEqual(counters.violations, ["STARTTLS after 421"]);
    assert.deepEqual(counters.errorsPerSession, [1]);
  });
});

describe("expectation", () => {
  test("ground truth per behaviour", () => {
    const cases: [string, string, string | null][] = [
      ["alice@acme.test", "valid", null],
      ["full@acme.test", "valid", null],
      ["gone@acme.test", "invalid", null],
      ["nobody@acme.test", "invalid", null],
      ["whoever@catch.test", "catchall", null],
      ["alice@grey.test", "unknown", "greylisted"],
      ["x@block.test", "unknown", "ip_blocklisted"],
      ["x@rcptblock.test", "unknown", "ip_blocklisted"],
      ["x@drop.test", "unknown", "connection_dropped"],
      ["x@refused.test", "unknown", "connection_failed"],
      ["a@rate.test", "valid", null],
      ["x@noaddr.test", "invalid", null],
      ["x@null.test", "invalid", null],
      ["x@nx.test", "invalid", null],
      ["x@empty.test", "invalid", null],
      ["x@sf.test", "unknown", "dns_error"],
      ["x@to.test", "unknown", "dns_timeout"],
      ["x@elsewhere.test", "invalid", null],
      // postmaster@ exists on every domain (catchall on catch-all ones); abuse@ per kind.
      ["postmaster@acme.test", "valid", null],
      ["abuse@acme.test", "valid", null],
      ["abuse@gmail-like.test", "invalid", null],
      ["postmaster@catch.test", "catchall", null],
      ["postmaster@nopm.test", "invalid", null],
      // Greylisting: postgrey lets postmaster@ through.
      ["postmaster@grey.test", "unknown", "greylisted"],
      ["alice@pg.test", "unknown", "greylisted"],
      ["postmaster@pg.test", "valid", null],
      // Politeness traps are not truth.
      ["x1@errors.test", "invalid", null],
      ["d@cap.test", "valid", null],
      ["a@tlsreq.test", "valid", null],
      // Blocks with a postmaster exemption: never invalid.
      ["alice@rbl.test", "unknown", "ip_blocklisted"],
      ["nobody@rbl.test", "unknown", "ip_blocklisted"],
      ["postmaster@rbl.test", "valid", null],
      ["alice@silent.test", "unknown", "policy_rejection"],
      ["nobody@silent.test", "unknown", "policy_rejection"],
      ["postmaster@silent.test", "valid", null],
      // Unknown users are invalid whatever the wording.
      ["nobody@eximstock.test", "invalid", null],
      ["nobody@ironport.test", "invalid", null],
      ["nobody@osmtpd.test", "invalid", null],
      ["abuse@osmtpd.test", "valid", null],
      ["nobody@exch.test", "invalid", null],
      ["abuse@exch.test", "invalid", null],
      // Overlays: the mailbox exists but refuses us, or is busy: unknown, and only for it.
      ["bob@sblock.test", "unknown", "recipient_blocks_sender"],
      ["alice@sblock.test", "valid", null],
      ["carol@barracuda.test", "unknown", "recipient_blocks_sender"],
      ["bob@busy.test", "unknown", "rate_limited"],
      ["alice@busy.test", "valid", null],
      ["nobody@busy.test", "invalid", null],
      // One recipient that ends the connection poisons no other.
      ["culprit@gw.test", "unknown", "rate_limited"],
      ["dropper@gw.test", "unknown", "connection_dropped"],
      ["a@gw.test", "valid", null],
      ["zz@gw.test", "invalid", null],
      // Tenants of a front end: as their mailboxes say (the limits are politeness traps).
      ["user1@fe-tenant3.test", "valid", null],
      ["nobody@fe-tenant3.test", "invalid", null],
    ];
    for (const [address, status, reason] of cases) {
      assert.deepEqual(world.expectation(address), { status, unknownReason: reason }, address);
    }
  });
});

describe("generateMixedWorld", () => {
  test("is deterministic and sized as asked", () => {
    const a = generateMixedWorld({ seed: 42, domains: 120, addressesPerDomain: [3, 8] });
    const b = generateMixedWorld({ seed: 42, domains: 120, addressesPerDomain: [3, 8] });
    assert.deepEqual(a, b);
    assert.notDeepEqual(generateMixedWorld({ seed: 43, domains: 120 }).addresses, a.addresses);
    assert.equal(a.spec.domains.length, 120);
    assert.ok(a.addresses.length >= 360 && a.addresses.length <= 960);
    assert.equal(new Set(a.addresses).size, a.addresses.length, "addresses are unique");
    assert.equal(new Set(a.spec.domains.map((d) => d.name)).size, 120, "domain names are unique");
  });

  test("mixes outcomes and shares big-provider MX hosts between domains", () => {
    const { spec, addresses } = generateMixedWorld({ seed: 7, domains: 300, addressesPerDomain: 33 });
    assert.equal(addresses.length, 300 * 33);
    const expect = createExpectation(spec);
    const outcomes = new Set(addresses.map((a) => expect(a).unknownReason ?? expect(a).status));
    for (const outcome of ["valid", "invalid", "catchall", "greylisted", "ip_blocklisted", "dns_error"]) {
      assert.ok(outcomes.has(outcome), `${outcome} missing from ${[...outcomes].join(", ")}`);
    }
    const hostUse = new Map<string, number>();
    for (const d of spec.domains)
      for (const h of d.hosts ?? []) hostUse.set(h.name, (hostUse.get(h.name) ?? 0) + 1);
    assert.ok((hostUse.get("aspmx.l.google.com") ?? 0) > 5);
    assert.ok([...hostUse.keys()].some((h) => h.endsWith(".mail.protection.outlook.com")));
    assert.ok(
      spec.domains.every((d) => d.dns !== "timeout"),
      "no DNS timeouts unless asked",
    );
  });

  test("a generated world starts, and its hosts answer as its expectation says", async () => {
    const { spec, addresses } = generateMixedWorld({ seed: 3, domains: 40 });
    const generated = await startMailWorld(spec);
    try {
      const r = new dnsPromises.Resolver({ timeout: 500, tries: 1 });
      r.setServers([`${generated.dns.host}:${generated.dns.port.toString()}`]);
      const checked = new Map<string, number>();
      for (const domain of spec.domains) {
        const mine = addresses.filter((a) => a.endsWith(`@${domain.name}`));
        const decisive = mine.filter((a) =>
          ["valid", "invalid", "catchall"].includes(generated.expectation(a).status),
        );
        if ((domain.dns ?? "mx") !== "mx" || decisive.length === 0 || mine.length !== decisive.length)
          continue;
        const codes = await rcptThroughMx(generated, r, domain.name, decisive);
        decisive.forEach((address, i) => {
          const status = generated.expectation(address).status;
          const code = codes[i] ?? 0;
          const ok =
            status === "invalid" ? code >= 500 : code === 250 || (status === "valid" && code === 552);
          assert.ok(ok, `${address}: expected ${status}, RCPT got ${code.toString()}`);
          checked.set(status, (checked.get(status) ?? 0) + 1);
        });
      }
      assert.ok(
        (checked.get("valid") ?? 0) > 10 && (checked.get("invalid") ?? 0) > 10,
        JSON.stringify([...checked]),
      );
    } finally {
      await generated.close();
    }
  });
});

/** Verifies recipients the way an engine would: MX lookup, first host that accepts a connection. */
async function rcptThroughMx(
  w: MailWorld,
  r: dnsPromises.Resolver,
  domain: string,
  recipients: string[],
): Promise<number[]> {
  const mx = (await r.resolveMx(domain)).sort((a, b) => a.priority - b.priority);
  for (const { exchange } of mx) {
    let client: RawSmtp;
    try {
      client = await RawSmtp.open(w, exchange);
    } catch {
      continue;
    }
    assert.equal((await client.reply()).code, 220);
    const ehlo = await client.command("EHLO verifier.test");
    if (ehlo.text.split("\n").includes("STARTTLS")) {
      assert.equal((await client.command("STARTTLS")).code, 220);
      await client.startTls();
      await client.command("EHLO verifier.test");
    }
    const codes: number[] = [];
    for (const recipient of recipients) {
      await client.command("RSET");
      await client.command("MAIL FROM:<probe@verifier.test>");
      codes.push((await client.command(`RCPT TO:<${recipient}>`)).code);
    }
    client.destroy();
    return codes;
  }
  throw new Error(`no MX host of ${domain} accepted a connection`);
}

describe("generateMixedWorld overlays", () => {
  const OVERLAID = (d: DomainSpec): boolean =>
    d.senderBlockedMailboxes !== undefined ||
    d.busyMailboxes !== undefined ||
    d.closeOnRcpt !== undefined ||
    (d.hosts ?? []).some((h) => h.frontEnd !== undefined);

  test("overlays only change the domains they overlay: same addresses, every other domain as before", () => {
    const opts = { seed: 7, domains: 300, addressesPerDomain: [30, 37] as [number, number] };
    const mixed = generateMixedWorld(opts);
    // The same mix without overlays: their weights back in normal's share.
    const without = generateMixedWorld({
      ...opts,
      mix: {
        normal: 52,
        sender_block: 0,
        busy_mailbox: 0,
        close_on_rcpt_421: 0,
        close_on_rcpt_drop: 0,
        tenant_front_end: 0,
      },
    });
    assert.deepEqual(mixed.addresses, without.addresses);
    let overlaid = 0;
    mixed.spec.domains.forEach((domain, i) => {
      if (OVERLAID(domain)) overlaid++;
      else assert.deepEqual(domain, without.spec.domains[i], domain.name);
    });
    const share = overlaid / 300;
    const expectedShare = 12 / 100;
    assert.ok(Math.abs(share - expectedShare) < 0.05, `overlaid share ${share.toString()}`);
    assert.equal(
      DEFAULT_MIX.normal +
        DEFAULT_MIX.sender_block +
        DEFAULT_MIX.busy_mailbox +
        DEFAULT_MIX.close_on_rcpt_421 +
        DEFAULT_MIX.close_on_rcpt_drop +
        DEFAULT_MIX.tenant_front_end,
      52,
    );
  });

  test("every overlay shows up, with its ground truth; tenants share one front end", () => {
    const { spec, addresses } = generateMixedWorld({ seed: 7, domains: 300, addressesPerDomain: [30, 37] });
    const expect = createExpectation(spec);
    const reasons = new Map<string, number>();
    for (const a of addresses) {
      const reason = expect(a).unknownReason;
      if (reason) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }
    for (const reason of ["recipient_blocks_sender", "rate_limited", "connection_dropped"]) {
      assert.ok((reasons.get(reason) ?? 0) > 0, `${reason} missing: ${JSON.stringify([...reasons])}`);
    }
    assert.ok(spec.domains.some((d) => d.closeOnRcpt?.[0]?.action === "421"));
    const tenants = spec.domains.filter((d) => (d.hosts ?? []).some((h) => h.frontEnd !== undefined));
    assert.ok(tenants.length >= 5, `${tenants.length.toString()} tenants`);
    const hosts = tenants.flatMap((d) => d.hosts ?? []);
    assert.equal(new Set(hosts.map((h) => h.frontEnd)).size, 1);
    assert.ok(hosts.every((h) => h.name === `${h.name.split(".")[0] ?? ""}.mail.protection.outlook.test`));
    assert.ok(hosts.every((h) => h.kind === "microsoft365" && h.tenantAttribution === true));
    // Tenants' truth is what their mailboxes say.
    for (const d of tenants) {
      for (const a of addresses.filter((x) => x.endsWith(`@${d.name}`))) {
        assert.ok(["valid", "invalid"].includes(expect(a).status), a);
      }
    }
  });

  test("a world with overlays starts: tenants on one IP, decided per mailbox", async () => {
    const { spec, addresses } = generateMixedWorld({ seed: 11, domains: 80 });
    const tenants = spec.domains.filter((d) => (d.hosts ?? []).some((h) => h.frontEnd !== undefined));
    assert.ok(tenants.length >= 2, `${tenants.length.toString()} tenants`);
    const generated = await startMailWorld(spec);
    try {
      const r = new dnsPromises.Resolver({ timeout: 500, tries: 1 });
      r.setServers([`${generated.dns.host}:${generated.dns.port.toString()}`]);
      const ips = new Set<string>();
      for (const d of tenants) {
        const [mx] = await r.resolveMx(d.name);
        ips.add((await r.resolve4(mx?.exchange ?? ""))[0] ?? "");
        const mine = addresses.filter((a) => a.endsWith(`@${d.name}`));
        const codes = await rcptThroughMx(generated, r, d.name, mine);
        mine.forEach((a, i) => {
          assert.equal(codes[i] === 250 || codes[i] === 552, generated.expectation(a).status === "valid", a);
        });
      }
      assert.equal(ips.size, 1);
      const frontEnd = generated.counters(tenants[0]?.hosts?.[0]?.name ?? "");
      assert.equal(frontEnd.connections, tenants.length);
      assert.equal(frontEnd.crossTenantRefusals, 0);
    } finally {
      await generated.close();
    }
  });
});

describe("generateMixedWorld with STOCK_MIX", () => {
  test("every stock behaviour shows up; the default mix is unchanged by their existence", () => {
    const { spec, addresses } = generateMixedWorld({
      seed: 5,
      domains: 600,
      addressesPerDomain: 4,
      mix: STOCK_MIX,
      roleAddressShare: 0.2,
    });
    const hosts = spec.domains.flatMap((d) => d.hosts ?? []);
    assert.ok(hosts.some((h) => h.postfixErrorLimits === true && h.kind === "postfix"));
    assert.ok(hosts.some((h) => (h.maxRcptPerConnection ?? 0) >= 10));
    assert.ok(hosts.some((h) => h.startTls === "offer"));
    assert.ok(hosts.some((h) => h.startTls === "require"));
    assert.ok(hosts.some((h) => h.blockExceptPostmaster === STOCK_REPLIES.spamhausBlock));
    assert.ok(hosts.some((h) => h.blockExceptPostmaster?.text === "Administrative prohibition"));
    assert.ok(hosts.some((h) => h.unknownUserReply !== undefined));
    assert.ok(hosts.some((h) => h.kind === "opensmtpd"));
    assert.ok(hosts.some((h) => h.kind === "exchange"));
    assert.ok(spec.domains.some((d) => d.greylistStyle === "postgrey"));
    assert.ok(spec.domains.some((d) => d.greylistStyle === "hint"));
    assert.ok(spec.domains.some((d) => d.rejectPostmaster === true));
    assert.ok(addresses.some((a) => a.startsWith("postmaster@")));
    const expect = createExpectation(spec);
    const outcomes = new Set(addresses.map((a) => expect(a).unknownReason ?? expect(a).status));
    assert.ok(outcomes.has("policy_rejection") && outcomes.has("ip_blocklisted"), [...outcomes].join(", "));
    // Nothing new unless asked: the default mix has none of it.
    const plain = generateMixedWorld({ seed: 5, domains: 600 }).spec.domains;
    assert.ok(
      plain.every((d) => (d.hosts ?? []).every((h) => h.startTls === undefined && h.kind !== "exchange")),
    );
  });

  test("a STOCK_MIX world starts, and its hosts answer as its expectation says", async () => {
    const { spec, addresses } = generateMixedWorld({
      seed: 9,
      domains: 40,
      mix: STOCK_MIX,
      roleAddressShare: 0.5,
    });
    const generated = await startMailWorld(spec);
    try {
      const r = new dnsPromises.Resolver({ timeout: 500, tries: 1 });
      r.setServers([`${generated.dns.host}:${generated.dns.port.toString()}`]);
      const checked = new Map<string, number>();
      for (const domain of spec.domains) {
        const mine = addresses.filter((a) => a.endsWith(`@${domain.name}`));
        const decisive = mine.filter((a) =>
          ["valid", "invalid", "catchall"].includes(generated.expectation(a).status),
        );
        if ((domain.dns ?? "mx") !== "mx" || decisive.length === 0 || mine.length !== decisive.length)
          continue;
        const codes = await rcptThroughMx(generated, r, domain.name, decisive);
        decisive.forEach((address, i) => {
          const status = generated.expectation(address).status;
          const code = codes[i] ?? 0;
          const ok =
            status === "invalid" ? code >= 500 : code === 250 || (status === "valid" && code === 552);
          assert.ok(ok, `${address}: expected ${status}, RCPT got ${code.toString()}`);
          checked.set(status, (checked.get(status) ?? 0) + 1);
        });
      }
      assert.ok(
        (checked.get("valid") ?? 0) > 10 && (checked.get("invalid") ?? 0) > 10,
        JSON.stringify([...checked]),
      );
      const counters = [...generated.allCounters().values()];
      assert.ok(
        counters.some((c) => c.tlsSessions > 0),
        "some hosts were talked to over TLS",
      );
      assert.deepEqual(
        counters.flatMap((c) => c.violations),
        [],
      );
    } finally {
      await generated.close();
    }
  });
});

describe("lifecycle", () => {
  test("close() is idempotent and frees the ports", async () => {
    const small = await startMailWorld({ domains: [{ name: "x.test", hosts: [{ name: "mx.x.test" }] }] });
    const client = await RawSmtp.open(small, "mx.x.test");
    await Promise.all([small.close(), small.close()]);
    await client.waitClosed();
    await rejectsWithCode(RawSmtp.open(small, "mx.x.test"), "ECONNREFUSED");
  });
});
