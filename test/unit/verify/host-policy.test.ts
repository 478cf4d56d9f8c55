// The outbound guard where the engine chooses mail hosts: refused addresses are skipped, the
// others tried in MX order; a domain whose every host is refused is never connected to.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ConnectPort, DnsAnswer, DnsPort, MxRecord } from "../../../src/verify/ports.ts";
import { createEngine } from "../../../src/verify/engine.ts";
import { refusalEvidence, vetMailHosts } from "../../../src/verify/host-policy.ts";
import { ConnectError } from "../../../src/verify/smtp/connect.ts";
import { classifyAddress } from "../../../src/net/address-policy.ts";

// 93.184.216.34 and 2606:2800:220:1::1 are ordinary public unicast; nothing is ever reached here.
const PUBLIC_V4 = "93.184.216.34";
const PUBLIC_V6 = "2606:2800:220:1::1";

function fakeDns(mx: MxRecord[], a: Record<string, string[]>): DnsPort {
  const found = <T>(records: T): DnsAnswer<T> => ({ kind: "found", records });
  return {
    mx: async () => found(mx),
    addresses: async (host) => (a[host] ? found(a[host]) : { kind: "nxdomain" }),
    reverse: async () => ({ kind: "nxdomain" }),
  };
}

/** Records every address asked for and refuses it, as a closed port 25 would. */
function recordingConnect(): ConnectPort & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    connect: async (host) => {
      asked.push(host);
      throw new ConnectError("refused", `connect ECONNREFUSED ${host}:25`);
    },
  };
}

void test("vetMailHosts keeps the order, drops refused addresses and hosts left without one", () => {
  const vetted = vetMailHosts(
    [
      { name: "mx1.test", preference: 10, addresses: ["10.0.0.5"] },
      { name: "mx2.test", preference: 20, addresses: ["127.0.0.1", PUBLIC_V4] },
      { name: "mx3.test", preference: 30, addresses: ["::ffff:169.254.169.254", PUBLIC_V6] },
    ],
    classifyAddress,
  );
  assert.deepEqual(vetted.allowed, [
    { name: "mx2.test", preference: 20, addresses: [PUBLIC_V4] },
    { name: "mx3.test", preference: 30, addresses: [PUBLIC_V6] },
  ]);
  assert.deepEqual(vetted.refused, [
    { host: "mx1.test", address: "10.0.0.5", range: "private" },
    { host: "mx2.test", address: "127.0.0.1", range: "loopback" },
    { host: "mx3.test", address: "::ffff:169.254.169.254", range: "ipv4Mapped:linkLocal" },
  ]);
  assert.equal(
    refusalEvidence(vetted.refused),
    "policy: mail host address not public, not probed: mx1.test [10.0.0.5] private, " +
      "mx2.test [127.0.0.1] loopback, mx3.test [::ffff:169.254.169.254] ipv4Mapped:linkLocal",
  );
});

void test("mixed MX set: the private host is skipped, the public one tried", async () => {
  const connect = recordingConnect();
  const engine = createEngine(
    {},
    {
      dns: fakeDns(
        [
          { exchange: "internal.mixed.test", priority: 10 },
          { exchange: "mx.mixed.test", priority: 20 },
        ],
        { "internal.mixed.test": ["10.1.2.3"], "mx.mixed.test": [PUBLIC_V4] },
      ),
      connect,
      addressPolicy: classifyAddress,
    },
  );
  const r = await engine.verifyOne("bob@mixed.test");
  await engine.close();
  assert.deepEqual(connect.asked, [PUBLIC_V4]);
  // The public host was reached for (and refused us): an ordinary connection failure, on it.
  assert.equal(r.status, "unknown");
  assert.equal(r.unknownReason, "connection_failed");
  assert.equal(r.hostName, "mx.mixed.test");
});

void test("every host refused: unknown/private_host_refused, no connection attempted", async () => {
  const connect = recordingConnect();
  const engine = createEngine(
    {},
    {
      dns: fakeDns(
        [
          { exchange: "a.private.test", priority: 10 },
          { exchange: "b.private.test", priority: 20 },
        ],
        { "a.private.test": ["192.168.1.10"], "b.private.test": ["fe80::1", "100.64.0.1"] },
      ),
      connect,
      addressPolicy: classifyAddress,
    },
  );
  const r = await engine.verifyOne("bob@private.test");
  await engine.close();
  assert.deepEqual(connect.asked, []);
  assert.equal(r.status, "unknown");
  assert.equal(r.unknownReason, "private_host_refused");
  assert.equal(r.hasMxRecords, true);
  assert.equal(r.hostName, "");
  assert.match(
    r.evidence,
    /a\.private\.test \[192\.168\.1\.10\] private, b\.private\.test \[fe80::1\] linkLocal/,
  );
});

void test("smtpAllowPrivateHosts: private hosts are tried in MX order like any other", async () => {
  const connect = recordingConnect();
  const engine = createEngine(
    { smtpAllowPrivateHosts: true },
    {
      dns: fakeDns(
        [
          { exchange: "internal.mixed.test", priority: 10 },
          { exchange: "mx.mixed.test", priority: 20 },
        ],
        { "internal.mixed.test": ["10.1.2.3"], "mx.mixed.test": [PUBLIC_V4] },
      ),
      connect,
      addressPolicy: classifyAddress,
    },
  );
  await engine.verifyOne("bob@mixed.test");
  await engine.close();
  assert.deepEqual(connect.asked, ["10.1.2.3", PUBLIC_V4]);
});
