// The ledger keys of a task's credit movements are stored in credit_transactions and make each
// movement happen once: a key that changed shape would let a retry write a second row. Each one is
// pinned here to the letter.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  creditsToReserve,
  isBillable,
  isBillableAddress,
  TASK_LEDGER_REASON,
  taskLedgerKey,
} from "../../../src/tasks/billing.ts";
import type { VerificationStatus } from "../../../src/verify/index.ts";

const TASK = "0190a3c4-5b6d-7e8f-9a0b-1c2d3e4f5a6b";

describe("task ledger keys", () => {
  test("reserve, finish refund and cancel refund", () => {
    assert.equal(taskLedgerKey.reserve(TASK), "task:0190a3c4-5b6d-7e8f-9a0b-1c2d3e4f5a6b:reserve");
    assert.equal(taskLedgerKey.finishRefund(TASK), "task:0190a3c4-5b6d-7e8f-9a0b-1c2d3e4f5a6b:refund");
    assert.equal(taskLedgerKey.cancelRefund(TASK), "task:0190a3c4-5b6d-7e8f-9a0b-1c2d3e4f5a6b:cancel-refund");
  });

  test("a late charge is keyed by the smallest job id of its group, whatever the order", () => {
    const jobs = ["0190-c", "0190-a", "0190-b"];
    assert.equal(
      taskLedgerKey.lateCharge(TASK, jobs),
      "task:0190a3c4-5b6d-7e8f-9a0b-1c2d3e4f5a6b:late:0190-a",
    );
    assert.equal(taskLedgerKey.lateCharge(TASK, ["0190-a"]), taskLedgerKey.lateCharge(TASK, jobs));
    assert.deepEqual(jobs, ["0190-c", "0190-a", "0190-b"], "the caller's list is not sorted in place");
  });

  test("the reasons", () => {
    assert.deepEqual(TASK_LEDGER_REASON, {
      reserve: "task_reservation",
      finishRefund: "task_unknown_refund",
      cancelRefund: "task_cancelled_refund",
      lateCharge: "task_cancelled_late_result",
    });
  });
});

describe("what is billable", () => {
  // [address, status, billable]
  const TABLE: [string, VerificationStatus, boolean][] = [
    ["a@example.test", "valid", true],
    ["a@example.test", "invalid", true],
    ["a@example.test", "catchall", true],
    ["a@example.test", "disposable_domain", true],
    ["a@example.test", "invalid_syntax", true],
    ["a@example.test", "unknown", false],
    ["valid@sandbox.mailprobe.invalid", "valid", false],
    ["unknown-greylisted@sandbox.mailprobe.invalid", "unknown", false],
    ["VALID@Sandbox.Mailprobe.Invalid", "valid", false],
    ["a@sub.sandbox.mailprobe.invalid", "valid", true],
    ["a@sandbox.mailprobe.invalid.test", "valid", true],
    ["not an address@sandbox.mailprobe.invalid", "invalid_syntax", false],
  ];
  for (const [address, status, billable] of TABLE) {
    test(`${address} ${status}: ${billable ? "billed" : "free"}`, () => {
      assert.equal(isBillable(address, status), billable);
    });
  }

  test("a task reserves one credit per address outside the sandbox", () => {
    const jobs = ["a@example.test", "valid@sandbox.mailprobe.invalid", "b@example.test"].map(
      (emailAddress) => ({
        emailAddress,
      }),
    );
    assert.equal(creditsToReserve(jobs), 2);
    assert.equal(creditsToReserve([]), 0);
    assert.equal(isBillableAddress("x@sandbox.mailprobe.invalid"), false);
  });
});
