// DNS_SERVERS is validated at start like every other variable: c-ares takes IP
// addresses only and misuses bad ports (99999 → 34463, port 0 aborts the process), so anything
// else is a ConfigError naming the variable, before any database work.
import assert from "node:assert/strict";
import { Resolver } from "node:dns";
import { describe, test } from "node:test";
import { ConfigError, loadConfig } from "../../../src/config/index.ts";

const load = (value: string) => loadConfig({ DNS_SERVERS: value }, { hostname: () => "mx1.example.com" });

describe("DNS_SERVERS", () => {
  // [DNS_SERVERS, the config's list, what c-ares then reports (port 53 is left implicit)]
  const accepted: Array<[string, string[], string[]]> = [
    ["1.1.1.1", ["1.1.1.1"], ["1.1.1.1"]],
    ["1.1.1.1:53", ["1.1.1.1:53"], ["1.1.1.1"]],
    ["127.0.0.1:65535", ["127.0.0.1:65535"], ["127.0.0.1:65535"]],
    ["127.0.0.1:1", ["127.0.0.1:1"], ["127.0.0.1:1"]],
    ["::1", ["::1"], ["::1"]],
    ["2606:4700:4700::1111", ["2606:4700:4700::1111"], ["2606:4700:4700::1111"]],
    ["[::1]", ["[::1]"], ["::1"]],
    ["[2606:4700:4700::1111]:5353", ["[2606:4700:4700::1111]:5353"], ["[2606:4700:4700::1111]:5353"]],
    [" 1.1.1.1 , 8.8.8.8:5300 ", ["1.1.1.1", "8.8.8.8:5300"], ["1.1.1.1", "8.8.8.8:5300"]],
  ];
  for (const [value, servers] of accepted) {
    test(`accepts ${JSON.stringify(value)}`, () => {
      assert.deepEqual(load(value).verify.dnsServers, servers);
    });
  }

  test("unset or blank → the system's resolvers", () => {
    assert.deepEqual(load("").verify.dnsServers, []);
    assert.deepEqual(loadConfig({}, { hostname: () => "mx1.example.com" }).verify.dnsServers, []);
  });

  test("every accepted form is one c-ares takes, with its port intact", () => {
    for (const [value, , reported] of accepted) {
      const resolver = new Resolver();
      resolver.setServers(load(value).verify.dnsServers);
      assert.deepEqual(resolver.getServers(), reported, value);
    }
  });

  const refused: Array<[string, RegExp]> = [
    ["not-a-host:99999", /"not-a-host:99999" is not an IP address .*no host names/],
    ["dns.google", /"dns.google" is not an IP address/],
    ["1.2.3.4:99999", /"1.2.3.4:99999" has port "99999"; a port is an integer from 1 to 65535/],
    ["1.2.3.4:65536", /has port "65536"/],
    ["1.2.3.4:0", /has port "0"/],
    ["1.2.3.4:", /has port ""/],
    ["1.2.3.4:+53", /has port "\+53"/],
    ["1.2.3.4:53x", /has port "53x"/],
    ["01.2.3.4", /"01.2.3.4" is not an IP address/],
    ["1.2.3", /is not an IP address/],
    ["[1.2.3.4]:53", /brackets around something that is not an IPv6 address/],
    ["[::1]:0", /has port "0"/],
    ["[::1]:99999", /has port "99999"/],
    ["[::1", /is not an IP address/],
    ["1.1.1.1,,8.8.8.8", /"" is empty/],
    ["8.8.8.8,example.com:53", /"example.com:53" is not an IP address/],
  ];
  for (const [value, message] of refused) {
    test(`refuses ${JSON.stringify(value)} with a ConfigError naming DNS_SERVERS`, () => {
      assert.throws(
        () => load(value),
        (e: unknown) => {
          assert.ok(e instanceof ConfigError, String(e));
          assert.match(e.message, /^DNS_SERVERS: /);
          assert.match(e.message, message);
          assert.match(e.message, /each entry is IPv4, IPv4:port, IPv6, \[IPv6\] or \[IPv6\]:port/);
          return true;
        },
      );
    });
  }
});
