// When a dashboard tab renews its session (web/src/lib/session-plan.ts): in the last third of the
// token's own lifetime, after the user was present during it (an interaction, or a poll of a
// visible page), never at the cap.
import assert from "node:assert/strict";
import { test } from "node:test";
import { isRenewable, lastPresence, renewalOpensAt, shouldRenew } from "../../../web/src/lib/session-plan.ts";

const MIN = 60_000;
// A 15-minute token issued at 0, renewable for 12 h.
const token = { issuedAtMs: 0, expiresAtMs: 15 * MIN, renewableUntilMs: 12 * 60 * MIN };

test("the window opens when a third of the lifetime is left", () => {
  assert.equal(renewalOpensAt(token), 10 * MIN);
  assert.equal(renewalOpensAt({ ...token, expiresAtMs: 15_000 }), 10_000);
});

test("renews in the window after activity during the token's life", () => {
  const cases: Array<[string, number | null, number, boolean]> = [
    ["active, window open", 3 * MIN, 10 * MIN, true],
    ["active just now, near the end", 14 * MIN, 14.9 * MIN, true],
    ["active, window not open yet", 3 * MIN, 9.9 * MIN, false],
    ["never active", null, 12 * MIN, false],
    ["active only before this token", -1, 12 * MIN, false],
    ["expired", 3 * MIN, 15 * MIN, false],
  ];
  for (const [what, activity, now, expected] of cases)
    assert.equal(shouldRenew(token, activity, now), expected, what);
});

test("a token that already ends at the cap is not renewed; an unknown cap is left to the server", () => {
  const last = { issuedAtMs: 0, expiresAtMs: 15 * MIN, renewableUntilMs: 15 * MIN };
  assert.equal(isRenewable(last), false);
  assert.equal(shouldRenew(last, 12 * MIN, 12 * MIN), false);
  assert.equal(isRenewable({ ...token, renewableUntilMs: null }), true);
});

test("presence is the later of the last interaction and the last visible poll", () => {
  assert.equal(lastPresence(null, null), null);
  assert.equal(lastPresence(3 * MIN, null), 3 * MIN);
  assert.equal(lastPresence(null, 4 * MIN), 4 * MIN);
  assert.equal(lastPresence(3 * MIN, 11 * MIN), 11 * MIN);
  assert.equal(lastPresence(12 * MIN, 11 * MIN), 12 * MIN);
});

test("a page polled while visible renews without any interaction; polls only before this token do not", () => {
  // Never touched, but a task page on screen polled at minute 11 of this token.
  assert.equal(shouldRenew(token, lastPresence(null, 11 * MIN), 11 * MIN), true);
  // The last visible poll was under the previous token (then the tab was hidden): the session lapses.
  assert.equal(shouldRenew(token, lastPresence(null, -2_000), 12 * MIN), false);
});
