import assert from "node:assert/strict";
import { test } from "node:test";
import { WEBHOOK_RETRY_DELAYS_MS, webhookRetryDelayMs } from "../../../src/webhooks/retry-schedule.ts";

const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;

void test("without jitter (rand = 0) the schedule is 30 s, 2 min, 10 min, 30 min, then hourly", () => {
  const cases: Array<[attempt: number, delayMs: number]> = [
    [1, 30 * S],
    [2, 2 * MIN],
    [3, 10 * MIN],
    [4, 30 * MIN],
    [5, H],
    [6, H],
    [27, H],
    [1000, H],
  ];
  for (const [attempt, expected] of cases) {
    assert.equal(
      webhookRetryDelayMs(attempt, () => 0),
      expected,
      `attempt ${attempt}`,
    );
  }
});

void test("jitter only shortens the delay, by at most 20 %", () => {
  const cases: Array<[attempt: number, rand: number, delayMs: number]> = [
    [1, 0.5, 27 * S], // 30 s × (1 − 0.2 × 0.5)
    [1, 0.999999, 24 * S],
    [2, 0.25, 114 * S], // 120 s × 0.95
    [5, 0.5, 54 * MIN],
    [40, 0.999999, 48 * MIN + 1], // 3 600 000 × 0.8000002, rounded
  ];
  for (const [attempt, rand, expected] of cases) {
    assert.equal(
      webhookRetryDelayMs(attempt, () => rand),
      expected,
      `attempt ${attempt}, rand ${rand}`,
    );
  }
});

void test("the cap holds for every attempt and every rand in [0, 1)", () => {
  for (let attempt = 1; attempt <= 60; attempt++) {
    for (const r of [0, 0.1, 0.5, 0.9, 0.999999]) {
      const delay = webhookRetryDelayMs(attempt, () => r);
      assert.ok(delay <= H, `attempt ${attempt} rand ${r}: ${delay}`);
      assert.ok(delay >= 24 * S, `attempt ${attempt} rand ${r}: ${delay}`);
    }
  }
});

void test("the schedule never shrinks from one attempt to the next (without jitter)", () => {
  const delays = Array.from({ length: 10 }, (_, i) => webhookRetryDelayMs(i + 1, () => 0));
  for (let i = 1; i < delays.length; i++) assert.ok(delays[i]! >= delays[i - 1]!, `${delays.join(",")}`);
  assert.deepEqual(delays.slice(0, WEBHOOK_RETRY_DELAYS_MS.length), [...WEBHOOK_RETRY_DELAYS_MS]);
});

void test("out-of-range attempt numbers behave like the first attempt", () => {
  assert.equal(
    webhookRetryDelayMs(0, () => 0),
    30 * S,
  );
  assert.equal(
    webhookRetryDelayMs(-3, () => 0),
    30 * S,
  );
});

void test("about 28 attempts fit the default 24 h window", () => {
  let elapsed = 0;
  let attempts = 1;
  while (elapsed + webhookRetryDelayMs(attempts, () => 0) <= 24 * H) {
    elapsed += webhookRetryDelayMs(attempts, () => 0);
    attempts++;
  }
  assert.equal(attempts, 28);
});
