// Public types of the verification engine. The engine is a pure library: the outside world
// (DNS, TCP connections, clock, randomness, per-host politeness gate) comes in through ports.

export type VerificationStatus =
  "valid" | "invalid" | "catchall" | "invalid_syntax" | "disposable_domain" | "unknown";

export const VERIFICATION_STATUSES: readonly VerificationStatus[] = [
  "valid",
  "invalid",
  "catchall",
  "invalid_syntax",
  "disposable_domain",
  "unknown",
];

/** Why a result is `unknown`. Temporary reasons (see TEMPORARY_UNKNOWN_REASONS) are worth a later retry. */
export type UnknownReason =
  | "greylisted"
  | "smtp_timeout"
  | "connection_failed"
  | "connection_dropped"
  | "ip_blocklisted"
  | "policy_rejection"
  | "rate_limited"
  | "temporary_failure"
  | "dns_timeout"
  | "dns_error"
  | "port25_blocked"
  | "proxy_error"
  | "smtp_protocol_error"
  | "unclassified_rejection"
  | "timeout_dns"
  | "timeout_smtp"
  | "cancelled";

/** One verified address: the engine's output, mapped 1:1 to the spec's result fields by the HTTP layer. */
export interface VerificationResult {
  /** Canonical address (trimmed, lowercased; IDN domain in punycode). For invalid_syntax: the trimmed input. */
  email: string;
  status: VerificationStatus;
  isRoleBased: boolean;
  isDisposable: boolean;
  hasMxRecords: boolean;
  hasReverseDns: boolean;
  /** Domain part (punycode). Empty string when syntax failed before a domain could be read. */
  domainName: string;
  /** MX host used (or tried last) for SMTP; empty when no SMTP happened. */
  hostName: string;
  /** e.g. "google", "microsoft365", "outlook", "yahoo", "proofpoint", "mimecast", "postfix", "exim", "unknown". */
  serverType: string;
  isCatchall: boolean;
  validatedAt: Date;
  unknownReason: UnknownReason | null;
  needsPhysicalVerify: boolean;
}

/**
 * Unknown reasons worth a later retry (the batch pipeline reschedules them, at most once more):
 * the answer may change with time. ip_blocklisted, policy_rejection, port25_blocked,
 * unclassified_rejection and smtp_protocol_error describe a standing situation that a retry in
 * minutes won't change.
 */
export const TEMPORARY_UNKNOWN_REASONS: readonly UnknownReason[] = [
  "greylisted",
  "smtp_timeout",
  "connection_failed",
  "connection_dropped",
  "rate_limited",
  "temporary_failure",
  "dns_timeout",
  "dns_error",
  "proxy_error",
  "timeout_dns",
  "timeout_smtp",
  "cancelled",
];
