// The connection caps' decisions (http/connection-limit.ts) and the default total cap
// (app/open-file-limit.ts). The sockets themselves: test/integration/api/slow-clients.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { defaultMaxConnections } from "../../../src/app/open-file-limit.ts";
import {
  admitConnection,
  clientAddressOf,
  LOOPBACK_RESERVE,
  type ConnectionLimits,
} from "../../../src/http/connection-limit.ts";

const limits: ConnectionLimits = { perAddress: 256, total: 1_000 };

test("per address: the 257th connection of one address is refused, wherever it comes from", () => {
  for (const isLoopback of [false, true]) {
    assert.equal(admitConnection(limits, { fromAddress: 255, total: 500 }, isLoopback), "accept");
    assert.equal(admitConnection(limits, { fromAddress: 256, total: 500 }, isLoopback), "per_address");
  }
});

test("in all: remote clients stop at the cap, loopback keeps a reserve above it", () => {
  assert.equal(admitConnection(limits, { fromAddress: 0, total: 999 }, false), "accept");
  assert.equal(admitConnection(limits, { fromAddress: 0, total: 1_000 }, false), "total");
  assert.equal(admitConnection(limits, { fromAddress: 0, total: 1_000 }, true), "accept");
  const full = 1_000 + LOOPBACK_RESERVE;
  assert.equal(admitConnection(limits, { fromAddress: 0, total: full - 1 }, true), "accept");
  assert.equal(admitConnection(limits, { fromAddress: 0, total: full }, true), "total");
});

test("0 turns a cap off", () => {
  const off = { perAddress: 0, total: 0 };
  assert.equal(admitConnection(off, { fromAddress: 1e6, total: 1e7 }, false), "accept");
});

test("addresses: IPv4-mapped IPv6 counts as its IPv4 address; loopback is 127/8 and ::1", () => {
  assert.deepEqual(clientAddressOf("::ffff:192.0.2.7"), { key: "192.0.2.7", isLoopback: false });
  assert.deepEqual(clientAddressOf("192.0.2.7"), { key: "192.0.2.7", isLoopback: false });
  assert.deepEqual(clientAddressOf("::ffff:127.0.0.1"), { key: "127.0.0.1", isLoopback: true });
  assert.deepEqual(clientAddressOf("127.0.0.2"), { key: "127.0.0.2", isLoopback: true });
  assert.deepEqual(clientAddressOf("::1"), { key: "::1", isLoopback: true });
  assert.deepEqual(clientAddressOf("2001:db8::1"), { key: "2001:db8::1", isLoopback: false });
});

test("the default total cap leaves a quarter of the open-file limit (256 to half of it) for the rest", () => {
  assert.equal(defaultMaxConnections(20_000), 15_000);
  assert.equal(defaultMaxConnections(1_048_576), 786_432);
  assert.equal(defaultMaxConnections(1_024), 768);
  assert.equal(defaultMaxConnections(256), 128);
  assert.equal(defaultMaxConnections(null), 0, "unknown limit: no total cap");
});
