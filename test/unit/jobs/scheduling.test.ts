import assert from "node:assert/strict";
import { test } from "node:test";
import { hostBusyDelayMs, internalRetryDelayMs, temporaryRetryDelayMs } from "../../../src/jobs/backoff.ts";
import { createDomainHosts } from "../../../src/jobs/domain-hosts.ts";

test("temporary retries follow VERIFY_RETRY_DELAYS, then the result stands", () => {
  const schedule = [300_000, 900_000, 1_800_000];
  assert.deepEqual(
    [1, 2, 3, 4].map((attempts) => temporaryRetryDelayMs(attempts, schedule)),
    [300_000, 900_000, 1_800_000, null],
  );
  assert.equal(temporaryRetryDelayMs(0, schedule), null);
});

test("internal retries grow exponentially from 5 s, capped at 30 min, jittered ±25 %", () => {
  const mid = () => 0.5;
  assert.deepEqual(
    [1, 2, 3, 10, 20].map((a) => internalRetryDelayMs(a, mid)),
    [5_000, 10_000, 20_000, 1_800_000, 1_800_000],
  );
  assert.equal(
    internalRetryDelayMs(1, () => 0),
    3_750,
  );
  assert.equal(
    internalRetryDelayMs(1, () => 0.999_999),
    6_250,
  );
});

test("a busy host is retried within a second or so", () => {
  assert.equal(
    hostBusyDelayMs(() => 0),
    300,
  );
  assert.equal(
    hostBusyDelayMs(() => 0.999_999),
    1_000,
  );
});

test("claims skip the domains of saturated hosts and prefer domains of a host that just freed a slot", () => {
  const saturated = new Set<string>(["mx.big.test"]);
  const hosts = createDomainHosts((h) => saturated.has(h));
  hosts.learn("a.test", "mx.big.test");
  hosts.learn("b.test", "mx.big.test");
  hosts.learn("c.test", "mx.small.test");
  assert.deepEqual(hosts.domainsToSkip().sort(), ["a.test", "b.test"]);
  assert.deepEqual(hosts.domainsOfFreedHosts(), []);

  saturated.delete("mx.big.test");
  hosts.markFreed("mx.big.test");
  assert.deepEqual(hosts.domainsToSkip(), []);
  assert.deepEqual(hosts.domainsOfFreedHosts().sort(), ["a.test", "b.test"]);
  assert.deepEqual(hosts.domainsOfFreedHosts(), [], "one preferred claim per freed slot");
});
