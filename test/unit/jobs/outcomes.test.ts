import assert from "node:assert/strict";
import { test } from "node:test";
import type { JobRecord } from "../../../src/db/queries/jobs.ts";
import {
  outcomeOfResult,
  outcomesOfFailure,
  outcomesOfUnrecorded,
  settleRetryPastEnd,
  firstDeferralsOf,
  outcomesOfUntried,
} from "../../../src/jobs/outcomes.ts";
import type { VerificationResult } from "../../../src/verify/index.ts";
import { jobRecord, NOW, verificationResult } from "./fixtures.ts";

const now = NOW;
const job = (attempts: number, retries: { deferred?: number; unreachable?: number } = {}): JobRecord =>
  jobRecord({
    attempts,
    deferredRetries: retries.deferred ?? 0,
    unreachableRetries: retries.unreachable ?? 0,
  });
const result = (over: Partial<VerificationResult>): VerificationResult => verificationResult(over);
const schedules = { deferredMs: [300_000, 900_000], unreachableMs: [30_000] };

void test("a definitive answer is stored; a final unknown too", () => {
  assert.equal(outcomeOfResult(job(1), result({}), now, schedules).kind, "result");
  const blocked = result({ status: "unknown", unknownReason: "ip_blocklisted" });
  assert.equal(outcomeOfResult(job(1), blocked, now, schedules).kind, "result");
});

void test("greylisted: retried on the server's hint, else the schedule; then the answer stands", () => {
  const grey = result({ status: "unknown", unknownReason: "greylisted", retryAfterMs: 60_000 });
  const hinted = outcomeOfResult(job(1), grey, now, schedules);
  assert.deepEqual(
    hinted.kind === "retry" && [
      hinted.runAfter.getTime() - now.getTime(),
      hinted.error,
      hinted.refundAttempt,
      hinted.schedule,
    ],
    [63_000, "greylisted", false, "deferred"],
  );
  const plain = outcomeOfResult(job(2, { deferred: 1 }), { ...grey, retryAfterMs: null }, now, schedules);
  assert.equal(plain.kind === "retry" && plain.runAfter.getTime() - now.getTime(), 900_000);
  assert.equal(outcomeOfResult(job(3, { deferred: 2 }), grey, now, schedules).kind, "result");
});

void test("our own resolvers or proxy failing: the patient (deferred) schedule, not the short one; then the unknown stands", () => {
  const down = result({
    status: "unknown",
    unknownReason: "dns_timeout",
    dependencyFailure: { dependency: "dns_resolver", kind: "timeout", detail: "resolvers silent" },
  });
  const delayOf = (o: ReturnType<typeof outcomeOfResult>) =>
    o.kind === "retry" ? [o.runAfter.getTime() - now.getTime(), o.schedule] : o.kind;
  assert.deepEqual(delayOf(outcomeOfResult(job(1), down, now, schedules)), [300_000, "deferred"]);
  assert.deepEqual(delayOf(outcomeOfResult(job(2, { deferred: 1 }), down, now, schedules)), [
    900_000,
    "deferred",
  ]);
  assert.equal(delayOf(outcomeOfResult(job(3, { deferred: 2 }), down, now, schedules)), "result");
  // The same unknown from the target's own DNS takes the short unreachable schedule.
  const theirs = result({ status: "unknown", unknownReason: "dns_timeout" });
  assert.deepEqual(delayOf(outcomeOfResult(job(1), theirs, now, schedules)), [30_000, "unreachable"]);
});

void test("the schedule is indexed by the retries of its cause, not by claims", () => {
  const grey = result({ status: "unknown", unknownReason: "greylisted" });
  const delayOf = (o: ReturnType<typeof outcomeOfResult>) =>
    o.kind === "retry" ? o.runAfter.getTime() - now.getTime() : o.kind;
  // Claimed a second time because the first worker crashed (or its lease ran out): still the
  // first step of the greylisting schedule. Before: attempts 2 → 900 s.
  assert.equal(delayOf(outcomeOfResult(job(2), grey, now, schedules)), 300_000);
  // Five claims, none of them a greylisting retry: the whole schedule is still ahead.
  assert.equal(delayOf(outcomeOfResult(job(5), grey, now, schedules)), 300_000);
  // Retries for another cause don't use up this one's: two unreachable retries, then greylisted.
  assert.equal(delayOf(outcomeOfResult(job(3, { unreachable: 2 }), grey, now, schedules)), 300_000);
  const down = result({ status: "unknown", unknownReason: "connection_failed" });
  assert.equal(delayOf(outcomeOfResult(job(3, { deferred: 2 }), down, now, schedules)), 30_000);
  const afterDown = outcomeOfResult(job(3, { unreachable: 1 }), down, now, schedules);
  assert.equal(afterDown.kind, "result", "the unreachable schedule (one step) is used up");
  const retried = outcomeOfResult(job(4), down, now, schedules);
  assert.equal(retried.kind === "retry" && retried.schedule, "unreachable");
});

void test("our own interruption: back at once, the attempt not counted", () => {
  const cut = outcomeOfResult(
    job(1),
    result({ status: "unknown", unknownReason: "cancelled" }),
    now,
    schedules,
  );
  assert.deepEqual(cut.kind === "retry" && [cut.runAfter, cut.refundAttempt, cut.schedule], [
    now,
    true,
    null,
  ]);
});

void test("a group that could not run: busy hosts keep or delay the queue place, faults back off then fail", () => {
  const [local] = outcomesOfFailure([job(1)], { kind: "host_busy_locally" }, now, 3);
  assert.deepEqual(local?.kind === "retry" && [local.runAfter, local.refundAttempt], [job(1).runAfter, true]);
  const [cluster] = outcomesOfFailure([job(1)], { kind: "host_busy_in_cluster" }, now, 3, () => 0);
  assert.equal(cluster?.kind === "retry" && cluster.runAfter.getTime() - now.getTime(), 300);
  const [stop] = outcomesOfFailure([job(1)], { kind: "stopping" }, now, 3);
  assert.deepEqual(stop?.kind === "retry" && stop.runAfter, now);
  const [fault] = outcomesOfFailure([job(1)], { kind: "internal", message: "boom" }, now, 3, () => 0.5);
  assert.deepEqual(
    fault?.kind === "retry" && [fault.runAfter.getTime() - now.getTime(), fault.error, fault.refundAttempt],
    [5_000, "boom", false],
  );
  const [last] = outcomesOfFailure([job(3)], { kind: "internal", message: "boom" }, now, 3);
  assert.deepEqual(last, { kind: "failed", job: job(3), error: "boom" });
});

void test("a group whose results could not be recorded goes back to the queue", () => {
  const waiting = { ...job(2, { deferred: 1 }), lastError: "greylisted" };
  // The database was out of reach: at once, the attempt refunded, the last reason kept.
  const [lost] = outcomesOfUnrecorded([waiting], { databaseUnavailable: true, message: "gone" }, now, 3);
  assert.deepEqual(lost, {
    kind: "retry",
    job: waiting,
    runAfter: now,
    error: "greylisted",
    refundAttempt: true,
    schedule: null,
    result: null,
  });
  // A fault of ours: backs off like an internal failure, and fails on the last attempt, so a
  // write that can never succeed does not loop forever.
  const [fault] = outcomesOfUnrecorded(
    [job(1)],
    { databaseUnavailable: false, message: "bug" },
    now,
    3,
    () => 0.5,
  );
  assert.deepEqual(
    fault?.kind === "retry" && [fault.runAfter.getTime() - now.getTime(), fault.error, fault.refundAttempt],
    [5_000, "recording failed: bug", false],
  );
  const [last] = outcomesOfUnrecorded([job(3)], { databaseUnavailable: false, message: "bug" }, now, 3);
  assert.deepEqual(last, { kind: "failed", job: job(3), error: "recording failed: bug" });
});

void test("a host whose slot table is unreachable: back soon, the attempt not counted", () => {
  const [o] = outcomesOfFailure([job(1)], { kind: "slots_unavailable" }, now, 3, () => 0);
  assert.deepEqual(
    o?.kind === "retry" && [o.runAfter.getTime() - now.getTime(), o.refundAttempt, o.schedule],
    [300, true, null],
  );
});

void test("a retry past its task's retries end records the answer it retries; other retries are kept", () => {
  const answer = result({ status: "unknown", unknownReason: "greylisted" });
  const retry = outcomeOfResult(job(1), answer, now, { deferredMs: [300_000], unreachableMs: [] });
  assert.equal(retry.kind, "retry");
  const at = (ms: number) => new Date(now.getTime() + ms);
  // Due after the end: settled with the very answer.
  assert.deepEqual(settleRetryPastEnd(retry, at(299_999)), { kind: "result", job: job(1), result: answer });
  // Due at or before the end, or a task without a window: still retried.
  assert.equal(settleRetryPastEnd(retry, at(300_000)), retry);
  assert.equal(settleRetryPastEnd(retry, null), retry);
  // A busy host or our own shutdown tried nothing: kept, whatever the end.
  const [busy] = outcomesOfFailure([job(1)], { kind: "host_busy_in_cluster" }, now, 3, () => 0.5);
  assert.equal(settleRetryPastEnd(busy!, at(-1)), busy);
});

void test("a first deferral by greylisting or a temporary failure names its task and domain, once", () => {
  const greylisted = result({ status: "unknown", unknownReason: "greylisted" });
  const temporary = result({ status: "unknown", unknownReason: "temporary_failure" });
  const limited = result({ status: "unknown", unknownReason: "rate_limited" });
  const outcomes = [
    outcomeOfResult(job(1), greylisted, now, schedules),
    outcomeOfResult({ ...job(1), id: "00000000-0000-0000-0000-000000000009" }, temporary, now, schedules),
  ];
  assert.deepEqual(firstDeferralsOf(outcomes), [{ taskId: job(1).taskId, domain: "example.test" }]);
  // A later step of the chain, a rate limit (more at once is what it refuses), our resolver failing: none.
  assert.deepEqual(
    firstDeferralsOf([outcomeOfResult(job(2, { deferred: 1 }), greylisted, now, schedules)]),
    [],
  );
  assert.deepEqual(
    firstDeferralsOf([
      {
        kind: "retry",
        job: job(1),
        runAfter: now,
        error: "rate_limited",
        refundAttempt: false,
        schedule: "deferred",
        result: limited,
      },
    ]),
    [],
  );
  const resolverDown = result({
    status: "unknown",
    unknownReason: "temporary_failure",
    dependencyFailure: { dependency: "dns_resolver", kind: "unavailable", detail: "refused" },
  });
  assert.deepEqual(firstDeferralsOf([outcomeOfResult(job(1), resolverDown, now, schedules)]), []);
});

void test("untried jobs go back in their place, attempt refunded; a first touch's rest behind, its claim counted", () => {
  const [kept] = outcomesOfUntried([job(1)]);
  assert.deepEqual(kept, {
    kind: "retry",
    job: job(1),
    runAfter: job(1).runAfter,
    error: null,
    refundAttempt: true,
    schedule: null,
    result: null,
  });
  const [rest] = outcomesOfUntried([job(1)], { runAfter: now, countClaim: true });
  assert.equal(rest?.kind === "retry" && rest.runAfter, now);
  assert.equal(rest?.kind === "retry" && rest.refundAttempt, false);
});

void test("a schedule's delay counts from when the server was asked; a server's hint from its reply", () => {
  const askedAt = new Date(now.getTime() - 4_000);
  const greylisted = result({ status: "unknown", unknownReason: "greylisted" });
  const stepped = outcomeOfResult(job(1), greylisted, now, schedules, askedAt);
  assert.equal(stepped.kind === "retry" && stepped.runAfter.getTime(), askedAt.getTime() + 300_000);
  const hinted = outcomeOfResult(job(1), { ...greylisted, retryAfterMs: 60_000 }, now, schedules, askedAt);
  assert.equal(hinted.kind === "retry" && hinted.runAfter.getTime(), now.getTime() + 63_000);
});

void test("a provider's pace governs what it held back: retried when it has room, no schedule step, the attempt undone; settled at the window's end", () => {
  const roomAt = new Date(now.getTime() + 45_000);
  const refused = result({
    status: "unknown",
    unknownReason: "rate_limited",
    pacedBy: { provider: "google", retryAt: roomAt, unasked: false },
  });
  // However many deferred retries it already had: the schedule is not consulted.
  const o = outcomeOfResult(job(5, { deferred: 2 }), refused, now, schedules);
  assert.deepEqual(o.kind === "retry" && [o.runAfter, o.error, o.refundAttempt, o.schedule, o.result], [
    roomAt,
    "rate_limited",
    true,
    null,
    refused,
  ]);
  // No time known (the pace's store was out of reach): soon.
  const unknownRoom = { ...refused, pacedBy: { provider: "google", retryAt: null, unasked: true } };
  const soon = outcomeOfResult(job(1), unknownRoom, now, schedules);
  assert.equal(soon.kind === "retry" && soon.runAfter.getTime() - now.getTime(), 5_000);
  // Due after the task's retries end: the unknown stands.
  assert.deepEqual(settleRetryPastEnd(o, new Date(roomAt.getTime() - 1)), {
    kind: "result",
    job: job(5, { deferred: 2 }),
    result: refused,
  });
  // A plain rate limit without a pace keeps the deferred schedule.
  const plain = outcomeOfResult(
    job(1),
    result({ status: "unknown", unknownReason: "rate_limited" }),
    now,
    schedules,
  );
  assert.equal(plain.kind === "retry" && plain.schedule, "deferred");
});
