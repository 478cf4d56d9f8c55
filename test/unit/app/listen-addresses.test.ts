// The start banner's address list (src/app/listen-addresses.ts) over a fixed interface table, so
// the wildcard cases are tested without binding anything but loopback.
import assert from "node:assert/strict";
import type { NetworkInterfaceInfo } from "node:os";
import { test } from "node:test";
import { listenUrls } from "../../../src/app/listen-addresses.ts";

const v4 = (address: string, internal = false): NetworkInterfaceInfo => ({
  address,
  netmask: "255.255.255.0",
  family: "IPv4",
  mac: "00:00:00:00:00:00",
  internal,
  cidr: null,
});
const v6 = (address: string, internal = false): NetworkInterfaceInfo => ({
  address,
  netmask: "ffff:ffff:ffff:ffff::",
  family: "IPv6",
  mac: "00:00:00:00:00:00",
  internal,
  cidr: null,
  scopeid: 0,
});

// The OS lists eth0 before lo here, as it may: loopback must still come first.
const MACHINE = {
  eth0: [v4("192.0.2.10"), v6("2001:db8::10"), v6("fe80::1")],
  lo: [v4("127.0.0.1", true), v6("::1", true)],
  wlan0: [v4("198.51.100.7")],
};

test("0.0.0.0 (the default HOST) lists every IPv4 address of the machine, loopback first", () => {
  assert.deepEqual(listenUrls({ address: "0.0.0.0", port: 8080 }, MACHINE), [
    "http://127.0.0.1:8080",
    "http://192.0.2.10:8080",
    "http://198.51.100.7:8080",
  ]);
});

test(":: is dual-stack: IPv4 and IPv6 addresses, without link-local ones", () => {
  assert.deepEqual(listenUrls({ address: "::", port: 9000 }, MACHINE), [
    "http://127.0.0.1:9000",
    "http://[::1]:9000",
    "http://192.0.2.10:9000",
    "http://198.51.100.7:9000",
    "http://[2001:db8::10]:9000",
  ]);
});

test("a specific HOST is the one address listed", () => {
  assert.deepEqual(listenUrls({ address: "127.0.0.1", port: 8080 }, MACHINE), ["http://127.0.0.1:8080"]);
  assert.deepEqual(listenUrls({ address: "::1", port: 8080 }, MACHINE), ["http://[::1]:8080"]);
});

test("a wildcard bind on a machine that reports no interfaces still names the bind", () => {
  assert.deepEqual(listenUrls({ address: "0.0.0.0", port: 8080 }, {}), ["http://0.0.0.0:8080"]);
});
