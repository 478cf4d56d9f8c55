import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEgressList } from "../../../src/config/egress.ts";
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
