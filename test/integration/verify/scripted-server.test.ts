// Conversations the simulator can't stage (it always offers PIPELINING and knows EHLO): a tiny
// scripted SMTP server that records exactly what the client sent, and how it was batched.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { DnsPort } from "../../../src/verify/ports.ts";
import { createEngine } from "../../../src/verify/engine.ts";
import { HANG_UP, startScripted } from "../../support/scripted-smtp.ts";

const dns: DnsPort = {
  mx: async () => ({ kind: "found", records: [{ exchange: "mx.scripted.test", priority: 10 }] }),
  addresses: async () => ({ kind: "found", records: ["127.0.0.1"] }),
  reverse: async () => ({ kind: "found", records: ["mx.scripted.test"] }),
};

const engineOn = (port: number) =>
  createEngine(
    {
      smtpPort: port,
      smtpHeloName: "probe.mailprobe.test",
      smtpMailFrom: "bounce@mailprobe.test",
      smtpCommandTimeoutMs: 1000,
      smtpGreetingTimeoutMs: 1000,
      smtpAllowPrivateHosts: true,
    },
    { dns, random: () => 0 },
  );

const rcptTo = (line: string): string => /^RCPT TO:<([^>]*)>/i.exec(line)?.[1] ?? "";

void test("old server: EHLO unknown → HELO, then one command at a time (no PIPELINING)", async (t) => {
  const server = await startScripted("220 old.scripted.test Sendmail 8.9.3 ready", (line) => {
    if (/^EHLO/i.test(line)) return "502 5.5.2 Command not recognized";
    if (/^HELO/i.test(line)) return "250 old.scripted.test Hello";
    if (/^MAIL/i.test(line)) return "250 2.1.0 Sender ok";
    if (/^RCPT/i.test(line))
      return rcptTo(line).startsWith("bob@") ? "250 2.1.5 Recipient ok" : "550 5.1.1 User unknown";
    return "500 5.5.1 Command unrecognized";
  });
  const engine = engineOn(server.port);
  t.after(async () => {
    await engine.close();
    await server.close();
  });
  const [bob, ghost] = await engine.verifyGroup("scripted.test", [
    "bob@scripted.test",
    "ghost@scripted.test",
  ]);
  await engine.close();
  assert.equal(bob?.status, "valid");
  assert.equal(ghost?.status, "invalid");
  assert.equal(bob?.isCatchall, false);
  assert.deepEqual(server.commands, [
    "EHLO probe.mailprobe.test",
    "HELO probe.mailprobe.test",
    "MAIL FROM:<bounce@mailprobe.test>",
    "RCPT TO:<postmaster@scripted.test>",
    `RCPT TO:<${"a".repeat(20)}@scripted.test>`,
    "RCPT TO:<bob@scripted.test>",
    "RCPT TO:<ghost@scripted.test>",
    "QUIT",
  ]);
  assert.ok(
    server.batches.every((n) => n === 1),
    `batches ${server.batches.join(",")}`,
  );
});

void test("PIPELINING server: MAIL and every RCPT in one write; a 421 mid-way re-queues the rest on a new connection", async (t) => {
  let rcpts = 0;
  const server = await startScripted("220 mx.scripted.test ESMTP", (line) => {
    if (/^EHLO/i.test(line))
      return "250-mx.scripted.test\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250 8BITMIME";
    if (/^MAIL/i.test(line)) return "250 2.1.0 Ok";
    if (/^RCPT/i.test(line)) {
      rcpts++;
      if (rcpts === 4) return "421 4.7.0 Too many errors, closing transmission channel";
      return /^(bob|postmaster)@/.test(rcptTo(line))
        ? "250 2.1.5 Ok"
        : "550 5.1.1 <x>: Recipient address rejected: User unknown";
    }
    return "500 5.5.2 Error: bad syntax";
  });
  const engine = engineOn(server.port);
  t.after(async () => {
    await engine.close();
    await server.close();
  });
  const results = await engine.verifyGroup("scripted.test", [
    "bob@scripted.test",
    "ann@scripted.test",
    "eve@scripted.test",
  ]);
  await engine.close();
  assert.deepEqual(
    results.map((r) => [r.status, r.unknownReason]),
    [
      ["valid", null],
      ["invalid", null],
      ["invalid", null],
    ],
  );
  // EHLO alone, then MAIL + 5 RCPT (control, probe + 3) in one write; ann got the 421.
  assert.deepEqual(server.batches.slice(0, 2), [1, 6]);
  // Nothing more on the closed connection (no QUIT, no STARTTLS): the next command is a new EHLO,
  // and only the two unanswered recipients are asked again.
  const second = server.commands.lastIndexOf("EHLO probe.mailprobe.test");
  assert.equal(server.commands[second - 1], "RCPT TO:<ann@scripted.test>");
  assert.deepEqual(server.commands.slice(second), [
    "EHLO probe.mailprobe.test",
    "MAIL FROM:<bounce@mailprobe.test>",
    "RCPT TO:<ann@scripted.test>",
    "RCPT TO:<eve@scripted.test>",
    "QUIT",
  ]);
});

void test("MAIL FROM refused (553 5.7.1 sender rejected) → every address unknown policy_rejection, none invalid", async (t) => {
  const server = await startScripted("220 mx.scripted.test ESMTP Postfix", (line) => {
    if (/^EHLO/i.test(line)) return "250-mx.scripted.test\r\n250 PIPELINING";
    if (/^MAIL/i.test(line))
      return "553 5.7.1 <bounce@mailprobe.test>: Sender address rejected: not owned by user bounce@mailprobe.test";
    if (/^RCPT/i.test(line)) return "503 5.5.1 Error: need MAIL command";
    return "500 5.5.2 Error: bad syntax";
  });
  const engine = engineOn(server.port);
  t.after(async () => {
    await engine.close();
    await server.close();
  });
  const results = await engine.verifyGroup("scripted.test", ["bob@scripted.test", "ghost@scripted.test"]);
  for (const r of results) {
    assert.equal(r.status, "unknown");
    assert.equal(r.unknownReason, "policy_rejection");
    assert.equal(r.serverType, "postfix");
  }
});

void test("a server that talks nonsense → unknown smtp_protocol_error", async (t) => {
  const server = await startScripted("220 mx.scripted.test ESMTP", (line) => {
    if (/^EHLO/i.test(line)) return "HTTP/1.1 400 Bad Request";
    return "500 nope";
  });
  const engine = engineOn(server.port);
  t.after(async () => {
    await engine.close();
    await server.close();
  });
  const r = await engine.verifyOne("bob@scripted.test");
  assert.equal(r.status, "unknown");
  assert.equal(r.unknownReason, "smtp_protocol_error");
});

void test("a STARTTLS handshake that fails: the session continues in plain text on a new connection", async (t) => {
  let connections = 0;
  const server = await startScripted("220 mx.scripted.test ESMTP OpenSMTPD", (line) => {
    if (/^EHLO/i.test(line)) {
      connections++;
      return "250-mx.scripted.test\r\n250-PIPELINING\r\n250 STARTTLS";
    }
    // OpenSMTPD 6.8 on OpenSSL 3 says yes, then fails the handshake (it sends TLS alert 80 and
    // closes); here the connection closes before any handshake.
    if (/^STARTTLS/i.test(line)) return `220 2.0.0 Ready to start TLS${HANG_UP}`;
    if (/^MAIL/i.test(line)) return "250 2.0.0 Ok";
    if (/^RCPT/i.test(line))
      return /^(bob|postmaster)@/.test(rcptTo(line))
        ? "250 2.1.5 Destination address valid"
        : "550 Invalid recipient";
    return "500 5.5.1 Invalid command";
  });
  const engine = engineOn(server.port);
  t.after(async () => {
    await engine.close();
    await server.close();
  });
  const [bob] = await engine.verifyGroup("scripted.test", ["bob@scripted.test"]);
  await engine.close();
  assert.equal(bob?.status, "valid", bob?.evidence);
  assert.equal(connections, 2);
  // The second connection did not try TLS again.
  assert.equal(server.commands.filter((c) => c === "STARTTLS").length, 1);
});
