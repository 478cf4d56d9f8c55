import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEnhancedCode, ReplyReader, SmtpProtocolError } from "../../../src/verify/smtp/reply-reader.ts";
import { parseEhloKeywords } from "../../../src/verify/smtp/greeting.ts";

void test("a single-line reply with an enhanced code", () => {
  const reader = new ReplyReader();
  assert.deepEqual(reader.push("250 2.1.5 Ok\r\n"), [{ code: 250, enhanced: "2.1.5", text: "2.1.5 Ok" }]);
});

void test("a multi-line reply is one reply; the enhanced code comes from the first line", () => {
  const reader = new ReplyReader();
  const replies = reader.push(
    "550-5.1.1 The email account that you tried to reach does not exist. Please try\r\n" +
      "550-5.1.1 double-checking the recipient's email address for typos or\r\n" +
      "550 5.1.1 https://support.google.com/mail/?p=NoSuchUser x - gsmtp\r\n",
  );
  assert.equal(replies.length, 1);
  assert.equal(replies[0]?.code, 550);
  assert.equal(replies[0]?.enhanced, "5.1.1");
  assert.equal(replies[0]?.text.split("\n").length, 3);
});

void test("replies split across chunks, including in the middle of a line and of a UTF-8 character", () => {
  const reader = new ReplyReader();
  const bytes = Buffer.from(
    "250-mx.example.test\r\n250-PIPELINING\r\n250 SMTPUTF8\r\n550 5.1.1 <jöhn@x.test>: unknown\r\n",
  );
  const out = [];
  for (let i = 0; i < bytes.length; i += 7) out.push(...reader.push(bytes.subarray(i, i + 7)));
  assert.equal(out.length, 2);
  assert.deepEqual(parseEhloKeywords(out[0]?.text ?? ""), new Set(["PIPELINING", "SMTPUTF8"]));
  assert.equal(out[1]?.text, "5.1.1 <jöhn@x.test>: unknown");
});

void test("pipelined replies arrive in order from one chunk; bare LF and a code without text are accepted", () => {
  const reader = new ReplyReader();
  const out = reader.push("250 2.1.0 Ok\n250 2.1.5 Ok\r\n550 5.1.1 no\r\n221\r\n");
  assert.deepEqual(
    out.map((r) => r.code),
    [250, 250, 550, 221],
  );
  assert.equal(out[3]?.text, "");
});

void test("an incomplete reply is held back until its last line arrives", () => {
  const reader = new ReplyReader();
  assert.deepEqual(reader.push("250-first\r\n250-second\r\n"), []);
  assert.equal(reader.push("250 last\r\n").length, 1);
});

void test("garbage is a protocol error", () => {
  assert.throws(() => new ReplyReader().push("HTTP/1.1 400 Bad Request\r\n"), SmtpProtocolError);
  assert.throws(() => new ReplyReader().push("x".repeat(5000)), SmtpProtocolError);
});

void test("enhanced codes must match the reply class", () => {
  assert.equal(parseEnhancedCode(550, "5.1.10 RESOLVER.ADR.RecipientNotFound"), "5.1.10");
  assert.equal(parseEnhancedCode(550, "4.1.1 mismatched"), null);
  assert.equal(parseEnhancedCode(554, "delivery error: dd"), null);
  assert.equal(parseEnhancedCode(250, "2.1.5Ok"), null);
});
