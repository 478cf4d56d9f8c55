// The RCPT reply classifier: a table of rules, first match wins, each with the real reply that
// justified it. Principle: `mailbox_missing`/`mailbox_disabled` (→ invalid) need positive
// evidence about the mailbox; anything that blames us (our IP, our sender, our rate), every
// 4xx and every unrecognised 5xx stays `unknown`. Calling a real mailbox invalid is the
// costliest error this product can make, so sender-blaming rules run before mailbox rules.
import type { UnknownReason } from "../types.ts";
import type { SmtpReply } from "./reply-reader.ts";

export type ReplyVerdict =
  | { kind: "accepted" }
  | { kind: "mailbox_missing" }
  | { kind: "mailbox_disabled" }
  | { kind: "mailbox_full" }
  | { kind: "unknown"; reason: UnknownReason };

interface Rule {
  /** Stable name, for tests and debugging. */
  name: string;
  matches: (r: SmtpReply) => boolean;
  verdict: ReplyVerdict;
}

const unknown = (reason: UnknownReason): ReplyVerdict => ({ kind: "unknown", reason });
const MISSING: ReplyVerdict = { kind: "mailbox_missing" };
const DISABLED: ReplyVerdict = { kind: "mailbox_disabled" };
const FULL: ReplyVerdict = { kind: "mailbox_full" };

const isTemp = (r: SmtpReply): boolean => r.code >= 400 && r.code < 500;
const isPerm = (r: SmtpReply): boolean => r.code >= 500 && r.code < 600;
const enhancedIs = (r: SmtpReply, pattern: RegExp): boolean =>
  r.enhanced !== null && pattern.test(r.enhanced);

// Our sending IP is listed, unknown or unwelcome. Any code, any enhanced code.
const BLOCKLIST_TEXT =
  /spamhaus|spamcop|barracuda|sorbs|\bdnsbl\b|\brbl\b|block ?list|black ?list|blocked using|\blisted\b.{0,30}\b(?:dnsbl|rbl|spam)|poor reputation|\breputation\b|\bbanned\b|client host rejected|reverse (?:hostname|dns|lookup)|\bptr record|unsolicited mail|your (?:ip|ip address|host|network) (?:\S+ )?(?:is|has been) (?:blocked|listed|rejected)/i;
const GREYLIST_TEXT = /gr[ae]y-?list/i;
// Rate / connection limits. "too many recipients" is deliberately absent: it is the session's
// chunking signal (see chunking.ts), not a verdict.
const RATE_TEXT =
  /rate limit|\bthrottl|too many (?:connections|concurrent|messages|sessions|errors|invalid)|receiving mail at a rate|unexpected volume|exceeded (?:the )?(?:\S+ )?(?:rate|connection limit|message limit)|\bTSS0\d/i;
const POLICY_TEXT =
  /relay(?:ing)? (?:access )?(?:denied|not permitted|prohibited)|authentication required|\bauth(?:entication)? (?:is )?required|\bspf\b|\bdmarc\b|\bdkim\b|\bpolicy\b|access denied|administrative prohibition|\bsender\b|\bmail from\b|not authorized|not permitted|must issue a starttls|unauthenticated/i;
const MISSING_TEXT =
  /no such (?:user|mailbox|recipient|address|account|person)|user(?:name)? (?:unknown|not found|does ?n[o']t exist)|unknown (?:user|recipient|mailbox|local[- ]part)|recipient (?:unknown|not found|does ?n[o']t exist|address rejected: (?:user unknown|undeliverable address|unknown))|mailbox (?:not found|does ?n[o']t exist|unknown|not exist)|does ?n[o']t exist|address (?:not found|unknown)|invalid (?:recipient|mailbox)|not a valid (?:mailbox|recipient|user)|doesn't have an? \S+ account|no mailbox (?:here )?by that name|account (?:does ?n[o']t exist|not found|unknown)|RecipNotFound|unrecognized recipient|not listed in (?:the )?(?:public )?(?:name & address book|domino directory)/i;
const DISABLED_TEXT =
  /\b(?:account|mailbox|user|address)\b.{0,30}\b(?:disabled|deactivated|suspended|inactive)\b|\b(?:disabled|deactivated|suspended|inactive) (?:account|mailbox|user)\b/i;
const FULL_TEXT =
  /mailbox (?:is )?full|over ?quota|quota exceeded|exceeded storage allocation|mailbox size limit|out of storage/i;

/** The table, in evaluation order. Exported for tests. */
export const REPLY_RULES: readonly Rule[] = [
  // "250 2.1.5 OK x1si123 - gsmtp"; 251 "User not local; will forward"; 252 "Cannot VRFY user, but will accept".
  { name: "accepted", matches: (r) => r.code >= 200 && r.code < 300, verdict: { kind: "accepted" } },

  // ---- 4xx: never a verdict about the mailbox, except over-quota which proves it exists ----
  // "450 4.7.1 Client host rejected: cannot find your reverse hostname, [203.0.113.9]" (Postfix reject_unknown_client_hostname)
  // "451 4.7.1 Service unavailable - try again later; Client host [203.0.113.9] blocked using bl.spamcop.net"
  {
    name: "temp_blocklist",
    matches: (r) => isTemp(r) && BLOCKLIST_TEXT.test(r.text),
    verdict: unknown("ip_blocklisted"),
  },
  // "450 4.2.0 <bob@example.com>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/example.com.html"
  // "451 4.7.1 greylisted, please try again in 300 seconds"
  {
    name: "greylisted",
    matches: (r) => isTemp(r) && GREYLIST_TEXT.test(r.text),
    verdict: unknown("greylisted"),
  },
  // "421 4.7.0 [TSS04] Messages from 203.0.113.9 temporarily deferred due to unexpected volume or user complaints" (Yahoo)
  // "421 4.7.0 Too many connections from your IP, try again later"
  // "450-4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered." (Gmail)
  {
    name: "rate_limited",
    matches: (r) => isTemp(r) && (r.code === 421 || RATE_TEXT.test(r.text)),
    verdict: unknown("rate_limited"),
  },
  // "452-4.2.2 The email account that you tried to reach is over quota." (Gmail): the server knows the mailbox.
  {
    name: "temp_mailbox_full",
    matches: (r) => isTemp(r) && (enhancedIs(r, /^4\.2\.2$/) || FULL_TEXT.test(r.text)),
    verdict: FULL,
  },
  // "451 4.7.1 Please try again later" (Exchange/rspamd greylisting without the word)
  {
    name: "temp_4_7_1",
    matches: (r) => isTemp(r) && enhancedIs(r, /^4\.7\.1$/),
    verdict: unknown("greylisted"),
  },
  // "451 4.3.0 <bob@example.com>: Temporary lookup failure"; "450 4.1.1 <bob@example.com>: Recipient address rejected: unverified address"
  { name: "temp_other", matches: isTemp, verdict: unknown("temporary_failure") },

  // ---- 5xx ----
  // Microsoft 365 Directory-Based Edge Blocking rejects unknown recipients of the tenant with
  // "550 5.4.1 Recipient address rejected: Access denied. AS(201806281) [DM6NAM10FT012.eop-nam10.prod.protection.outlook.com]".
  // Only that pairing: "access denied" elsewhere is policy (rule below).
  {
    name: "m365_dbeb",
    matches: (r) =>
      isPerm(r) && enhancedIs(r, /^5\.4\.1$/) && /recipient address rejected: access denied/i.test(r.text),
    verdict: MISSING,
  },
  // "554 5.7.1 Service unavailable; Client host [203.0.113.9] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/203.0.113.9"
  // "550 5.7.606 Access denied, banned sending IP [203.0.113.9]" (Microsoft)
  // "550 5.7.25 [203.0.113.9] The IP address sending this message does not have a PTR record setup" (Gmail)
  // "553 5.7.1 [BL21] Connections will not be accepted from 203.0.113.9, because the ip is in Spamhaus's list" (Yahoo)
  {
    name: "perm_blocklist",
    matches: (r) => isPerm(r) && BLOCKLIST_TEXT.test(r.text),
    verdict: unknown("ip_blocklisted"),
  },
  {
    name: "perm_ptr",
    matches: (r) => isPerm(r) && enhancedIs(r, /^5\.7\.25$/),
    verdict: unknown("ip_blocklisted"),
  },
  // "550 5.7.1 Too many invalid recipients" / "554 5.7.1 Rate limit exceeded"
  {
    name: "perm_rate",
    matches: (r) => isPerm(r) && RATE_TEXT.test(r.text),
    verdict: unknown("rate_limited"),
  },
  // RFC 3463 class 7 = security/policy: never about the mailbox.
  // "550 5.7.1 Relaying denied"; "553 5.7.1 <probe@our.example>: Sender address rejected: not owned by user";
  // "550 5.7.26 This mail has been blocked because the sender is unauthenticated" (Gmail DMARC);
  // "550 5.7.1 Recipient address rejected: Access denied"
  {
    name: "perm_5_7",
    matches: (r) => isPerm(r) && enhancedIs(r, /^5\.7\.\d+$/),
    verdict: unknown("policy_rejection"),
  },
  // "554 5.7.1 <bob@example.com>: Relay access denied" without enhanced codes: "554 Relay access denied";
  // "550-Verification failed for <probe@our.example>\n550 Sender verify failed" (Exim);
  // "550 5.1.1 <probe@our.example>: Sender address rejected: User unknown in local recipient table" (our MAIL FROM, not the recipient)
  // "550 Administrative prohibition" (Exim ACL); "530 5.7.0 Authentication required"
  {
    name: "perm_policy_text",
    matches: (r) => isPerm(r) && POLICY_TEXT.test(r.text),
    verdict: unknown("policy_rejection"),
  },

  // RFC 3463 mailbox status codes, the strongest evidence a server gives.
  // "550-5.1.1 The email account that you tried to reach does not exist. Please try\n550-5.1.1 double-checking ..." (Gmail)
  // "550 5.1.1 <bob@example.com>: Recipient address rejected: User unknown in virtual mailbox table" (Postfix)
  // "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup" (Exchange Online)
  // "550 5.1.6 Recipient addresses in this domain no longer accept mail" (mailbox moved, RFC 3463: no forwarding address)
  { name: "perm_5_1_1", matches: (r) => isPerm(r) && enhancedIs(r, /^5\.1\.(?:1|6|10)$/), verdict: MISSING },
  // "550-5.2.1 The email account that you tried to reach is disabled." (Gmail)
  { name: "perm_5_2_1", matches: (r) => isPerm(r) && enhancedIs(r, /^5\.2\.1$/), verdict: DISABLED },
  // "552-5.2.2 The email account that you tried to reach is over quota and inactive." (Gmail)
  // "552 5.2.2 Mailbox full": the mailbox exists.
  { name: "perm_5_2_2", matches: (r) => isPerm(r) && enhancedIs(r, /^5\.2\.2$/), verdict: FULL },

  // Syntax / sequence complaints are about our conversation, not the mailbox:
  // "501 5.1.3 Bad recipient address syntax"; "503 5.5.1 Error: need MAIL command"; "500 5.5.2 Error: bad syntax"
  {
    name: "perm_protocol",
    matches: (r) => r.code >= 500 && r.code <= 504,
    verdict: unknown("smtp_protocol_error"),
  },
  {
    name: "perm_5_1_3",
    matches: (r) => isPerm(r) && enhancedIs(r, /^5\.1\.3$/),
    verdict: unknown("smtp_protocol_error"),
  },

  // Servers without enhanced codes, or with generic ones (5.0.0, 5.5.0):
  // "554 delivery error: dd This user doesn't have a yahoo.com account (bob@yahoo.com) [0] - mta1002.mail.ir2.yahoo.com" (Yahoo)
  // "552 1 Requested mail action aborted, mailbox not found" (Yahoo)
  // "550 No Such User Here" (cPanel Exim); "550 5.0.0 <bob@example.com>... User unknown" (Sendmail)
  { name: "missing_text", matches: (r) => isPerm(r) && MISSING_TEXT.test(r.text), verdict: MISSING },
  // "554 delivery error: dd Requested mail action aborted: mailbox disabled"; "550 Account disabled"
  { name: "disabled_text", matches: (r) => isPerm(r) && DISABLED_TEXT.test(r.text), verdict: DISABLED },
  // "552 Requested mail action aborted: exceeded storage allocation" (RFC 5321's own text for 552)
  // "550 Mailbox quota exceeded"
  { name: "full_text", matches: (r) => isPerm(r) && FULL_TEXT.test(r.text), verdict: FULL },
  // Outlook.com answers an unknown consumer mailbox with
  // "550 5.5.0 Requested action not taken: mailbox unavailable (S2017062302) [VI1EUR05FT012.eop-eur05.prod.protection.outlook.com]".
  // RFC 5321 uses "mailbox unavailable" as 550's generic text, which may also cover policy, so
  // only a bare 550 whose enhanced code is absent or generic qualifies (5.7.x and sender/policy
  // wordings were handled above).
  {
    name: "mailbox_unavailable_550",
    matches: (r) =>
      r.code === 550 &&
      (r.enhanced === null || /^5\.(?:0\.0|5\.0|1\.0)$/.test(r.enhanced)) &&
      /mailbox unavailable/i.test(r.text),
    verdict: MISSING,
  },

  // No evidence about the mailbox: "554 Transaction failed"; "550 Unrouteable address" (Exim, also used for domain routing problems).
  { name: "perm_unclassified", matches: isPerm, verdict: unknown("unclassified_rejection") },
];

const PROTOCOL_ERROR: ReplyVerdict = unknown("smtp_protocol_error");

/** Classifies one RCPT (or MAIL, banner) reply: enhanced code and sender-blaming text first, then mailbox text. */
export function classifyReply(reply: SmtpReply): ReplyVerdict {
  return matchRule(reply)?.verdict ?? PROTOCOL_ERROR;
}

/** The rule that decided, for tests and logs; undefined for codes outside 2xx–5xx. */
export function matchRule(reply: SmtpReply): Rule | undefined {
  return REPLY_RULES.find((rule) => rule.matches(reply));
}

/**
 * A failure reply that ended the whole session (banner, EHLO, MAIL FROM, a 421 mid-way) says
 * nothing about any recipient: "550 5.1.1 Sender address unknown" at MAIL FROM must not make
 * recipients invalid. Returns the unknown reason to give every recipient left without an answer.
 */
export function sessionFailureReason(reply: SmtpReply): UnknownReason {
  const verdict = classifyReply(reply);
  if (verdict.kind === "unknown") return verdict.reason;
  return isTemp(reply) ? "temporary_failure" : "policy_rejection";
}
