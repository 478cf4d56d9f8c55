// How a session paces its RCPTs: how many go into the next pipelined write, and what a
// "too many recipients" refusal teaches about the server's limits. Pure functions.
//
// Three limits bound a write:
// - the error budget: Postfix delays every reply once a client has made smtpd_soft_error_limit
//   (10) errors and hangs up at smtpd_hard_error_limit (20); Exim and gateways have similar
//   rules. Rejected RCPTs are errors, so a write never holds more RCPTs than the connection may
//   still see rejected, and a connection whose budget is spent is closed and replaced.
// - the per-transaction limit (RFC 5321 §4.5.3.1.10: 452, or 552 from old servers, for RCPTs
//   beyond it; the refused ones go into the next transaction);
// - a per-connection limit, which some servers keep across RSET/MAIL: the only cure is a new
//   connection.
import type { SmtpReply } from "./reply-reader.ts";

/**
 * True for a "too many recipients in this transaction" refusal:
 * "452 4.5.3 Error: too many recipients" (Postfix smtpd_recipient_limit),
 * "452 Too many recipients received this message" (Exchange),
 * "451 4.5.3 Too many recipients: Too many recipients" (OpenSMTPD max-rcpt: a 451, not a 452),
 * "552 5.5.3 Too many recipients" (pre-RFC 5321 servers, which §4.5.3.1.10 says to treat as 452).
 * An enhanced code other than 4.5.3/5.5.3 means something else: Postfix's per-client rate limit
 * "450 4.7.1 Error: too many recipients from 203.0.113.9" is a rate limit, not a chunk size.
 */
export function isTooManyRecipients(reply: SmtpReply): boolean {
  if (!((reply.code >= 450 && reply.code <= 452) || reply.code === 552)) return false;
  if (reply.enhanced !== null) return reply.enhanced === "4.5.3" || reply.enhanced === "5.5.3";
  return /too many recipients/i.test(reply.text);
}

/** A reply the server counts as an error of ours (Postfix: every 4xx/5xx it sends). */
export const isErrorReply = (reply: SmtpReply): boolean => reply.code >= 400;

export interface PaceState {
  /** Error replies this connection has received so far. */
  errors: number;
  /** Most error replies one connection may receive. */
  errorBudget: number;
  /** RCPTs sent in the open transaction (0 when none is open). */
  rcptInTransaction: number;
  transactionLimit: number;
  /** RCPTs sent on this connection. */
  rcptOnConnection: number;
  /** Learned per-connection limit, or null. */
  connectionLimit: number | null;
  /** Recipients still to ask. */
  pending: number;
}

/** What the connection should do next. */
export type Pace =
  | { kind: "send"; newTransaction: boolean; size: number }
  /** This connection can take no more RCPTs; continue on a new one. */
  | { kind: "reconnect"; why: "error_budget" | "connection_limit" }
  | { kind: "done" };

/**
 * The next write: as many RCPTs as every limit allows, assuming the worst (all rejected), so the
 * error budget can never be overrun. A full transaction is closed and a new one opened.
 */
export function nextPace(s: PaceState): Pace {
  if (s.pending <= 0) return { kind: "done" };
  const budget = s.errorBudget - s.errors;
  if (budget <= 0) return { kind: "reconnect", why: "error_budget" };
  const connectionLeft = s.connectionLimit === null ? Infinity : s.connectionLimit - s.rcptOnConnection;
  if (connectionLeft <= 0) return { kind: "reconnect", why: "connection_limit" };
  const newTransaction = s.rcptInTransaction === 0 || s.rcptInTransaction >= s.transactionLimit;
  const transactionLeft = newTransaction ? s.transactionLimit : s.transactionLimit - s.rcptInTransaction;
  const size = Math.min(budget, connectionLeft, Math.max(1, transactionLeft), s.pending);
  return { kind: "send", newTransaction, size: Math.max(1, size) };
}

export interface SettledWrite<T> {
  /** Items with a final reply. */
  answered: { item: T; reply: SmtpReply }[];
  /** Items refused for "too many recipients", to ask again (in order). */
  resend: T[];
  /** The transaction limit the refusals revealed, when they revealed one. */
  transactionLimit: number | null;
  /**
   * The first RCPT of a fresh transaction was refused although the connection had taken RCPTs
   * before: the server counts per connection. The limit is what this connection took.
   */
  connectionLimit: number | null;
}

/**
 * Settles one write's RCPT replies (same order as `items`; missing replies leave items
 * unanswered and unsent). `rcptInTransactionBefore`: RCPTs the transaction had before this
 * write; `rcptOnConnectionBefore`: RCPTs the connection had before it.
 */
export function settleWrite<T>(
  items: readonly T[],
  replies: readonly SmtpReply[],
  ctx: { rcptInTransactionBefore: number; rcptOnConnectionBefore: number },
): SettledWrite<T> {
  const firstRefused = replies.findIndex(isTooManyRecipients);
  const tookInTransaction = ctx.rcptInTransactionBefore + Math.max(0, firstRefused);
  const answered: { item: T; reply: SmtpReply }[] = [];
  const resend: T[] = [];
  let transactionLimit: number | null = null;
  let connectionLimit: number | null = null;
  if (firstRefused >= 0 && tookInTransaction > 0) {
    // The transaction took some: its limit is what it took; the rest go to the next one.
    transactionLimit = tookInTransaction;
  } else if (firstRefused === 0 && ctx.rcptOnConnectionBefore > 0) {
    connectionLimit = ctx.rcptOnConnectionBefore;
  }
  const retryable = transactionLimit !== null || connectionLimit !== null;
  items.forEach((item, i) => {
    const reply = replies[i];
    if (reply === undefined) return;
    // Refusals with nothing learnt (the very first RCPT of a connection refused) are final
    // answers: resending would loop. The classifier makes them temporary failures.
    if (retryable && isTooManyRecipients(reply)) resend.push(item);
    else answered.push({ item, reply });
  });
  return { answered, resend, transactionLimit, connectionLimit };
}
