import assert from "node:assert/strict";
import { test } from "node:test";
import { limitScope, type LimitScope } from "../../../src/verify/smtp/limit-scope.ts";
import { ReplyReader } from "../../../src/verify/smtp/reply-reader.ts";

/** Real temporary replies to RCPT (or closing mid-session), with whom each is about. */
const CASES: readonly (readonly [reply: string, scope: LimitScope, source: string])[] = [
  // ---- the recipient
  [
    "450-4.2.1 The user you are trying to contact is receiving mail too quickly. Please resend your message at a\r\n450 4.2.1 later time. https://support.google.com/mail/?p=ReceivingRate a1si2 - gsmtp",
    "recipient",
    "Gmail ReceivingRate",
  ],
  [
    "450-4.2.1 The user you are trying to contact is receiving mail at a rate that\r\n450 4.2.1 prevents additional messages from being delivered. a1si2 - gsmtp",
    "recipient",
    "Gmail ReceivingRate (older wording)",
  ],
  [
    "450 4.2.1 Mailbox busy, try again later",
    "recipient",
    "RFC 3463 X.2.1 'mailbox disabled, not accepting messages'",
  ],
  ["452 4.2.2 The email account that you tried to reach is over quota.", "recipient", "Gmail OverQuotaTemp"],
  [
    "450 4.1.1 <bob@example.com>: Recipient address rejected: unverified address: Address verification in progress",
    "recipient",
    "Postfix reject_unverified_recipient",
  ],
  ["451 4.7.1 Greylisted, please try again later", "recipient", "greylisting (per sender/recipient triplet)"],
  [
    "450 4.2.0 <bob@example.com>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/example.com.html",
    "recipient",
    "postgrey",
  ],
  ["451 4.3.0 <bob@example.com>: Temporary lookup failure", "recipient", "Postfix"],
  [
    "421 4.7.0 mx.example.com IP not in whitelist for RCPT domain, closing connection.",
    "recipient",
    "per-recipient-domain routing rule (gateway)",
  ],
  // ---- the connection
  ["421 4.7.0 mx.example.com Error: too many errors", "connection", "Postfix smtpd_hard_error_limit"],
  ["421 Max message per connection reached, closing transmission channel", "connection", "Yahoo"],
  // ---- us
  [
    "450 4.7.1 <bob@example.com>: Error: too many recipients from 203.0.113.9",
    "client",
    "Postfix smtpd_client_recipient_rate_limit",
  ],
  ["421 4.7.0 mx.example.com Error: too many connections from 203.0.113.9", "client", "Postfix anvil"],
  [
    "421 4.7.0 [TSS04] Messages from 203.0.113.9 temporarily deferred due to unexpected volume or user complaints",
    "client",
    "Yahoo",
  ],
  [
    "451 4.7.650 The mail server [203.0.113.9] has been temporarily rate limited due to IP reputation.",
    "client",
    "Outlook.com",
  ],
  ["421 4.7.0 Try again later, closing connection.", "client", "Gmail (no recipient named)"],
  [
    "450 4.7.1 Client host rejected: cannot find your reverse hostname, [203.0.113.9]",
    "client",
    "Postfix reject_unknown_client_hostname",
  ],
];

function reply(raw: string) {
  const [parsed] = new ReplyReader().push(`${raw}\r\n`);
  assert.ok(parsed !== undefined);
  return parsed;
}

void test("whom a temporary refusal is about: the recipient, the connection, or us", () => {
  for (const [raw, scope, source] of CASES) {
    assert.equal(limitScope(reply(raw)), scope, `${source}: ${raw}`);
  }
});
