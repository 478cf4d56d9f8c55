import assert from "node:assert/strict";
import { test } from "node:test";
import { blockedAddressRange, isPublicAddress } from "../../../src/webhooks/address-policy.ts";

const BLOCKED: Array<[address: string, range: string]> = [
  // IPv4 loopback 127/8
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  // private 10/8, 172.16/12, 192.168/16 (edges included)
  ["10.0.0.0", "private"],
  ["10.255.255.255", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["192.168.0.1", "private"],
  ["192.168.255.255", "private"],
  // link-local incl. the cloud metadata address
  ["169.254.0.1", "link-local"],
  ["169.254.169.254", "link-local"],
  // CGNAT 100.64/10
  ["100.64.0.0", "cgnat"],
  ["100.127.255.255", "cgnat"],
  // unspecified / "this network"
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "unspecified"],
  // multicast, reserved, broadcast
  ["224.0.0.1", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.255", "reserved"],
  // IPv6
  ["::1", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["[::1]", "loopback"],
  ["::", "unspecified"],
  ["fc00::1", "unique-local"],
  ["fd12:3456:789a::1", "unique-local"],
  ["fd00:ec2::254", "unique-local"], // AWS metadata over IPv6
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local"],
  ["febf:ffff::1", "link-local"],
  ["ff02::1", "multicast"],
  ["::127.0.0.1", "ipv4-compatible"],
  // IPv4-mapped IPv6 of the IPv4 ranges, dotted and hex forms
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["::FFFF:10.1.2.3", "private"],
  ["::ffff:172.16.5.4", "private"],
  ["::ffff:192.168.1.1", "private"],
  ["::ffff:169.254.169.254", "link-local"],
  ["::ffff:a9fe:a9fe", "link-local"],
  ["::ffff:100.64.0.1", "cgnat"],
  ["::ffff:0.0.0.0", "unspecified"],
  // NAT64 well-known prefix embedding a private IPv4
  ["64:ff9b::127.0.0.1", "nat64-loopback"],
  ["64:ff9b::a9fe:a9fe", "nat64-link-local"],
  ["64:ff9b::a00:1", "nat64-private"],
  // not an address at all
  ["example.com", "invalid"],
  ["", "invalid"],
  ["999.1.1.1", "invalid"],
];

const PUBLIC: readonly string[] = [
  "8.8.8.8",
  "1.1.1.1",
  "93.184.216.34",
  "9.255.255.255", // just below 10/8
  "11.0.0.0", // just above
  "172.15.255.255", // just below 172.16/12
  "172.32.0.0", // just above
  "192.167.255.255",
  "192.169.0.0",
  "169.253.255.255",
  "169.255.0.0",
  "100.63.255.255", // just below CGNAT
  "100.128.0.0", // just above
  "126.255.255.255",
  "128.0.0.0",
  "223.255.255.255",
  "2606:4700:4700::1111",
  "2001:4860:4860::8888",
  "2a00:1450:4001:81c::200e",
  "fbff:ffff::1", // just below fc00::/7
  "fec0::1", // above fe80::/10 (deprecated site-local, globally unused but not ours to judge)
  "::ffff:8.8.8.8",
  "::ffff:808:808",
  "64:ff9b::808:808", // NAT64 of a public address
];

void test("every loopback, private, link-local, metadata, CGNAT, unspecified and mapped address is refused", () => {
  for (const [address, range] of BLOCKED) {
    assert.equal(blockedAddressRange(address), range, address);
    assert.equal(isPublicAddress(address), false, address);
  }
});

void test("public addresses, including the neighbours of every blocked range, are allowed", () => {
  for (const address of PUBLIC) {
    assert.equal(blockedAddressRange(address), null, address);
    assert.equal(isPublicAddress(address), true, address);
  }
});
