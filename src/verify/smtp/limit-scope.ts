// Whom a temporary refusal is about: the recipient it answered, the connection it arrived on,
// or us (our IP, our rate). Mail servers answer per recipient and count per connection and per
// client IP, so a session reacts at the same grain:
// - "recipient": that mailbox only ("450 4.2.1 The user you are trying to contact is receiving
//   mail too quickly", "mailbox busy", a per-mailbox quota, "unverified address: Address
//   verification in progress", a 421 that closes on one recipient's routing rule); the other
//   recipients go on, and a recipient whose RCPT closed the connection is retried alone;
// - "connection": a limit of this connection ("421 4.7.0 Error: too many errors", "Max message
//   per connection reached"); a new connection goes on;
// - "client": a limit on us ("450 4.7.1 Error: too many recipients from 203.0.113.9", "421 4.7.0
//   Too many connections", "[TSS04] … unexpected volume", a blocklist, "Try again later, closing
//   connection" with no recipient named); every further RCPT would get it too: stop, retry later.
import type { SmtpReply } from "./reply-reader.ts";
import { classifyReply } from "./replies.ts";

export type LimitScope = "recipient" | "connection" | "client";

// Our IP or our client named, or a count of our connections/recipients/messages across
// connections: Postfix anvil ("too many recipients from <ip>", "Too many connections from <ip>"),
// Yahoo [TSS04], Outlook.com 4.7.650 "The mail server [ip] has been temporarily rate limited".
const CLIENT_TEXT =
  /too many (?:recipients|connections|messages|sessions) from|too many (?:concurrent )?connections|from (?:your|this) (?:ip|host|network)|\byour (?:ip|host|server|network)\b|\bTSS0\d|mail server \[[0-9a-f.:]+\]|unexpected volume|excessive volume/i;
// A limit of the connection itself: a new connection starts afresh.
const CONNECTION_TEXT =
  /too many errors|(?:per|this) (?:connection|session)|max(?:imum)? (?:number of )?(?:messages|recipients|rcpts?) (?:per|reached)|closing transmission channel/i;
// The refusal names a mailbox or recipient as its cause.
const RECIPIENT_TEXT =
  /\b(?:the|this) user\b|\bmailbox\b|\brecipient(?:'s)?\b(?! limit)|\brcpt\b|\bwhite ?list|unverified|verification in progress|\bquota\b|over quota/i;

/**
 * The scope of a 4xx reply to a RCPT (421 included). Wording about us wins, then a limit of the
 * connection, then a mailbox status code (X.1.x address, X.2.x mailbox) or wording naming the
 * recipient; what is left is judged by its verdict: a rate limit or block with nobody named is
 * about us; anything else (greylisting, "temporary lookup failure") concerns that recipient.
 */
export function limitScope(reply: SmtpReply): LimitScope {
  if (CLIENT_TEXT.test(reply.text)) return "client";
  if (CONNECTION_TEXT.test(reply.text)) return "connection";
  if (reply.enhanced !== null && /^4\.[12]\.\d+$/.test(reply.enhanced)) return "recipient";
  if (RECIPIENT_TEXT.test(reply.text)) return "recipient";
  const verdict = classifyReply(reply);
  if (
    verdict.kind === "unknown" &&
    (verdict.reason === "rate_limited" || verdict.reason === "ip_blocklisted")
  )
    return "client";
  return "recipient";
}
