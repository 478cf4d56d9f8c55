import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEnhancedCode, type SmtpReply } from "../../../src/verify/smtp/reply-reader.ts";
import { classifyReply, matchRule, sessionFailureReason } from "../../../src/verify/smtp/replies.ts";

const reply = (code: number, text: string): SmtpReply => ({
  code,
  enhanced: parseEnhancedCode(code, text),
  text,
});

type Expected = "accepted" | "mailbox_missing" | "mailbox_disabled" | "mailbox_full" | `unknown:${string}`;

// Real replies seen from production mail systems (IPs and trace ids replaced).
const TABLE: [code: number, text: string, expected: Expected][] = [
  // accepted
  [250, "2.1.5 OK x1si123 - gsmtp", "accepted"],
  [250, "2.1.5 Recipient OK", "accepted"],
  [251, "2.1.5 User not local; will forward to <bob@example.net>", "accepted"],
  [252, "2.1.5 Cannot VRFY user, but will accept message and attempt delivery", "accepted"],
  // mailbox missing
  [
    550,
    "5.1.1 The email account that you tried to reach does not exist. Please try\n5.1.1 double-checking the recipient's email address for typos or\n5.1.1 unnecessary spaces. For more information, go to\n5.1.1  https://support.google.com/mail/?p=NoSuchUser a1si2 - gsmtp",
    "mailbox_missing",
  ],
  [
    550,
    "5.1.1 <bob@example.com>: Recipient address rejected: User unknown in virtual mailbox table",
    "mailbox_missing",
  ],
  [
    550,
    "5.1.1 <bob@example.com>: Recipient address rejected: User unknown in local recipient table",
    "mailbox_missing",
  ],
  [
    550,
    "5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup",
    "mailbox_missing",
  ],
  [550, "5.1.1 RESOLVER.ADR.RecipNotFound; not found", "mailbox_missing"],
  [
    550,
    "5.4.1 Recipient address rejected: Access denied. AS(201806281) [DM6NAM10FT012.eop-nam10.prod.protection.outlook.com]",
    "mailbox_missing",
  ],
  [
    550,
    "5.5.0 Requested action not taken: mailbox unavailable (S2017062302). [DM6NAM12FT045.eop-nam12.prod.protection.outlook.com]",
    "mailbox_missing",
  ],
  [
    554,
    "delivery error: dd This user doesn't have a yahoo.com account (bob@yahoo.com) [0] - mta1002.mail.ir2.yahoo.com",
    "mailbox_missing",
  ],
  [552, "1 Requested mail action aborted, mailbox not found", "mailbox_missing"],
  [550, "No Such User Here", "mailbox_missing"],
  [550, "5.1.1 Unrouteable address", "mailbox_missing"],
  [550, "5.1.1 User Unknown", "mailbox_missing"],
  [
    550,
    "Invalid Recipient - https://community.mimecast.com/docs/DOC-1369#550 [fTJx9bYQOlq2Dg.uk1]",
    "mailbox_missing",
  ],
  [550, "5.0.0 <bob@example.com>... User unknown", "mailbox_missing"],
  [550, "Requested action not taken: mailbox unavailable", "mailbox_missing"],
  [511, "sorry, no mailbox here by that name (#5.1.1 - chkuser)", "mailbox_missing"],
  // disabled
  [
    550,
    "5.2.1 The email account that you tried to reach is disabled. Learn more at\n5.2.1  https://support.google.com/mail/?p=DisabledUser a1si2 - gsmtp",
    "mailbox_disabled",
  ],
  [554, "delivery error: dd Requested mail action aborted: mailbox disabled", "mailbox_disabled"],
  [550, "Account disabled", "mailbox_disabled"],
  // full → the mailbox exists
  [
    552,
    "5.2.2 The email account that you tried to reach is over quota. Please direct\n5.2.2 the recipient to https://support.google.com/mail/?p=OverQuotaPerm a1si2 - gsmtp",
    "mailbox_full",
  ],
  [552, "5.2.2 Mailbox full; STOREDRV.Deliver: mailbox quota exceeded", "mailbox_full"],
  [552, "Requested mail action aborted: exceeded storage allocation", "mailbox_full"],
  [
    452,
    "4.2.2 The email account that you tried to reach is over quota. Please direct the recipient to https://support.google.com/mail/?p=OverQuotaTemp",
    "mailbox_full",
  ],
  // blocklists: never invalid
  [
    554,
    "5.7.1 Service unavailable; Client host [203.0.113.9] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/203.0.113.9",
    "unknown:ip_blocklisted",
  ],
  [
    550,
    "5.7.606 Access denied, banned sending IP [203.0.113.9]. To request removal from this list please visit https://sender.office.com/",
    "unknown:ip_blocklisted",
  ],
  [
    550,
    "5.7.25 [203.0.113.9] The IP address sending this message does not have a PTR record setup, or the corresponding forward DNS entry does not point to the sending IP.",
    "unknown:ip_blocklisted",
  ],
  [
    553,
    "5.7.1 [BL21] Connections will not be accepted from 203.0.113.9, because the ip is in Spamhaus's list; see https://postmaster.yahooinc.com/error-codes",
    "unknown:ip_blocklisted",
  ],
  [554, "5.7.1 <unknown[203.0.113.9]>: Client host rejected: Access denied", "unknown:ip_blocklisted"],
  [
    450,
    "4.7.1 Client host rejected: cannot find your reverse hostname, [203.0.113.9]",
    "unknown:ip_blocklisted",
  ],
  [
    550,
    "5.7.1 Service unavailable; Client host [203.0.113.9] blocked using b.barracudacentral.org",
    "unknown:ip_blocklisted",
  ],
  [
    550,
    "5.7.1 Our system has detected an unusual rate of unsolicited mail originating from your IP address",
    "unknown:ip_blocklisted",
  ],
  [
    554,
    "Your access to this mail system has been rejected due to the sending MTA's poor reputation.",
    "unknown:ip_blocklisted",
  ],
  [550, "5.1.1 Recipient rejected: your IP 203.0.113.9 is on a blacklist", "unknown:ip_blocklisted"],
  // policy: never invalid
  [
    553,
    "5.7.1 <probe@mailprobe.example>: Sender address rejected: not owned by user probe@mailprobe.example",
    "unknown:policy_rejection",
  ],
  [550, "5.7.1 Recipient address rejected: Access denied by policy", "unknown:policy_rejection"],
  [554, "5.7.1 <bob@example.com>: Relay access denied", "unknown:policy_rejection"],
  [550, "Relaying denied", "unknown:policy_rejection"],
  [530, "5.7.0 Authentication required", "unknown:policy_rejection"],
  [
    550,
    "5.7.26 This mail has been blocked because the sender is unauthenticated. Gmail requires all senders to authenticate with either SPF or DKIM.",
    "unknown:policy_rejection",
  ],
  [
    550,
    "5.1.1 <probe@mailprobe.example>: Sender address rejected: User unknown in local recipient table",
    "unknown:policy_rejection",
  ],
  [
    550,
    "Verification failed for <probe@mailprobe.example>\nSender verify failed",
    "unknown:policy_rejection",
  ],
  [550, "Administrative prohibition", "unknown:policy_rejection"],
  [550, "Access denied", "unknown:policy_rejection"],
  [
    554,
    "5.7.9 Message not accepted for policy reasons. See https://postmaster.yahooinc.com/error-codes",
    "unknown:policy_rejection",
  ],
  // greylisting, rate limits, other temporary failures
  [
    450,
    "4.2.0 <bob@example.com>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/example.com.html",
    "unknown:greylisted",
  ],
  [451, "4.7.1 Greylisted, please try again later", "unknown:greylisted"],
  [451, "4.7.1 Please try again later", "unknown:greylisted"],
  [
    421,
    "4.7.0 [TSS04] Messages from 203.0.113.9 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes",
    "unknown:rate_limited",
  ],
  [421, "4.7.0 mx1.example.com Too many connections from your IP, try again later", "unknown:rate_limited"],
  [
    450,
    "4.2.1 The user you are trying to contact is receiving mail at a rate that\n4.2.1 prevents additional messages from being delivered. Please resend your\n4.2.1 message at a later time.",
    "unknown:rate_limited",
  ],
  [550, "5.7.1 Too many invalid recipients", "unknown:rate_limited"],
  [451, "4.3.0 <bob@example.com>: Temporary lookup failure", "unknown:temporary_failure"],
  [
    450,
    "4.1.1 <bob@example.com>: Recipient address rejected: unverified address: host mx.example.com said: 550 5.1.1 User unknown",
    "unknown:temporary_failure",
  ],
  [452, "4.5.3 Too many recipients", "unknown:temporary_failure"],
  [451, "Temporary local problem - please try later", "unknown:temporary_failure"],
  // protocol complaints and unrecognised rejections: unknown, not invalid
  [501, "5.1.3 Bad recipient address syntax", "unknown:smtp_protocol_error"],
  [503, "5.5.1 Error: need MAIL command", "unknown:smtp_protocol_error"],
  [
    553,
    "5.1.3 The recipient address <bob@example.com> is not a valid RFC 5321 address.",
    "unknown:smtp_protocol_error",
  ],
  [550, "5.4.1 Relay Access Denied", "unknown:policy_rejection"],
  [554, "Transaction failed", "unknown:unclassified_rejection"],
  [550, "Unrouteable address", "unknown:unclassified_rejection"],
  [550, "5.4.1 Host unreachable", "unknown:unclassified_rejection"],
];

void test("the classifier table has at least 40 real replies", () => {
  assert.ok(TABLE.length >= 40, String(TABLE.length));
});

for (const [code, text, expected] of TABLE) {
  void test(`${code.toString()} ${text.slice(0, 70).replace(/\n/g, " ")} → ${expected}`, () => {
    const verdict = classifyReply(reply(code, text));
    const actual = verdict.kind === "unknown" ? `unknown:${verdict.reason}` : verdict.kind;
    assert.equal(actual, expected, `rule ${matchRule(reply(code, text))?.name ?? "none"}`);
  });
}

void test("no 4xx, 5.7.x or blocklist reply is ever a missing/disabled mailbox", () => {
  for (const [code, text] of TABLE) {
    const r = reply(code, text);
    const kind = classifyReply(r).kind;
    if (code < 500 || r.enhanced?.startsWith("5.7.") === true || /spamhaus|blacklist|banned/i.test(text)) {
      assert.ok(kind !== "mailbox_missing" && kind !== "mailbox_disabled", `${code.toString()} ${text}`);
    }
  }
});

void test("DBEB needs both 5.4.1 and its wording", () => {
  assert.equal(classifyReply(reply(550, "5.7.1 Recipient address rejected: Access denied")).kind, "unknown");
  assert.equal(
    classifyReply(reply(550, "5.4.1 Recipient address rejected: Access denied. AS(201806281)")).kind,
    "mailbox_missing",
  );
});

void test("a session-ending reply never condemns recipients", () => {
  assert.equal(sessionFailureReason(reply(550, "5.1.1 Sender unknown")), "policy_rejection");
  assert.equal(sessionFailureReason(reply(550, "5.1.1 User unknown")), "policy_rejection");
  assert.equal(sessionFailureReason(reply(421, "4.7.0 Too many connections")), "rate_limited");
  assert.equal(sessionFailureReason(reply(554, "5.7.1 blocked using zen.spamhaus.org")), "ip_blocklisted");
  assert.equal(sessionFailureReason(reply(451, "4.3.2 Please try again")), "temporary_failure");
});
