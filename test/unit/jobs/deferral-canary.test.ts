import assert from "node:assert/strict";
import { test } from "node:test";
import { CLAIM_LANE, type JobRecord } from "../../../src/db/queries/jobs.ts";
import {
  CANARY_SIZE,
  canaryVerdict,
  outcomesOfHeldBack,
  splitCanary,
} from "../../../src/jobs/deferral-canary.ts";
import { outcomeOfResult, outcomesOfUntried } from "../../../src/jobs/outcomes.ts";
import type { VerificationResult } from "../../../src/verify/index.ts";
import { jobRecord, NOW, verificationResult } from "./fixtures.ts";

const now = NOW;
const schedules = { deferredMs: [3_000, 6_000, 12_000], unreachableMs: [300] };

/** A greylisted answer for grey.test. */
const answer = (over: Partial<VerificationResult> = {}): VerificationResult =>
  verificationResult({
    email: "x@grey.test",
    status: "unknown",
    unknownReason: "greylisted",
    domainName: "grey.test",
    hostName: "mx.grey.test",
    ...over,
  });

/** Job i of grey.test: `deferred` retries made, its last answer `stored` (null: never tried). */
const job = (i: number, deferred: number, stored: VerificationResult | null = answer()): JobRecord =>
  jobRecord({
    id: `00000000-0000-0000-0000-${i.toString().padStart(12, "0")}`,
    position: i,
    emailAddress: `u${i}@grey.test`,
    domain: "grey.test",
    attempts: deferred + 1,
    deferredRetries: deferred,
    runAfter: now,
    claimLane: CLAIM_LANE.retry,
    lastError: "greylisted",
    retryResult: stored,
  });

test("a retry asks the first deferred retries and every address never asked; the others are held", () => {
  const retries = Array.from({ length: 20 }, (_, i) => job(i, 1));
  const untried = job(99, 0, null);
  const { ask, held } = splitCanary([...retries, untried]);
  assert.deepEqual(
    ask.map((j) => j.position),
    [...retries.slice(0, CANARY_SIZE).map((j) => j.position), 99],
  );
  assert.equal(held.length, 20 - CANARY_SIZE);
  // A rate limit or an unreachable host is asked as before: only a domain that holds everyone back.
  const limited = Array.from({ length: 20 }, (_, i) => job(i, 1, answer({ unknownReason: "rate_limited" })));
  assert.equal(splitCanary(limited).held.length, 0);
  assert.equal(splitCanary(retries.slice(0, CANARY_SIZE)).held.length, 0);
});

test("held back again: the held jobs take their own next step unasked, with their stored answer", () => {
  const jobs = Array.from({ length: 10 }, (_, i) => job(i, 1));
  const { ask, held } = splitCanary(jobs);
  const asked = ask.map((j) => outcomeOfResult(j, answer(), now, schedules));
  assert.equal(canaryVerdict(asked), "held_back");
  const outcomes = outcomesOfHeldBack(held, now, schedules);
  assert.equal(outcomes.length, held.length);
  for (const [i, o] of outcomes.entries()) {
    assert.equal(o.kind, "retry");
    if (o.kind !== "retry") continue;
    assert.equal(o.job, held[i]);
    assert.equal(o.schedule, "deferred", "a step of its chain");
    assert.equal(o.runAfter.getTime(), now.getTime() + 6_000, "the second delay");
    assert.equal(o.result, held[i]!.retryResult);
  }
  // The schedule spent: the stored answer stands, as the canary's does.
  const last = Array.from({ length: 10 }, (_, i) => job(i, 3));
  const split = splitCanary(last);
  const askedLast = split.ask.map((j) => outcomeOfResult(j, answer(), now, schedules));
  assert.ok(askedLast.every((o) => o.kind === "result"));
  assert.equal(canaryVerdict(askedLast), "held_back");
  assert.ok(outcomesOfHeldBack(split.held, now, schedules).every((o) => o.kind === "result"));
});

test("a canary with a definitive answer lets the others be asked; one never asked hands them back", () => {
  const jobs = Array.from({ length: 10 }, (_, i) => job(i, 1));
  const { ask, held } = splitCanary(jobs);
  const through = ask.map((j, i) =>
    outcomeOfResult(j, i === 0 ? answer({ status: "valid", unknownReason: null }) : answer(), now, schedules),
  );
  assert.equal(canaryVerdict(through), "through");
  const busy = outcomesOfUntried(ask);
  assert.equal(canaryVerdict(busy), "inconclusive");
  const unreachable = ask.map((j) =>
    outcomeOfResult(j, answer({ unknownReason: "connection_failed" }), now, schedules),
  );
  assert.equal(canaryVerdict(unreachable), "inconclusive");
  for (const o of outcomesOfUntried(held))
    assert.deepEqual(
      {
        kind: o.kind,
        schedule: o.kind === "retry" ? o.schedule : "-",
        refund: o.kind === "retry" && o.refundAttempt,
      },
      { kind: "retry", schedule: null, refund: true },
    );
});
