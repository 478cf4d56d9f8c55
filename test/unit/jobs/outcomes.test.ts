import assert from "node:assert/strict";
import { test } from "node:test";
import type { JobRecord } from "../../../src/db/queries/jobs.ts";
import { outcomeOfResult, outcomesOfFailure } from "../../../src/jobs/outcomes.ts";
import type { VerificationResult } from "../../../src/verify/index.ts";

const now = new Date("2026-01-01T00:00:00Z");
const job = (attempts: number): JobRecord => ({
  id: "00000000-0000-0000-0000-000000000001",
  taskId: "00000000-0000-0000-0000-000000000002",
  userId: null,
  position: 0,
  emailAddress: "bob@example.test",
  domain: "example.test",
  status: "processing",
  attempts,
  runAfter: new Date("2025-12-31T23:00:00Z"),
  lastError: null,
  emailId: null,
  createdAt: now,
  updatedAt: now,
});
const result = (over: Partial<VerificationResult>): VerificationResult => ({
  email: "bob@example.test",
  status: "valid",
  isRoleBased: false,
  isDisposable: false,
  hasMxRecords: true,
  hasReverseDns: true,
  domainName: "example.test",
  hostName: "mx.example.test",
  serverType: "postfix",
  isCatchall: false,
  validatedAt: now,
  unknownReason: null,
  needsPhysicalVerify: false,
  evidence: "",
  ...over,
});
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
    ],
    [63_000, "greylisted", false],
  );
  const plain = outcomeOfResult(job(2), { ...grey, retryAfterMs: null }, now, schedules);
  assert.equal(plain.kind === "retry" && plain.runAfter.getTime() - now.getTime(), 900_000);
  assert.equal(outcomeOfResult(job(3), grey, now, schedules).kind, "result");
});

void test("our own interruption: back at once, the attempt not counted", () => {
  const cut = outcomeOfResult(
    job(1),
    result({ status: "unknown", unknownReason: "cancelled" }),
    now,
    schedules,
  );
  assert.deepEqual(cut.kind === "retry" && [cut.runAfter, cut.refundAttempt], [now, true]);
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
