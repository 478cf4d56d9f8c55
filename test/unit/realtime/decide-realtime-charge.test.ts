import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  decideRealtimeCharge,
  FREE_REPEAT_WINDOW_MS,
  type RealtimeChargeDecision,
  type RealtimeChargeFacts,
} from "../../../src/realtime/charge-rules.ts";

const now = new Date("2026-03-10T12:00:00Z");
const ago = (ms: number): Date => new Date(now.getTime() - ms);
const HOUR = 60 * 60 * 1000;

// [what, facts (now is added), decision]
const TABLE: [string, Omit<RealtimeChargeFacts, "now">, RealtimeChargeDecision][] = [
  ["never paid, nothing known yet", { lastChargedAt: undefined }, "charge"],
  ["paid an hour ago", { lastChargedAt: ago(HOUR) }, "free"],
  ["paid just inside the window", { lastChargedAt: ago(FREE_REPEAT_WINDOW_MS - 1) }, "free"],
  ["paid exactly a window ago", { lastChargedAt: ago(FREE_REPEAT_WINDOW_MS) }, "charge"],
  ["paid two days ago", { lastChargedAt: ago(2 * FREE_REPEAT_WINDOW_MS) }, "charge"],
  ["unknown result, never paid", { lastChargedAt: undefined, status: "unknown" }, "free"],
  ["valid result, never paid", { lastChargedAt: undefined, status: "valid" }, "charge"],
  [
    "invalid result, paid long ago",
    { lastChargedAt: ago(3 * FREE_REPEAT_WINDOW_MS), status: "invalid" },
    "charge",
  ],
  ["valid result, paid an hour ago", { lastChargedAt: ago(HOUR), status: "valid" }, "free"],
  ["no credit, never paid", { lastChargedAt: undefined, balance: 0 }, "refuse"],
  ["no credit, paid an hour ago", { lastChargedAt: ago(HOUR), balance: 0 }, "free"],
  ["no credit, paid two days ago", { lastChargedAt: ago(2 * FREE_REPEAT_WINDOW_MS), balance: 0 }, "refuse"],
  ["negative balance", { lastChargedAt: undefined, balance: -3 }, "refuse"],
  ["one credit", { lastChargedAt: undefined, balance: 1 }, "charge"],
  [
    "many credits, paid two days ago",
    { lastChargedAt: ago(2 * FREE_REPEAT_WINDOW_MS), balance: 50 },
    "charge",
  ],
];

describe("decideRealtimeCharge", () => {
  for (const [what, facts, expected] of TABLE) {
    test(`${what}: ${expected}`, () => {
      assert.equal(decideRealtimeCharge({ now, ...facts }), expected);
    });
  }
});
