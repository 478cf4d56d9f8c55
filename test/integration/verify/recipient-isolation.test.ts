// Servers answer per recipient and count connections per IP: one recipient that makes the server
// close must not poison the rest, a per-recipient 4xx must not stop the session, a limit on us
// must, and a second domain on the same server IP continues on the connection left idle.
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { createEngine } from "../../../src/verify/engine.ts";
import type { EngineOptions } from "../../../src/verify/options.ts";
import type { DnsPort, HostGate } from "../../../src/verify/ports.ts";
import { startScripted, type Scripted } from "../../support/scripted-smtp.ts";

// Every domain's MX is one host on 127.0.0.1: one server IP for all of them.
const dns: DnsPort = {
  mx: async () => ({ kind: "found", records: [{ exchange: "mx.scripted.test", priority: 10 }] }),
  addresses: async () => ({ kind: "found", records: ["127.0.0.1"] }),
  reverse: async () => ({ kind: "found", records: ["mx.scripted.test"] }),
};

const EHLO = "250-mx.scripted.test\r\n250-PIPELINING\r\n250 8BITMIME";
const EXISTING = /^(?:postmaster|bob|carol|dave|erin|frank|busy|trap)@/;

const rcptTo = (line: string): string => /^RCPT TO:<([^>]*)>/i.exec(line)?.[1] ?? "";
const rcptsOf = (server: Scripted, address: string): number =>
  server.commands.filter((c) => rcptTo(c) === address).length;

/** A pipelining server: existing mailboxes accepted, others "550 5.1.1 User unknown", `special` first. */
function mailbox(special: (rcpt: string) => string | null | undefined) {
  return (line: string): string | null => {
    if (/^EHLO/i.test(line)) return EHLO;
    if (/^(?:MAIL|RSET)/i.test(line)) return "250 2.0.0 Ok";
    if (/^RCPT/i.test(line)) {
      const rcpt = rcptTo(line);
      const answer = special(rcpt);
      if (answer !== undefined) return answer;
      return EXISTING.test(rcpt) ? "250 2.1.5 Ok" : "550 5.1.1 <x>: Recipient address rejected: User unknown";
    }
    return "502 5.5.2 Error: command not recognized";
  };
}

/** An engine on the scripted server; both are closed when the test ends. */
function engineOn(
  t: TestContext,
  server: Scripted,
  options: Partial<EngineOptions> = {},
  hostGate?: HostGate,
) {
  const engine = createEngine(
    {
      smtpPort: server.port,
      smtpHeloName: "probe.mailprobe.test",
      smtpMailFrom: "bounce@mailprobe.test",
      smtpCommandTimeoutMs: 1000,
      smtpGreetingTimeoutMs: 1000,
      smtpAllowPrivateHosts: true,
      ...options,
    },
    { dns, random: () => 0, ...(hostGate === undefined ? {} : { hostGate }) },
  );
  t.after(async () => {
    await engine.close();
    await server.close();
  });
  return engine;
}

const statuses = (results: readonly { email: string; status: string; unknownReason: string | null }[]) =>
  Object.fromEntries(results.map((r) => [r.email, r.unknownReason ?? r.status]));

void test("a 421 naming one recipient's routing: the others go on without it, the culprit is asked alone at the end", async (t) => {
  const server = await startScripted(
    "220 mx.scripted.test ESMTP",
    mailbox((rcpt) =>
      rcpt.startsWith("trap@")
        ? "421 4.7.0 mx.scripted.test IP not in whitelist for RCPT domain, closing connection"
        : undefined,
    ),
  );
  const engine = engineOn(t, server);
  const addresses = ["bob@one.test", "trap@one.test", "carol@one.test", "ghost@one.test", "dave@one.test"];
  const results = await engine.verifyGroup("one.test", addresses);
  assert.deepEqual(statuses(results), {
    "bob@one.test": "valid",
    "trap@one.test": "rate_limited",
    "carol@one.test": "valid",
    "ghost@one.test": "invalid",
    "dave@one.test": "valid",
  });
  assert.equal(rcptsOf(server, "trap@one.test"), 2, "the culprit: once in the list, once alone");
  for (const a of addresses.filter((a) => !a.startsWith("trap@")))
    assert.equal(rcptsOf(server, a), 1, `${a} asked once`);
  assert.equal(server.connections, 2);
});

void test("a drop that loses a pipelined write's replies: halving the writes finds the culprit, everyone else is answered", async (t) => {
  const server = await startScripted(
    "220 mx.scripted.test ESMTP",
    mailbox((rcpt) => (rcpt.startsWith("trap@") ? null : undefined)),
    { holdReplies: true },
  );
  const engine = engineOn(t, server);
  const addresses = [
    "bob@two.test",
    "carol@two.test",
    "trap@two.test",
    "ghost@two.test",
    "dave@two.test",
    "erin@two.test",
  ];
  const results = await engine.verifyGroup("two.test", addresses);
  assert.deepEqual(statuses(results), {
    "bob@two.test": "valid",
    "carol@two.test": "valid",
    "trap@two.test": "connection_dropped",
    "ghost@two.test": "invalid",
    "dave@two.test": "valid",
    "erin@two.test": "valid",
  });
  // 1 + ⌈log2 8⌉ connections to single the culprit out, one more to ask it alone.
  assert.ok(server.connections <= 5, `connections ${server.connections.toString()}`);
});

void test("a per-recipient 450 4.2.1 (Gmail: receiving mail too quickly) concerns that mailbox only", async (t) => {
  const gmail =
    "450-4.2.1 The user you are trying to contact is receiving mail too quickly. Please resend\r\n" +
    "450-4.2.1 your message at a later time. If the user is able to receive mail at that\r\n" +
    "450 4.2.1 time, your message will be delivered. https://support.google.com/mail/?p=ReceivingRate a1si2 - gsmtp";
  const server = await startScripted(
    "220 mx.google.test ESMTP",
    mailbox((rcpt) => (rcpt.startsWith("busy@") ? gmail : undefined)),
  );
  // Writes of two RCPTs: the ones after the busy mailbox come in later writes.
  const engine = engineOn(t, server, { smtpMaxRcpt: 2 });
  const addresses = ["busy@three.test", "bob@three.test", "ghost@three.test", "carol@three.test"];
  const results = await engine.verifyGroup("three.test", addresses);
  assert.deepEqual(statuses(results), {
    "busy@three.test": "rate_limited",
    "bob@three.test": "valid",
    "ghost@three.test": "invalid",
    "carol@three.test": "valid",
  });
  assert.equal(server.connections, 1);
});

void test("a limit on us (450 4.7.1 too many recipients from <ip>) stops the session: nothing more is asked", async (t) => {
  const server = await startScripted(
    "220 mx.scripted.test ESMTP",
    mailbox((rcpt) =>
      rcpt.startsWith("bob@")
        ? "450 4.7.1 <bob@four.test>: Error: too many recipients from 127.0.0.1"
        : undefined,
    ),
  );
  const engine = engineOn(t, server, { smtpMaxRcpt: 2 });
  // Transactions of two: [postmaster, probe], [bob, carol], then nothing.
  const addresses = ["bob@four.test", "carol@four.test", "dave@four.test", "erin@four.test"];
  const results = await engine.verifyGroup("four.test", addresses);
  assert.deepEqual(statuses(results), {
    "bob@four.test": "rate_limited",
    "carol@four.test": "valid",
    "dave@four.test": "rate_limited",
    "erin@four.test": "rate_limited",
  });
  assert.equal(rcptsOf(server, "dave@four.test"), 0);
  assert.equal(server.connections, 1);
});

void test("a 421 that names no recipient (Try again later, closing connection) ends the session, no new connection", async (t) => {
  const server = await startScripted(
    "220 mx.scripted.test ESMTP",
    mailbox((rcpt) =>
      rcpt.startsWith("bob@") ? "421 4.7.0 Try again later, closing connection." : undefined,
    ),
  );
  const engine = engineOn(t, server);
  const results = await engine.verifyGroup("five.test", ["bob@five.test", "carol@five.test"]);
  assert.deepEqual(statuses(results), { "bob@five.test": "rate_limited", "carol@five.test": "rate_limited" });
  assert.equal(server.connections, 1);
});

void test("a second domain on the same server IP continues on the idle connection: one slot, RSET, a transaction of its own", async (t) => {
  const server = await startScripted(
    "220 mx.scripted.test ESMTP",
    mailbox(() => undefined),
  );
  const events: string[] = [];
  const hostGate: HostGate = {
    acquire: async (key) => {
      events.push(`acquire ${key}`);
      return () => events.push(`release ${key}`);
    },
  };
  const engine = engineOn(t, server, {}, hostGate);
  assert.equal((await engine.verifyOne("bob@six.test")).status, "valid");
  assert.equal(engine.idleConnections("127.0.0.1"), 1);
  assert.equal((await engine.verifyOne("ghost@seven.test")).status, "invalid");
  await engine.close();
  assert.equal(server.connections, 1);
  assert.deepEqual(events, ["acquire 127.0.0.1", "release 127.0.0.1"]);
  const verbs = server.commands.map((c) => c.split(/[ :]/)[0]);
  assert.equal(verbs.filter((v) => v === "EHLO").length, 1, "one greeting");
  // Domain seven's transaction starts with RSET: never one MAIL for two domains' recipients.
  const rset = server.commands.indexOf("RSET");
  assert.ok(rset > server.commands.indexOf("RCPT TO:<bob@six.test>"));
  assert.equal(server.commands[rset + 1], "MAIL FROM:<bounce@mailprobe.test>");
  assert.equal(server.commands.at(-1), "QUIT");
});

void test("an idle connection is closed (QUIT) after SMTP_IDLE_REUSE_MS; the next domain opens its own", async (t) => {
  const server = await startScripted(
    "220 mx.scripted.test ESMTP",
    mailbox(() => undefined),
  );
  const engine = engineOn(t, server, { smtpIdleReuseMs: 30 });
  assert.equal((await engine.verifyOne("bob@eight.test")).status, "valid");
  for (let i = 0; i < 100 && !server.commands.includes("QUIT"); i++)
    await new Promise((r) => setTimeout(r, 10));
  assert.ok(server.commands.includes("QUIT"), "QUIT after the idle time");
  assert.equal(engine.idleConnections("127.0.0.1"), 0);
  assert.equal((await engine.verifyOne("bob@nine.test")).status, "valid");
  assert.equal(server.connections, 2);
});

void test("an idle connection that turns out closed when taken over: the domain continues on a new one, nobody suspected", async (t) => {
  // The server hangs up on RSET: what a connection closed by the server's idle timeout at the
  // moment we reuse it looks like.
  const base = mailbox(() => undefined);
  const hangUpOnRset = await startScripted("220 mx.scripted.test ESMTP", (line) =>
    /^RSET/i.test(line) ? null : base(line),
  );
  const engine = engineOn(t, hangUpOnRset);
  assert.equal((await engine.verifyOne("bob@ten.test")).status, "valid");
  const results = await engine.verifyGroup("eleven.test", ["bob@eleven.test", "ghost@eleven.test"]);
  assert.deepEqual(statuses(results), { "bob@eleven.test": "valid", "ghost@eleven.test": "invalid" });
  assert.equal(hangUpOnRset.connections, 2);
  assert.equal(rcptsOf(hangUpOnRset, "bob@eleven.test"), 1);
});

void test("a session waiting for the IP's only slot is handed the connection the session before it parks", async (t) => {
  const server = await startScripted(
    "220 mx.scripted.test ESMTP",
    mailbox(() => undefined),
  );
  const engine = engineOn(t, server, { maxSessionsPerHost: 1 });
  const results = await Promise.all(
    ["twelve", "thirteen", "fourteen"].map((d) => engine.verifyGroup(`${d}.test`, [`bob@${d}.test`])),
  );
  assert.deepEqual(
    results.map((r) => r[0]?.status),
    ["valid", "valid", "valid"],
  );
  assert.equal(server.connections, 1, "three domains, one connection, one after the other");
  assert.equal(server.commands.filter((c) => c === "RSET").length, 2);
});
