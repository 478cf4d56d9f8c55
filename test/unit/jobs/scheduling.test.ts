import assert from "node:assert/strict";
import { test } from "node:test";
import {
  hostBusyDelayMs,
  internalRetryDelayMs,
  retryClassOf,
  retryDelayMs,
} from "../../../src/jobs/backoff.ts";
import { createDomainHosts } from "../../../src/jobs/domain-hosts.ts";
import { FIRST_TOUCH_SIZE, mayCutToFirstTouch } from "../../../src/jobs/first-touch.ts";
import { CLAIM_LANE, type JobRecord } from "../../../src/db/queries/jobs.ts";
import { jobRecord } from "./fixtures.ts";

const schedules = { deferredMs: [300_000, 900_000, 1_800_000], unreachableMs: [30_000, 120_000] };

test("greylisting and 4xx retries follow VERIFY_RETRY_DELAYS, then the result stands", () => {
  assert.deepEqual(
    [1, 2, 3, 4].map((attempts) => retryDelayMs("greylisted", attempts, schedules)),
    [300_000, 900_000, 1_800_000, null],
  );
  assert.equal(retryDelayMs("rate_limited", 0, schedules), null);
  assert.equal(retryDelayMs("temporary_failure", 2, schedules), 900_000);
});

test("a server's hint replaces the schedule, landing just after the hinted window", () => {
  assert.equal(retryDelayMs("greylisted", 1, schedules, 300_000), 315_000);
  assert.equal(retryDelayMs("greylisted", 1, schedules, 5_000), 6_000);
  // The hint never adds attempts: the schedule's length still bounds them.
  assert.equal(retryDelayMs("greylisted", 4, schedules, 5_000), null);
});

test("unreachable hosts and DNS failures retry briefly and give up within minutes", () => {
  for (const reason of [
    "connection_failed",
    "connection_dropped",
    "smtp_timeout",
    "dns_error",
    "dns_timeout",
  ] as const) {
    assert.equal(retryClassOf(reason), "unreachable");
    assert.deepEqual(
      [1, 2, 3].map((attempts) => retryDelayMs(reason, attempts, schedules, 300_000)),
      [30_000, 120_000, null],
      reason,
    );
  }
});

test("standing refusals and our own interruptions are not rescheduled by the schedule", () => {
  for (const reason of [
    "ip_blocklisted",
    "policy_rejection",
    "unclassified_rejection",
    "address_literal",
    "private_host_refused",
  ] as const) {
    assert.equal(retryClassOf(reason), "final");
    assert.equal(retryDelayMs(reason, 1, schedules), null);
  }
  assert.equal(retryClassOf("cancelled"), "interrupted");
  assert.equal(retryDelayMs("timeout_smtp", 1, schedules), null);
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

test("a host's count of other known domains follows what was learnt, moves and forgets", () => {
  const hosts = createDomainHosts(() => false);
  hosts.learn("a.test", "192.0.2.1");
  hosts.learn("b.test", "192.0.2.1");
  hosts.learn("c.test", "192.0.2.1");
  assert.equal(hosts.otherDomainsAt("192.0.2.1", "a.test"), 2);
  assert.equal(hosts.otherDomainsAt("192.0.2.1", "new.test"), 3);
  // Learnt again at the same host: counted once.
  hosts.learn("a.test", "192.0.2.1");
  assert.equal(hosts.otherDomainsAt("192.0.2.1", "new.test"), 3);
  // Moved to another host: no longer counted at the first.
  hosts.learn("c.test", "192.0.2.2");
  assert.equal(hosts.otherDomainsAt("192.0.2.1", "new.test"), 2);
  assert.equal(hosts.otherDomainsAt("192.0.2.2", "c.test"), 0);
});

const claimed = (n: number, over: Partial<JobRecord> = {}): JobRecord[] =>
  Array.from({ length: n }, (_, i) =>
    jobRecord({
      id: `00000000-0000-0000-0000-${i.toString().padStart(12, "0")}`,
      position: i,
      emailAddress: `u${i}@a.test`,
      domain: "a.test",
      ...over,
    }),
  );

test("only an untried first chunk bigger than a first touch may be cut to one", () => {
  assert.equal(mayCutToFirstTouch(claimed(FIRST_TOUCH_SIZE + 1)), true);
  assert.equal(mayCutToFirstTouch(claimed(FIRST_TOUCH_SIZE)), false, "a first touch already");
  assert.equal(mayCutToFirstTouch(claimed(40, { claimLane: CLAIM_LANE.bulk })), false, "the bulk");
  const withRetry = claimed(40);
  withRetry[0] = { ...withRetry[0]!, claimLane: CLAIM_LANE.retry };
  assert.equal(mayCutToFirstTouch(withRetry), false, "a retry of the domain rides along");
  assert.equal(
    mayCutToFirstTouch(claimed(40, { attempts: 2 })),
    false,
    "a first touch's rest, claimed again",
  );
});
