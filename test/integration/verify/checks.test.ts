// Per-check status (verify/checks.ts) on the mail-world simulator, and the line between a target
// domain's DNS failure (a result) and our own resolvers failing (a dependency failure, 424 upstream).
import assert from "node:assert/strict";
import dgram from "node:dgram";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import type { ResultChecks } from "../../../src/verify/types.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { engineFor } from "./helpers.ts";

let world: MailWorld;

before(async () => {
  world = await startMailWorld({
    domains: [
      { name: "ok.test", hosts: [{ name: "mx.ok.test", kind: "postfix" }], mailboxes: ["ann"] },
      { name: "bare.test", dns: "a_only", hosts: [{ name: "bare.test" }], mailboxes: ["ann"] },
      { name: "nomail.test", dns: "null_mx" },
      { name: "ghost.test", dns: "nxdomain" },
      { name: "parked.test", dns: "no_records" },
      { name: "broken.test", dns: "servfail" },
      { name: "silent.test", dns: "timeout" },
      { name: "grey.test", hosts: [{ name: "mx.grey.test" }], mailboxes: ["ann"], greylistSeconds: 3600 },
      { name: "any.test", hosts: [{ name: "mx.any.test" }], catchAll: true },
    ],
  });
});
after(async () => {
  await world.close();
});

const P = (reason: string | null = null) => ({ status: "passed", reason }) as const;
const F = (reason: string) => ({ status: "failed", reason }) as const;
const S = (reason: string) => ({ status: "skipped", reason }) as const;
const E = (reason: string) => ({ status: "error", reason }) as const;

describe("each check says what happened", () => {
  const cases: Array<[string, ResultChecks]> = [
    ["ann@ok.test", { syntax: P(), dns: P(), mx: P("mx_records"), reverse_dns: P(), smtp: P("accepted") }],
    [
      "nobody@ok.test",
      { syntax: P(), dns: P(), mx: P("mx_records"), reverse_dns: P(), smtp: F("mailbox_missing") },
    ],
    ["ann@bare.test", { syntax: P(), dns: P(), mx: P("implicit_mx"), reverse_dns: P(), smtp: P("accepted") }],
    [
      "ann@nomail.test",
      { syntax: P(), dns: P(), mx: F("null_mx"), reverse_dns: S("no_mail_host"), smtp: S("no_mail_host") },
    ],
    [
      "ann@ghost.test",
      {
        syntax: P(),
        dns: F("nxdomain"),
        mx: S("nxdomain"),
        reverse_dns: S("no_mail_host"),
        smtp: S("nxdomain"),
      },
    ],
    [
      "ann@parked.test",
      { syntax: P(), dns: P(), mx: F("no_records"), reverse_dns: S("no_mail_host"), smtp: S("no_mail_host") },
    ],
    // The target's own DNS failing is the target's: an error on the dns check, not ours.
    [
      "ann@broken.test",
      {
        syntax: P(),
        dns: E("servfail"),
        mx: S("dns_error"),
        reverse_dns: S("no_mail_host"),
        smtp: S("dns_error"),
      },
    ],
    [
      "ann@silent.test",
      {
        syntax: P(),
        dns: E("timeout"),
        mx: S("dns_error"),
        reverse_dns: S("no_mail_host"),
        smtp: S("dns_error"),
      },
    ],
    [
      "ann@grey.test",
      { syntax: P(), dns: P(), mx: P("mx_records"), reverse_dns: P(), smtp: E("greylisted") },
    ],
    ["who@any.test", { syntax: P(), dns: P(), mx: P("mx_records"), reverse_dns: P(), smtp: P("catchall") }],
    [
      "ann@mailinator.com",
      {
        syntax: P(),
        dns: S("disposable_domain"),
        mx: S("disposable_domain"),
        reverse_dns: S("disposable_domain"),
        smtp: S("disposable_domain"),
      },
    ],
    [
      "ann@[192.0.2.1]",
      {
        syntax: P(),
        dns: S("address_literal"),
        mx: S("address_literal"),
        reverse_dns: S("address_literal"),
        smtp: S("address_literal"),
      },
    ],
    [
      "ann..x@ok.test",
      {
        syntax: F("local_invalid"),
        dns: S("invalid_syntax"),
        mx: S("invalid_syntax"),
        reverse_dns: S("invalid_syntax"),
        smtp: S("invalid_syntax"),
      },
    ],
  ];
  for (const [address, checks] of cases) {
    test(address, async () => {
      const engine = engineFor(world);
      try {
        const r = await engine.verifyOne(address);
        assert.deepEqual(r.checks, checks);
        assert.equal(
          r.dependencyFailure ?? null,
          null,
          "the world's resolver answered: no dependency failure",
        );
      } finally {
        await engine.close();
      }
    });
  }
});

test("has_mx_records false with checks.dns error tells a failed lookup from a domain without MX", async () => {
  const engine = engineFor(world);
  try {
    const [failedLookup, noMx] = await Promise.all([
      engine.verifyOne("ann@broken.test"),
      engine.verifyOne("ann@parked.test"),
    ]);
    assert.equal(failedLookup.hasMxRecords, false);
    assert.equal(noMx.hasMxRecords, false);
    assert.equal(failedLookup.checks.dns.status, "error");
    assert.equal(noMx.checks.dns.status, "passed");
    assert.equal(noMx.checks.mx.status, "failed");
  } finally {
    await engine.close();
  }
});

describe("our own resolvers failing is a dependency failure", () => {
  test("nothing listens on the resolver's port → unavailable", async () => {
    // A UDP port bound and released: queries to it get ICMP port unreachable (ECONNREFUSED).
    const probe = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => probe.bind(0, "127.0.0.1", resolve));
    const port = probe.address().port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const engine = engineFor(world, { dnsServers: [`127.0.0.1:${port.toString()}`] });
    try {
      const r = await engine.verifyOne("ann@ok.test");
      assert.equal(r.status, "unknown");
      assert.equal(r.unknownReason, "dns_error");
      assert.deepEqual(r.dependencyFailure && { ...r.dependencyFailure, detail: "" }, {
        dependency: "dns_resolver",
        kind: "unavailable",
        detail: "",
      });
      assert.deepEqual(r.checks.dns, E("resolver_unavailable"));
    } finally {
      await engine.close();
    }
  });

  test("a resolver that never answers → timeout, asked once for many domains", async () => {
    const silent = dgram.createSocket("udp4");
    let questions = 0;
    silent.on("message", () => questions++);
    await new Promise<void>((resolve) => silent.bind(0, "127.0.0.1", resolve));
    const engine = engineFor(world, {
      dnsServers: [`127.0.0.1:${silent.address().port.toString()}`],
      dnsTimeoutMs: 200,
      dnsTries: 1,
    });
    try {
      const results = await Promise.all(
        ["ann@ok.test", "ann@bare.test", "ann@grey.test"].map((a) => engine.verifyOne(a)),
      );
      for (const r of results) {
        assert.equal(r.unknownReason, "dns_timeout");
        assert.equal(r.dependencyFailure?.kind, "timeout");
        assert.deepEqual(r.checks.dns, E("resolver_timeout"));
      }
      // Three MX questions and one health question: the health answer serves every failure.
      assert.equal(questions, 4);
    } finally {
      await engine.close();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

test("a session that reaches no host while no proxy is configured is the hosts' failure", async () => {
  const dead = net.createServer();
  await new Promise<void>((resolve) => dead.listen(0, "127.0.0.1", resolve));
  const port = (dead.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => dead.close(() => resolve()));
  const engine = engineFor(world, { smtpPort: port });
  try {
    const r = await engine.verifyOne("ann@ok.test");
    assert.equal(r.unknownReason, "connection_failed");
    assert.equal(r.dependencyFailure ?? null, null);
    assert.deepEqual(r.checks.smtp, E("connection_failed"));
  } finally {
    await engine.close();
  }
});
