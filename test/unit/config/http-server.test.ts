// The HTTP server's limits against slow and piled-up clients (HEADERS_TIMEOUT_MS, BODY_TIMEOUT_MS,
// MAX_CONNECTIONS_PER_IP, MAX_CONNECTIONS): defaults, the proxy default, and refusals by name.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, loadConfig } from "../../../src/config/index.ts";

const load = (env: Record<string, string>) =>
  loadConfig(env, { hostname: () => "mx1.example.com" }).httpServer;

test("defaults: 15 s for headers, 30 s for a JSON body, 256 connections per address, total from the fd limit", () => {
  assert.deepEqual(load({}), {
    headersTimeoutMs: 15_000,
    bodyTimeoutMs: 30_000,
    maxConnectionsPerIp: 256,
    maxConnections: null,
  });
});

test("behind a proxy (TRUST_PROXY) every client shares its address: no per-address cap unless set", () => {
  assert.equal(load({ TRUST_PROXY: "loopback" }).maxConnectionsPerIp, 0);
  assert.equal(load({ TRUST_PROXY: "10.0.0.5", MAX_CONNECTIONS_PER_IP: "5000" }).maxConnectionsPerIp, 5000);
});

test("explicit values, 0 turning a cap off", () => {
  assert.deepEqual(
    load({
      HEADERS_TIMEOUT_MS: "10000",
      BODY_TIMEOUT_MS: "60000",
      MAX_CONNECTIONS_PER_IP: "0",
      MAX_CONNECTIONS: "0",
    }),
    { headersTimeoutMs: 10_000, bodyTimeoutMs: 60_000, maxConnectionsPerIp: 0, maxConnections: 0 },
  );
});

test("bad values stop the start, naming the variable", () => {
  for (const [name, value] of [
    ["HEADERS_TIMEOUT_MS", "500"],
    ["HEADERS_TIMEOUT_MS", "200000"],
    ["BODY_TIMEOUT_MS", "soon"],
    ["MAX_CONNECTIONS_PER_IP", "-1"],
    ["MAX_CONNECTIONS", "lots"],
  ] as const) {
    assert.throws(
      () => load({ [name]: value }),
      (e: unknown) => e instanceof ConfigError && e.message.startsWith(name),
    );
  }
});
