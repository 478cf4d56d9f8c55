// Which secrets sign a delivery (src/webhooks/signing.ts): the current one, plus the previous one
// while a rotation's grace period lasts; the header then carries one "v1," entry per secret.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { signingSecrets, signWebhook } from "../../../src/webhooks/signing.ts";

const current = "whsec_" + randomBytes(24).toString("base64");
const previous = "whsec_" + randomBytes(24).toString("base64");
const until = new Date("2026-03-10T12:00:00Z");
const ms = (delta: number) => new Date(until.getTime() + delta);

test("the previous secret signs until the end of the grace period, exclusive", () => {
  const cases: Array<[string, Date, string[]]> = [
    ["an hour before", ms(-3_600_000), [current, previous]],
    ["1 ms before", ms(-1), [current, previous]],
    ["at the end", until, [current]],
    ["after", ms(1), [current]],
  ];
  for (const [label, at, expected] of cases)
    assert.deepEqual(signingSecrets(current, { secret: previous, until }, at), expected, label);
});

test("no previous secret, or the same one twice: one signature", () => {
  assert.deepEqual(signingSecrets(current, null, ms(-1)), [current]);
  assert.deepEqual(signingSecrets(current, { secret: current, until }, ms(-1)), [current]);
});

test("signWebhook: one secret or several, space-separated in the given order", () => {
  const at = ms(0);
  const one = signWebhook(current, "msg_1", at, "{}");
  const both = signWebhook([current, previous], "msg_1", at, "{}");
  assert.equal(both["webhook-signature"].split(" ")[0], one["webhook-signature"]);
  assert.equal(
    both["webhook-signature"].split(" ")[1],
    signWebhook(previous, "msg_1", at, "{}")["webhook-signature"],
  );
  assert.deepEqual(signWebhook([current], "msg_1", at, "{}"), one);
  assert.throws(() => signWebhook([], "msg_1", at, "{}"), TypeError);
});
