// The EHLO name and envelope sender: the default chain, validation, and the warnings an operator
// sees at start and in /readyz. The machine's host name is pinned per test.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError, loadConfig } from "../../../src/config/index.ts";
import { classifyHostName } from "../../../src/lib/host-names.ts";

const load = (env: Record<string, string>, hostname: string) => loadConfig(env, { hostname: () => hostname });

const identity = (env: Record<string, string>, hostname: string) => {
  const c = load(env, hostname);
  return {
    heloName: c.verify.smtpHeloName,
    source: c.verify.smtpHeloNameSource,
    mailFrom: c.verify.smtpMailFrom,
    warnings: c.warnings.map((w) => `${w.variable}:${w.code}`),
  };
};

describe("host-name syntax", () => {
  const cases: Array<[string, ReturnType<typeof classifyHostName>]> = [
    ["mail.example.com", "fqdn"],
    ["mail.example.com.", "fqdn"],
    ["MX-1.Example.ORG", "fqdn"],
    ["mail.xn--p1ai", "fqdn"], // IDN TLD
    ["probe.mailprobe.test", "fqdn"],
    ["web-1", "not_fqdn"],
    ["localhost", "not_fqdn"],
    ["3f2a9c1b7d4e", "not_fqdn"], // a container id
    ["192.0.2.1", "not_fqdn"], // a bare IP: numeric TLD
    ["host.x", "not_fqdn"], // one-letter TLD
    ["[192.0.2.1]", "address_literal"],
    ["[IPv6:2001:db8::1]", "address_literal"],
    ["[2001:db8::1]", "invalid"], // RFC 5321 wants the IPv6: tag
    ["[999.0.0.1]", "invalid"],
    ["mail example.com", "invalid"],
    ["my_host.example.com", "invalid"],
    ["-mail.example.com", "invalid"],
    ["mail-.example.com", "invalid"],
    ["a..example.com", "invalid"],
    ["", "invalid"],
    [`${"a".repeat(64)}.example.com`, "invalid"],
    [`${"abcdefghi.".repeat(25)}example.com`, "invalid"], // 261 characters
  ];
  for (const [name, kind] of cases) {
    test(`${JSON.stringify(name)} → ${kind}`, () => assert.equal(classifyHostName(name), kind));
  }
});

describe("SMTP_HELO_NAME default chain", () => {
  test("set and fully qualified: used as is (trailing dot dropped), no warning", () => {
    assert.deepEqual(identity({ SMTP_HELO_NAME: "mail.example.com." }, "web-1"), {
      heloName: "mail.example.com",
      source: "configured",
      mailFrom: "verify@mail.example.com",
      warnings: [],
    });
  });

  test("unset, fully-qualified host name: the host name, with a warning to set it", () => {
    assert.deepEqual(identity({}, "Box1.Example.NET"), {
      heloName: "box1.example.net",
      source: "hostname",
      mailFrom: "verify@box1.example.net",
      warnings: ["SMTP_HELO_NAME:helo_name_unset"],
    });
  });

  test("unset, bare host name: <host>.localdomain, and the warning names the variable with an example", () => {
    const c = load({}, "web-1");
    assert.equal(c.verify.smtpHeloName, "web-1.localdomain");
    assert.equal(c.verify.smtpHeloNameSource, "derived");
    assert.equal(c.verify.smtpMailFrom, "verify@web-1.localdomain");
    assert.equal(c.warnings.length, 1);
    const w = c.warnings[0]!;
    assert.equal(w.code, "helo_name_derived");
    assert.equal(w.variable, "SMTP_HELO_NAME");
    assert.match(w.message, /SMTP_HELO_NAME is not set/);
    assert.match(w.message, /"web-1"/);
    assert.match(w.message, /SMTP_HELO_NAME=mail\.example\.com/);
    assert.match(w.message, /SMTP_MAIL_FROM=verify@example\.com/);
  });

  test("unset, bare host name, SMTP_MAIL_FROM set: the sender's domain (it resolves)", () => {
    assert.deepEqual(identity({ SMTP_MAIL_FROM: "bounce@Example.com" }, "web-1"), {
      heloName: "example.com",
      source: "derived",
      mailFrom: "bounce@Example.com",
      warnings: ["SMTP_HELO_NAME:helo_name_derived"],
    });
  });

  test("the stand-in is always a valid name: odd host names are cleaned, never localhost", () => {
    assert.equal(load({}, "3f2a9c1b7d4e").verify.smtpHeloName, "3f2a9c1b7d4e.localdomain");
    assert.equal(load({}, "My_Box").verify.smtpHeloName, "my-box.localdomain");
    assert.equal(load({}, "localhost").verify.smtpHeloName, "mailprobe.localdomain");
    assert.equal(load({}, "").verify.smtpHeloName, "mailprobe.localdomain");
    assert.equal(load({}, "___").verify.smtpHeloName, "mailprobe.localdomain");
    for (const host of ["3f2a9c1b7d4e", "My_Box", "localhost", "", "x".repeat(80)]) {
      assert.equal(classifyHostName(load({}, host).verify.smtpHeloName), "fqdn", host);
    }
  });

  test("set to a bare name: used (labs), with a warning quoting Postfix's 504; the default sender stays fully qualified", () => {
    const c = load({ SMTP_HELO_NAME: "web-1" }, "box1.example.net");
    assert.equal(c.verify.smtpHeloName, "web-1");
    assert.equal(c.verify.smtpHeloNameSource, "configured");
    assert.equal(c.verify.smtpMailFrom, "verify@box1.example.net");
    assert.deepEqual(
      c.warnings.map((w) => w.code),
      ["helo_name_not_fqdn"],
    );
    assert.match(c.warnings[0]!.message, /504 5\.5\.2 <web-1>: Helo command rejected/);
    assert.match(c.warnings[0]!.message, /SMTP_HELO_NAME=mail\.example\.com/);
    assert.equal(load({ SMTP_HELO_NAME: "web-1" }, "web-1").verify.smtpMailFrom, "verify@web-1.localdomain");
  });

  test("set to an address literal or a bare IP: used, with a warning", () => {
    assert.deepEqual(identity({ SMTP_HELO_NAME: "[192.0.2.1]" }, "box1.example.net").warnings, [
      "SMTP_HELO_NAME:helo_name_address_literal",
    ]);
    assert.deepEqual(identity({ SMTP_HELO_NAME: "[IPv6:2001:db8::1]" }, "web-1"), {
      heloName: "[IPv6:2001:db8::1]",
      source: "configured",
      mailFrom: "verify@web-1.localdomain",
      warnings: ["SMTP_HELO_NAME:helo_name_address_literal"],
    });
    assert.deepEqual(identity({ SMTP_HELO_NAME: "192.0.2.1" }, "web-1").warnings, [
      "SMTP_HELO_NAME:helo_name_not_fqdn",
    ]);
  });

  test("set to something that is not a host name: the process refuses to start, naming the variable", () => {
    for (const bad of [
      "mail example.com",
      "my_host.example.com",
      "a..example.com",
      "[not-an-ip]",
      "x".repeat(254),
    ]) {
      assert.throws(
        () => load({ SMTP_HELO_NAME: bad }, "box1.example.net"),
        (e: unknown) =>
          e instanceof ConfigError && /^SMTP_HELO_NAME must be a fully-qualified host name/.test(e.message),
        bad,
      );
    }
  });
});

describe("SMTP_MAIL_FROM", () => {
  test("a well-formed address of a fully-qualified domain: no warning", () => {
    assert.deepEqual(
      identity({ SMTP_HELO_NAME: "mail.example.com", SMTP_MAIL_FROM: "bounce+probe@example.com" }, "x"),
      {
        heloName: "mail.example.com",
        source: "configured",
        mailFrom: "bounce+probe@example.com",
        warnings: [],
      },
    );
  });

  test("a domain that is not fully qualified: used, with a warning", () => {
    const c = load({ SMTP_HELO_NAME: "mail.example.com", SMTP_MAIL_FROM: "verify@localhost" }, "x");
    assert.deepEqual(
      c.warnings.map((w) => `${w.variable}:${w.code}`),
      ["SMTP_MAIL_FROM:mail_from_not_fqdn"],
    );
    assert.match(c.warnings[0]!.message, /SMTP_MAIL_FROM=verify@example\.com/);
  });

  test("not an address: the process refuses to start, naming the variable", () => {
    const bad = [
      "verify",
      "@example.com",
      "verify@",
      "a b@example.com",
      "<verify@example.com>",
      "verify@exa mple.com",
      "a..b@example.com",
      `${"a".repeat(65)}@example.com`,
    ];
    for (const value of bad) {
      assert.throws(
        () => load({ SMTP_HELO_NAME: "mail.example.com", SMTP_MAIL_FROM: value }, "x"),
        (e: unknown) => e instanceof ConfigError && /^SMTP_MAIL_FROM must be an address/.test(e.message),
        value,
      );
    }
  });
});

test("the warnings are part of the frozen config", () => {
  const c = load({}, "web-1");
  assert.ok(Object.isFrozen(c));
  assert.ok(Object.isFrozen(c.warnings));
});
