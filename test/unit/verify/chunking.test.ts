import assert from "node:assert/strict";
import { test } from "node:test";
import { isTooManyRecipients, settleTransaction, takeChunk } from "../../../src/verify/smtp/chunking.ts";
import type { SmtpReply } from "../../../src/verify/smtp/reply-reader.ts";

const ok: SmtpReply = { code: 250, enhanced: "2.1.5", text: "2.1.5 Ok" };
const missing: SmtpReply = { code: 550, enhanced: "5.1.1", text: "5.1.1 User unknown" };
const tooMany: SmtpReply = { code: 452, enhanced: "4.5.3", text: "4.5.3 Too many recipients" };

void test("recognises 'too many recipients' in its 452 and legacy 552 forms only", () => {
  assert.equal(isTooManyRecipients(tooMany), true);
  assert.equal(
    isTooManyRecipients({ code: 452, enhanced: null, text: "Too many recipients received this message" }),
    true,
  );
  assert.equal(
    isTooManyRecipients({ code: 552, enhanced: "5.5.3", text: "5.5.3 Too many recipients" }),
    true,
  );
  assert.equal(
    isTooManyRecipients({ code: 452, enhanced: "4.3.1", text: "4.3.1 Insufficient system storage" }),
    false,
  );
  assert.equal(isTooManyRecipients({ code: 552, enhanced: "5.2.2", text: "5.2.2 Mailbox full" }), false);
});

void test("takeChunk respects the limit and never takes less than one", () => {
  assert.deepEqual(takeChunk([1, 2, 3, 4, 5], 2), { chunk: [1, 2], rest: [3, 4, 5] });
  assert.deepEqual(takeChunk([1, 2], 50), { chunk: [1, 2], rest: [] });
  assert.deepEqual(takeChunk([1, 2], 0), { chunk: [1], rest: [2] });
});

void test("a transaction without refusals answers everything and keeps the limit", () => {
  const s = settleTransaction(["a", "b"], [ok, missing], 50);
  assert.deepEqual(
    s.answered.map((x) => x.item),
    ["a", "b"],
  );
  assert.deepEqual(s.resend, []);
  assert.equal(s.nextLimit, 50);
});

void test("452 after K RCPTs: the limit shrinks to K and the refused ones are resent in order", () => {
  const items = ["p", "a", "b", "c", "d", "e"];
  const replies = [ok, missing, ok, tooMany, tooMany, tooMany];
  const s = settleTransaction(items, replies, 50);
  assert.deepEqual(
    s.answered.map((x) => x.item),
    ["p", "a", "b"],
  );
  assert.deepEqual(s.resend, ["c", "d", "e"]);
  assert.equal(s.nextLimit, 3);
});

void test("a later transaction never raises the limit again", () => {
  assert.equal(settleTransaction(["a", "b", "c"], [ok, ok, tooMany], 2).nextLimit, 2);
});

void test("452 on the very first RCPT cannot make progress: answered as is, nothing resent", () => {
  const s = settleTransaction(["a", "b"], [tooMany, tooMany], 10);
  assert.deepEqual(s.resend, []);
  assert.equal(s.answered.length, 2);
  assert.equal(s.nextLimit, 10);
});

void test("simulated server with a limit of 4: every address answered, transactions shrink to 4", () => {
  const limit = 4;
  let queue = Array.from({ length: 23 }, (_, i) => `u${i.toString()}`);
  let current = 50;
  const answered: string[] = [];
  const sizes: number[] = [];
  while (queue.length > 0) {
    const { chunk, rest } = takeChunk(queue, current);
    sizes.push(chunk.length);
    const replies = chunk.map((_, i) => (i < limit ? ok : tooMany));
    const s = settleTransaction(chunk, replies, current);
    answered.push(...s.answered.map((x) => x.item));
    queue = [...s.resend, ...rest];
    current = s.nextLimit;
  }
  assert.deepEqual(sizes, [23, 4, 4, 4, 4, 3]);
  assert.equal(new Set(answered).size, 23);
});
