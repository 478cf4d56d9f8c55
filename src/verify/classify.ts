// The final word on an address that reached SMTP: one small function over the sub-results
// (its RCPT verdict, the session's failure, the domain's catch-all verdict, the provider).
import { describeReply } from "./evidence.ts";
import type { ProviderTraits } from "./providers.ts";
import type { SmtpReply } from "./smtp/reply-reader.ts";
import type { ReplyVerdict } from "./smtp/replies.ts";
import { retryHintMs } from "./smtp/retry-hint.ts";
import type { UnknownReason, VerificationStatus } from "./types.ts";

/** What the session learnt about the domain accepting anything. */
export type CatchAllVerdict =
  /** The random probe address was accepted with a clear 2xx. */
  | "catchall"
  /** The server rejected an address as missing/disabled (the probe or a real one): its accepts mean something. */
  | "not_catchall"
  /** No evidence either way (probe got a 4xx, an error, or never ran). */
  | "undecided";

export interface MailboxEvidence {
  /** The address's own RCPT verdict; null when the session ended before it was answered. */
  verdict: ReplyVerdict | null;
  /** Why the session ended early (applies when verdict is null). */
  sessionFailure: UnknownReason | null;
  catchAll: CatchAllVerdict;
  provider: ProviderTraits;
}

export interface MailboxClassification {
  status: VerificationStatus;
  unknownReason: UnknownReason | null;
  isCatchall: boolean;
  needsPhysicalVerify: boolean;
}

export function classifyMailbox(e: MailboxEvidence): MailboxClassification {
  const isCatchall = e.catchAll === "catchall";
  const unknown = (reason: UnknownReason): MailboxClassification => ({
    status: "unknown",
    unknownReason: reason,
    isCatchall,
    needsPhysicalVerify: false,
  });
  const settled = (status: VerificationStatus): MailboxClassification => ({
    status,
    unknownReason: null,
    isCatchall,
    needsPhysicalVerify: false,
  });

  const verdict = e.verdict;
  if (verdict === null) return unknown(e.sessionFailure ?? "smtp_protocol_error");
  switch (verdict.kind) {
    case "mailbox_missing":
    case "mailbox_disabled":
      return settled("invalid");
    // A full mailbox exists: calling it invalid would make the customer delete a real
    // recipient over a condition that usually clears within days.
    case "mailbox_full":
      return settled("valid");
    case "unknown":
      return unknown(verdict.reason);
    case "accepted":
      break;
  }

  if (e.catchAll === "catchall") {
    // An accept-all provider that also accepted the random probe: nothing short of sending
    // mail tells whether this mailbox exists.
    return {
      status: "catchall",
      unknownReason: null,
      isCatchall: true,
      needsPhysicalVerify: e.provider.acceptsAllAtRcpt,
    };
  }
  if (e.catchAll === "undecided" && e.provider.acceptsAllAtRcpt) {
    // Same provider, probe unanswered: its accept is not evidence either.
    return { status: "catchall", unknownReason: null, isCatchall: true, needsPhysicalVerify: true };
  }
  return settled("valid");
}

/** An address's final answer with its one-line evidence and, for a temporary unknown, the server's retry hint. */
export interface SettledAddress extends MailboxClassification {
  evidence: string;
  retryAfterMs: number | null;
}

/**
 * Settles one address of a session: its decided RCPT reply (when it got one), else the session's
 * failure; the catch-all verdict and the provider's traits complete the picture.
 */
export function settleAddress(input: {
  decided: { verdict: ReplyVerdict; evidence: string; reply: SmtpReply } | undefined;
  failure: { reason: UnknownReason; reply?: SmtpReply } | null;
  catchAll: CatchAllVerdict;
  provider: ProviderTraits;
}): SettledAddress {
  const { decided, failure } = input;
  const classified = classifyMailbox({
    verdict: decided?.verdict ?? null,
    sessionFailure: failure?.reason ?? null,
    catchAll: input.catchAll,
    provider: input.provider,
  });
  const said =
    decided?.evidence ??
    (failure === null
      ? ""
      : `session: ${failure.reason}${failure.reply === undefined ? "" : ` after ${describeReply(failure.reply).replace(/^RCPT /, "")}`}`);
  const hintFrom = decided?.reply ?? failure?.reply;
  return {
    ...classified,
    evidence:
      said + (classified.status === "catchall" ? "; the domain accepts any address (probe accepted)" : ""),
    retryAfterMs: classified.status === "unknown" && hintFrom !== undefined ? retryHintMs(hintFrom) : null,
  };
}
