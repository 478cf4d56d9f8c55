import assert from "node:assert/strict";
import { test } from "node:test";
import {
  isTooManyRecipients,
  nextPace,
  settleWrite,
  type PaceState,
} from "../../../src/verify/smtp/chunking.ts";
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

const fresh: PaceState = {
  errors: 0,
  errorBudget: 9,
  rcptInTransaction: 0,
  transactionLimit: 50,
  rcptOnConnection: 0,
  connectionLimit: null,
  pending: 200,
};

void test("a write never holds more RCPTs than the connection may still see rejected", () => {
  assert.deepEqual(nextPace(fresh), { kind: "send", newTransaction: true, size: 9 });
  // Three rejections so far: six more may come back rejected at worst.
  assert.deepEqual(nextPace({ ...fresh, errors: 3, rcptInTransaction: 9, rcptOnConnection: 9 }), {
    kind: "send",
    newTransaction: false,
    size: 6,
  });
  assert.deepEqual(nextPace({ ...fresh, errors: 9 }), { kind: "reconnect", why: "error_budget" });
  // Soft limit 10 (Postfix): the worst case of every write together stays below it.
  let s = { ...fresh };
  for (let writes = 0; writes < 100; writes++) {
    const pace = nextPace(s);
    if (pace.kind !== "send") break;
    s = { ...s, errors: s.errors + pace.size, rcptInTransaction: s.rcptInTransaction + pace.size };
  }
  assert.ok(s.errors <= 9, String(s.errors));
});

void test("a full transaction starts a new one; the per-connection limit means reconnect", () => {
  assert.deepEqual(nextPace({ ...fresh, rcptInTransaction: 50, rcptOnConnection: 50 }), {
    kind: "send",
    newTransaction: true,
    size: 9,
  });
  assert.deepEqual(nextPace({ ...fresh, rcptInTransaction: 48, rcptOnConnection: 48 }), {
    kind: "send",
    newTransaction: false,
    size: 2,
  });
  assert.deepEqual(nextPace({ ...fresh, connectionLimit: 20, rcptOnConnection: 20, rcptInTransaction: 20 }), {
    kind: "reconnect",
    why: "connection_limit",
  });
  assert.deepEqual(nextPace({ ...fresh, pending: 0 }), { kind: "done" });
  assert.deepEqual(nextPace({ ...fresh, pending: 2 }), { kind: "send", newTransaction: true, size: 2 });
});

void test("a write without refusals answers everything and learns nothing", () => {
  const s = settleWrite(["a", "b"], [ok, missing], { rcptInTransactionBefore: 0, rcptOnConnectionBefore: 0 });
  assert.deepEqual(
    s.answered.map((x) => x.item),
    ["a", "b"],
  );
  assert.deepEqual(s.resend, []);
  assert.equal(s.transactionLimit, null);
  assert.equal(s.connectionLimit, null);
});

void test("refusals mid-transaction reveal the per-transaction limit and are resent", () => {
  const s = settleWrite(["a", "b", "c"], [ok, tooMany, tooMany], {
    rcptInTransactionBefore: 3,
    rcptOnConnectionBefore: 3,
  });
  assert.deepEqual(
    s.answered.map((x) => x.item),
    ["a"],
  );
  assert.deepEqual(s.resend, ["b", "c"]);
  assert.equal(s.transactionLimit, 4);
});

void test("the first RCPT of a new transaction refused after earlier ones: the limit is per connection", () => {
  const s = settleWrite(["a", "b"], [tooMany, tooMany], {
    rcptInTransactionBefore: 0,
    rcptOnConnectionBefore: 20,
  });
  assert.deepEqual(s.resend, ["a", "b"]);
  assert.equal(s.connectionLimit, 20);
  assert.equal(s.transactionLimit, null);
});

void test("a connection that refuses its very first RCPT teaches nothing: the refusals are answers", () => {
  const s = settleWrite(["a", "b"], [tooMany, tooMany], {
    rcptInTransactionBefore: 0,
    rcptOnConnectionBefore: 0,
  });
  assert.deepEqual(s.resend, []);
  assert.deepEqual(
    s.answered.map((x) => x.item),
    ["a", "b"],
  );
});

void test("items without a reply (the server closed) are neither answered nor resent", () => {
  const s = settleWrite(["a", "b", "c"], [ok], { rcptInTransactionBefore: 0, rcptOnConnectionBefore: 0 });
  assert.deepEqual(
    s.answered.map((x) => x.item),
    ["a"],
  );
  assert.deepEqual(s.resend, []);
});
