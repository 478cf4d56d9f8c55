// The deliverable / risky / undeliverable summary of a task (web/src/lib/verdict-groups.ts):
// every result status is in exactly one group, and the shares are of the addresses with a result.
import assert from "node:assert/strict";
import { test } from "node:test";
import { RESULT_STATUSES } from "../../../web/src/lib/explain.ts";
import {
  GROUP_STATUSES,
  groupShares,
  percentOf,
  VERDICT_GROUPS,
} from "../../../web/src/lib/verdict-groups.ts";

test("each result status belongs to exactly one group", () => {
  const grouped = VERDICT_GROUPS.flatMap((g) => GROUP_STATUSES[g]);
  assert.deepEqual([...grouped].sort(), [...RESULT_STATUSES].sort());
});

test("shares of a finished list", () => {
  const shares = groupShares({
    valid: 2,
    invalid: 2,
    catchall: 1,
    invalid_syntax: 0,
    disposable_domain: 1,
    unknown: 1,
  });
  assert.deepEqual(shares, [
    { group: "deliverable", count: 2, percent: 29 },
    { group: "risky", count: 2, percent: 29 },
    { group: "undeliverable", count: 3, percent: 43 },
  ]);
});

test("no result yet: every share is 0", () => {
  const none = { valid: 0, invalid: 0, catchall: 0, invalid_syntax: 0, disposable_domain: 0, unknown: 0 };
  assert.deepEqual(
    groupShares(none).map((s) => s.percent),
    [0, 0, 0],
  );
});

test("a small count is never shown as 0 %, a partial one never as 100 %", () => {
  assert.equal(percentOf(1, 1000), 1);
  assert.equal(percentOf(999, 1000), 99);
  assert.equal(percentOf(1000, 1000), 100);
  assert.equal(percentOf(0, 1000), 0);
  assert.equal(percentOf(5, 10), 50);
});
