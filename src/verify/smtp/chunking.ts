// How a session splits RCPTs into transactions and reacts to "too many recipients".
// RFC 5321 §4.5.3.1.10: a server may refuse RCPTs beyond its limit with 452 (and old servers
// with 552); the client must send the refused ones in a later transaction. Pure functions.
import type { SmtpReply } from "./reply-reader.ts";

/**
 * True for a "too many recipients" refusal:
 * "452 4.5.3 Error: too many recipients" (Postfix smtpd_recipient_limit),
 * "452 Too many recipients received this message" (Exchange),
 * "552 5.5.3 Too many recipients" (pre-RFC 5321 servers, which §4.5.3.1.10 says to treat as 452).
 */
export function isTooManyRecipients(reply: SmtpReply): boolean {
  if (reply.code !== 452 && reply.code !== 552) return false;
  return reply.enhanced === "4.5.3" || reply.enhanced === "5.5.3" || /too many recipients/i.test(reply.text);
}

export interface SettledTransaction<T> {
  /** Items with a final reply for this session. */
  answered: { item: T; reply: SmtpReply }[];
  /** Items refused for "too many recipients", to resend (in order) in the next transaction. */
  resend: T[];
  /** RCPT limit for the next transaction. */
  nextLimit: number;
}

/**
 * Settles one transaction's RCPT replies (same order as `items`). The server's limit is the
 * number of RCPTs it took before the first "too many"; if it took none, resending would loop,
 * so the refusals become final answers (the classifier makes them temporary failures).
 */
export function settleTransaction<T>(
  items: readonly T[],
  replies: readonly SmtpReply[],
  limit: number,
): SettledTransaction<T> {
  const firstRefused = replies.findIndex(isTooManyRecipients);
  const answered: { item: T; reply: SmtpReply }[] = [];
  const resend: T[] = [];
  items.forEach((item, i) => {
    const reply = replies[i];
    if (reply === undefined) return;
    if (firstRefused > 0 && isTooManyRecipients(reply)) resend.push(item);
    else answered.push({ item, reply });
  });
  return { answered, resend, nextLimit: firstRefused > 0 ? Math.min(limit, firstRefused) : limit };
}

/** Splits `queue` into the next chunk (at most `limit` items) and the rest. */
export function takeChunk<T>(queue: readonly T[], limit: number): { chunk: T[]; rest: T[] } {
  const size = Math.max(1, Math.floor(limit));
  return { chunk: queue.slice(0, size), rest: queue.slice(size) };
}
