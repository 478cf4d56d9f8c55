import assert from "node:assert/strict";
import { test } from "node:test";
import type { ConnectPort, DnsPort } from "../../../src/verify/ports.ts";
import { createEngine } from "../../../src/verify/engine.ts";
import { parseSocksUrl } from "../../../src/verify/smtp/socks-connect.ts";

const noConnect: ConnectPort = {
  connect: () => {
    throw new Error("SMTP must not be reached");
  },
};
const deadDns = (calls: string[]): DnsPort => ({
  mx: async (d) => (calls.push(d), { kind: "nxdomain" }),
  addresses: async () => ({ kind: "nxdomain" }),
  reverse: async () => ({ kind: "nxdomain" }),
});
const clock = { now: () => new Date("2025-01-02T03:04:05Z") };

void test("disposable domains are answered without DNS or SMTP", async () => {
  const calls: string[] = [];
  const engine = createEngine({}, { dns: deadDns(calls), connect: noConnect, clock });
  const r = await engine.verifyOne("Someone@X7K2.Mailinator.com");
  assert.equal(r.status, "disposable_domain");
  assert.equal(r.isDisposable, true);
  assert.equal(r.email, "someone@x7k2.mailinator.com");
  assert.deepEqual(r.validatedAt, clock.now());
  assert.deepEqual(calls, []);
  await engine.close();
});

void test("verifyGroup: one result per input in order, duplicates and syntax failures included, one DNS lookup", async () => {
  const calls: string[] = [];
  const engine = createEngine({}, { dns: deadDns(calls), connect: noConnect, clock });
  const results = await engine.verifyGroup("gone.test", [
    "a@gone.test",
    "not an address",
    "A@Gone.test",
    "info@gone.test",
  ]);
  assert.deepEqual(
    results.map((r) => [r.email, r.status, r.isRoleBased]),
    [
      ["a@gone.test", "invalid", false],
      ["not an address", "invalid_syntax", false],
      ["a@gone.test", "invalid", false],
      ["info@gone.test", "invalid", true],
    ],
  );
  assert.deepEqual(calls, ["gone.test"]);
  await engine.close();
});

void test("addresses of another domain in a group are verified in their own group", async () => {
  const calls: string[] = [];
  const engine = createEngine({}, { dns: deadDns(calls), connect: noConnect, clock });
  const results = await engine.verifyGroup("one.test", ["a@one.test", "b@two.test"]);
  assert.deepEqual(
    results.map((r) => r.domainName),
    ["one.test", "two.test"],
  );
  assert.deepEqual(calls, ["one.test", "two.test"]);
  await engine.close();
});

void test("an aborted deadline during DNS returns a partial unknown timeout_dns result", async () => {
  const hangingDns: DnsPort = { ...deadDns([]), mx: () => new Promise(() => undefined) };
  const engine = createEngine({}, { dns: hangingDns, connect: noConnect, clock });
  // Not AbortSignal.timeout(): its timer is unref'd and nothing else keeps this test alive.
  const deadline = new AbortController();
  setTimeout(() => deadline.abort(), 20);
  const r = await engine.verifyOne("bob@slow.test", { signal: deadline.signal });
  assert.equal(r.status, "unknown");
  assert.equal(r.unknownReason, "timeout_dns");
  assert.equal(r.domainName, "slow.test");
  await engine.close();
});

void test("close() cancels running verifications with reason cancelled", async () => {
  const hangingDns: DnsPort = { ...deadDns([]), mx: () => new Promise(() => undefined) };
  const engine = createEngine({}, { dns: hangingDns, connect: noConnect, clock });
  const pending = engine.verifyOne("bob@slow.test");
  await new Promise((resolve) => setTimeout(resolve, 5));
  await engine.close();
  const r = await pending;
  assert.equal(r.unknownReason, "cancelled");
});

void test("checkSyntax and resolveDomain are exposed", async () => {
  const engine = createEngine({}, { dns: deadDns([]), connect: noConnect, clock });
  assert.equal(engine.checkSyntax("x@Bücher.example").ok, true);
  assert.deepEqual(await engine.resolveDomain("Gone.Test"), {
    kind: "no_mail",
    hasMxRecords: false,
    cause: "nxdomain",
  });
  await engine.close();
});

void test("SOCKS proxy URLs", () => {
  assert.deepEqual(parseSocksUrl("socks5://proxy.internal:1081"), { host: "proxy.internal", port: 1081 });
  assert.deepEqual(parseSocksUrl("socks5://us%40r:p%3Ass@10.0.0.1"), {
    host: "10.0.0.1",
    port: 1080,
    userId: "us@r",
    password: "p:ss",
  });
  assert.throws(() => parseSocksUrl("http://proxy:8080"));
});
