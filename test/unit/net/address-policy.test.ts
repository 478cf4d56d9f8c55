import assert from "node:assert/strict";
import { test } from "node:test";
import { blockedAddressRange, classifyAddress, isPublicAddress } from "../../../src/net/address-policy.ts";

// Every non-public range, with its edges where a neighbour is public (PUBLIC below).
const BLOCKED: Array<[address: string, range: string]> = [
  // --- IPv4 ---------------------------------------------------------------------------------------
  // 0.0.0.0/8 "this network" (0.0.0.0 reaches localhost on Linux)
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "unspecified"],
  ["0.255.255.255", "unspecified"],
  // loopback 127/8
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  // RFC 1918: 10/8, 172.16/12, 192.168/16
  ["10.0.0.0", "private"],
  ["10.255.255.255", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["192.168.0.1", "private"],
  ["192.168.255.255", "private"],
  // link-local 169.254/16, incl. the cloud metadata address
  ["169.254.0.1", "linkLocal"],
  ["169.254.169.254", "linkLocal"],
  // CGNAT 100.64/10 (RFC 6598)
  ["100.64.0.0", "carrierGradeNat"],
  ["100.127.255.255", "carrierGradeNat"],
  // benchmarking 198.18/15 (RFC 2544)
  ["198.18.0.0", "reserved"],
  ["198.19.255.255", "reserved"],
  // documentation (RFC 5737)
  ["192.0.2.1", "reserved"],
  ["198.51.100.7", "reserved"],
  ["203.0.113.255", "reserved"],
  // IETF protocol assignments 192.0.0/24, 6to4 relay anycast 192.88.99/24, AS112, AMT
  ["192.0.0.8", "reserved"],
  ["192.88.99.1", "reserved"],
  ["192.175.48.1", "as112"],
  ["192.52.193.1", "amt"],
  // multicast 224/4, reserved 240/4, limited broadcast
  ["224.0.0.1", "multicast"],
  ["239.255.255.255", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.254", "reserved"],
  ["255.255.255.255", "broadcast"],

  // --- IPv6 ---------------------------------------------------------------------------------------
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["[::1]", "loopback"],
  // unique local fc00::/7, incl. AWS metadata over IPv6
  ["fc00::1", "uniqueLocal"],
  ["fd12:3456:789a::1", "uniqueLocal"],
  ["fd00:ec2::254", "uniqueLocal"],
  ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "uniqueLocal"],
  // link-local fe80::/10, with and without a zone
  ["fe80::1", "linkLocal"],
  ["fe80::1%eth0", "linkLocal"],
  ["[fe80::1%25eth0]", "linkLocal"],
  ["febf:ffff::1", "linkLocal"],
  ["fec0::1", "deprecatedSiteLocal"], // RFC 3879
  // multicast ff00::/8
  ["ff02::1", "multicast"],
  ["ff05::1:3", "multicast"],
  // documentation 2001:db8::/32 and 3fff::/20, benchmarking 2001:2::/48, discard 100::/64
  ["2001:db8::1", "reserved"],
  ["2001:db8:ffff:ffff::1", "reserved"],
  ["3fff::1", "reserved"],
  ["2001:2::1", "benchmarking"],
  ["100::1", "discard"],
  // outside 2000::/3 (not allocated by IANA) though ipaddr.js calls it unicast
  ["4000::1", "reserved"],
  ["1::1", "reserved"],
  // IPv4-mapped ::ffff:0:0/96: judged as the IPv4 address, dotted and hex forms
  ["::ffff:10.0.0.1", "ipv4Mapped:private"],
  ["::FFFF:10.1.2.3", "ipv4Mapped:private"],
  ["::ffff:127.0.0.1", "ipv4Mapped:loopback"],
  ["::ffff:7f00:1", "ipv4Mapped:loopback"],
  ["::ffff:172.16.5.4", "ipv4Mapped:private"],
  ["::ffff:192.168.1.1", "ipv4Mapped:private"],
  ["::ffff:169.254.169.254", "ipv4Mapped:linkLocal"],
  ["::ffff:a9fe:a9fe", "ipv4Mapped:linkLocal"],
  ["::ffff:100.64.0.1", "ipv4Mapped:carrierGradeNat"],
  ["::ffff:0.0.0.0", "ipv4Mapped:unspecified"],
  ["::ffff:198.18.0.1", "ipv4Mapped:reserved"],
  ["::ffff:255.255.255.255", "ipv4Mapped:broadcast"],
  // IPv4-translated ::ffff:0:0:0/96 (SIIT, RFC 6145)
  ["::ffff:0:10.0.0.1", "rfc6145:private"],
  ["::ffff:0:7f00:1", "rfc6145:loopback"],
  // IPv4-compatible ::/96 (deprecated): refused whatever it embeds
  ["::127.0.0.1", "ipv4Compatible"],
  ["::10.0.0.1", "ipv4Compatible"],
  ["::8.8.8.8", "ipv4Compatible"],
  ["::808:808", "ipv4Compatible"],
  // NAT64 well-known prefix 64:ff9b::/96 embedding a non-public IPv4
  ["64:ff9b::127.0.0.1", "rfc6052:loopback"],
  ["64:ff9b::a9fe:a9fe", "rfc6052:linkLocal"],
  ["64:ff9b::a00:1", "rfc6052:private"],
  ["64:ff9b::10.0.0.1", "rfc6052:private"],
  ["64:ff9b::c0a8:101", "rfc6052:private"],
  // NAT64 local-use prefix 64:ff9b:1::/48 (RFC 8215): the IPv4 cannot be located, refused
  ["64:ff9b:1::a00:1", "rfc8215"],
  ["64:ff9b:1::808:808", "rfc8215"],
  ["64:ff9b:1:ffff::1", "rfc8215"],
  // 6to4 2002::/16 wrapping a non-public IPv4 (bits 16–47)
  ["2002:a00:1::", "6to4:private"], // 10.0.0.1
  ["2002:7f00:1::1", "6to4:loopback"], // 127.0.0.1
  ["2002:c0a8:101:1::1", "6to4:private"], // 192.168.1.1
  ["2002:a9fe:a9fe::", "6to4:linkLocal"], // 169.254.169.254
  ["2002::1", "6to4:unspecified"], // 0.0.0.0
  // Teredo 2001::/32: server (bits 32–63) or client (bits 96–127, inverted) non-public
  ["2001:0:a00:1:8000:63bf:f7f7:f7f7", "teredo:private"], // server 10.0.0.1, client 8.8.8.8
  ["2001:0:808:808:8000:63bf:80ff:fffe", "teredo:loopback"], // server 8.8.8.8, client 127.0.0.1
  ["2001:0:808:808:8000:63bf:3f57:fefe", "teredo:private"], // client 192.168.1.1
  ["2001::1", "teredo:unspecified"], // server 0.0.0.0

  // --- not an address at all -----------------------------------------------------------------------
  ["example.com", "invalid"],
  ["", "invalid"],
  ["999.1.1.1", "invalid"],
  ["127.1", "invalid"], // shorthand IPv4: URL parsing normalises it before it gets here
  ["1.2.3.4.5", "invalid"],
  ["::ffff::1", "invalid"],
];

// Public addresses, including the neighbours of the blocked ranges above, and IPv6 forms whose
// embedded IPv4 is public.
const PUBLIC: Array<[address: string, range: string]> = [
  ["8.8.8.8", "unicast"],
  ["1.1.1.1", "unicast"],
  ["93.184.216.34", "unicast"],
  ["1.0.0.0", "unicast"], // just above 0/8
  ["9.255.255.255", "unicast"], // just below 10/8
  ["11.0.0.0", "unicast"], // just above
  ["172.15.255.255", "unicast"], // just below 172.16/12
  ["172.32.0.0", "unicast"], // just above
  ["192.167.255.255", "unicast"],
  ["192.169.0.0", "unicast"],
  ["169.253.255.255", "unicast"],
  ["169.255.0.0", "unicast"],
  ["100.63.255.255", "unicast"], // just below CGNAT
  ["100.128.0.0", "unicast"], // just above
  ["198.17.255.255", "unicast"], // just below 198.18/15
  ["198.20.0.0", "unicast"], // just above
  ["192.0.1.255", "unicast"], // just below 192.0.2/24
  ["192.0.3.0", "unicast"], // just above
  ["198.51.99.255", "unicast"],
  ["198.51.101.0", "unicast"],
  ["203.0.112.255", "unicast"],
  ["203.0.114.0", "unicast"],
  ["126.255.255.255", "unicast"],
  ["128.0.0.0", "unicast"],
  ["223.255.255.255", "unicast"], // just below multicast
  ["2606:4700:4700::1111", "unicast"],
  ["2001:4860:4860::8888", "unicast"],
  ["[2001:4860:4860::8888]", "unicast"],
  ["2a00:1450:4001:81c::200e", "unicast"],
  ["2001:db7:ffff::1", "unicast"], // just below 2001:db8::/32
  ["2001:db9::1", "unicast"], // just above
  ["2003::1", "unicast"], // just above 2002::/16
  ["3ffe:ffff::1", "unicast"], // below 3fff::/20
  ["::ffff:8.8.8.8", "ipv4Mapped"],
  ["::ffff:808:808", "ipv4Mapped"],
  ["::ffff:0:8.8.8.8", "rfc6145"],
  ["64:ff9b::808:808", "rfc6052"],
  ["64:ff9b::1.1.1.1", "rfc6052"],
  ["2002:808:808::1", "6to4"], // 8.8.8.8
  ["2001:0:4136:e378:8000:63bf:f7f7:fbfb", "teredo"], // server 65.54.227.120, client 8.8.4.4
];

void test("every non-public range is refused, with its name", () => {
  for (const [address, range] of BLOCKED) {
    assert.deepEqual(classifyAddress(address), { public: false, range }, address);
    assert.equal(blockedAddressRange(address), range, address);
    assert.equal(isPublicAddress(address), false, address);
  }
});

void test("public addresses, the neighbours of the blocked ranges and public embedded IPv4 pass", () => {
  for (const [address, range] of PUBLIC) {
    assert.deepEqual(classifyAddress(address), { public: true, range }, address);
    assert.equal(blockedAddressRange(address), null, address);
    assert.equal(isPublicAddress(address), true, address);
  }
});

void test("Teredo: the RFC 4380 example is refused for its documentation-range client", () => {
  // server 65.54.227.120 (public), client ~3fff:fdd2 = 192.0.2.45 (RFC 5737 documentation)
  assert.deepEqual(classifyAddress("2001:0:4136:e378:8000:63bf:3fff:fdd2"), {
    public: false,
    range: "teredo:reserved",
  });
});

void test("an IPv4 address and its IPv6 embeddings get the same verdict", () => {
  const samples = [
    "8.8.8.8",
    "10.0.0.1",
    "127.0.0.1",
    "169.254.169.254",
    "100.64.0.1",
    "198.18.0.1",
    "203.0.113.9",
  ];
  for (const v4 of samples) {
    const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number];
    const hex = (x: number, y: number) => ((x << 8) | y).toString(16);
    const inv = (x: number, y: number) => (~((x << 8) | y) & 0xffff).toString(16);
    const expected = classifyAddress(v4).public;
    for (const v6 of [
      `::ffff:${v4}`,
      `64:ff9b::${v4}`,
      `2002:${hex(a, b)}:${hex(c, d)}::1`,
      `2001:0:4136:e378:8000:63bf:${inv(a, b)}:${inv(c, d)}`, // as the Teredo client
      `2001:0:${hex(a, b)}:${hex(c, d)}:8000:63bf:f7f7:f7f7`, // as the Teredo server
    ]) {
      assert.equal(isPublicAddress(v6), expected, `${v6} (embeds ${v4})`);
    }
  }
});
