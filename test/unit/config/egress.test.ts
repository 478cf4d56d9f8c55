import assert from "node:assert/strict";
import { test } from "node:test";
import {
  assertEgressBindable,
  parseEgressList,
  redact,
  unbindableEgressAddresses,
} from "../../../src/config/egress.ts";
import { ConfigError } from "../../../src/config/env-vars.ts";
import { loadConfig } from "../../../src/config/index.ts";
import { egressName } from "../../../src/verify/smtp/egress.ts";

const host = { hostname: () => "probe.example.com" };

test("SMTP_EGRESS unset or empty: no identities (SMTP_PROXY or a direct connection, as before)", () => {
  assert.deepEqual(loadConfig({}, host).verify.smtpEgress, []);
  assert.deepEqual(loadConfig({ SMTP_EGRESS: " " }, host).verify.smtpEgress, []);
  assert.equal(loadConfig({}, host).verify.smtpEgressRestMs, 900_000);
  const proxied = loadConfig({ SMTP_PROXY: "socks5://proxy.example:1080" }, host).verify;
  assert.equal(proxied.smtpProxy, "socks5://proxy.example:1080");
  assert.deepEqual(proxied.smtpEgress, []);
});

test("addresses and proxies, in order", () => {
  assert.deepEqual(parseEgressList(" 192.0.2.10, [2001:DB8::1] ,socks5://u:p@proxy.example:1081", null), [
    "192.0.2.10",
    "2001:db8::1",
    "socks5://u:p@proxy.example:1081",
  ]);
  assert.equal(egressName("socks5://u:p@proxy.example:1081"), "socks5://proxy.example:1081");
  assert.equal(egressName("socks5://proxy.example"), "socks5://proxy.example:1080");
});

test("bad entries stop the process with the entry named, never the credentials", () => {
  const bad: [string, RegExp][] = [
    ["192.0.2.10,", /entry 2 is empty/],
    ["mail.example.com", /"mail\.example\.com" is neither an IP address to bind nor a socks5:\/\/ URL/],
    ["0.0.0.0", /unspecified address/],
    ["192.0.2.10,192.0.2.10", /lists "192\.0\.2\.10" twice/],
    ["http://u:secret@proxy.example:3128", /"http:\/\/\*\*\*@proxy\.example:3128" must be a socks5:\/\/ URL/],
  ];
  for (const [raw, message] of bad) {
    assert.throws(
      () => parseEgressList(raw, null),
      (e: unknown) => e instanceof ConfigError && message.test(e.message) && !e.message.includes("secret"),
      raw,
    );
  }
  assert.throws(
    () => loadConfig({ SMTP_EGRESS: "192.0.2.10", SMTP_PROXY: "socks5://proxy.example:1080" }, host),
    /SMTP_EGRESS and SMTP_PROXY are both set/,
  );
});

test("a password with / ? # or @ in it never appears in the message; socks:// and socks4:// are refused at start", () => {
  for (const [env, message] of [
    [
      { SMTP_PROXY: "socks5://user:pa/ss@proxy.example:1080" },
      /SMTP_PROXY "socks5:\/\/\*\*\*@proxy\.example:1080" is not a valid URL/,
    ],
    [
      { SMTP_EGRESS: "socks5://user:p/a?s#s@proxy.example:1080" },
      /SMTP_EGRESS entry "socks5:\/\/\*\*\*@proxy\.example:1080"/,
    ],
    [
      { SMTP_PROXY: "socks://user:pa@ss@proxy.example:1080" },
      /SMTP_PROXY "socks:\/\/\*\*\*@proxy\.example:1080" must be a socks5:\/\/ URL, got socks:/,
    ],
    [
      { SMTP_PROXY: "socks4://proxy.example:1080" },
      /SMTP_PROXY "socks4:\/\/proxy\.example:1080" must be a socks5:\/\/ URL/,
    ],
  ] as const) {
    assert.throws(
      () => loadConfig(env, host),
      (e: unknown) =>
        e instanceof ConfigError && message.test(e.message) && !/pa\/ss|p\/a|pa@ss/.test(e.message),
      JSON.stringify(env),
    );
  }
  assert.equal(redact("socks5://u:a/b@c@h:1"), "socks5://***@h:1");
  assert.equal(redact("socks5://h:1"), "socks5://h:1");
});

test("addresses no interface of this machine carries are named at start; loopback ones and proxies pass", async () => {
  // 192.0.2.0/24 is TEST-NET-1: never on an interface. All of 127.0.0.0/8 is local on Linux.
  const entries = ["127.0.0.1", "192.0.2.77", "socks5://proxy.example:1080", "198.51.100.9"];
  assert.deepEqual(await unbindableEgressAddresses(entries), ["192.0.2.77", "198.51.100.9"]);
  await assert.rejects(assertEgressBindable(entries), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.match(
      e.message,
      /SMTP_EGRESS lists "192\.0\.2\.77", "198\.51\.100\.9", which no interface of this machine carries/,
    );
    return true;
  });
  await assertEgressBindable(["127.0.0.1"]);
});
