// The final word on an address that reached SMTP: one small function over the sub-results
// (its RCPT verdict, the session's failure, the domain's catch-all verdict, the provider).
import type { ProviderTraits } from "./providers.ts";
import type { ReplyVerdict } from "./smtp/replies.ts";
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
