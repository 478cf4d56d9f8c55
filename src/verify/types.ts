// Public types of the verification engine. The engine is a pure library: the outside world
// (DNS, TCP connections, clock, randomness, per-host politeness gate) comes in through ports.
import type { PacedBy } from "./pace.ts";

// Per-check status of a result (checks.ts builds them; docs/checks.md names the reasons).
/** The checks in the order they run. */
export const CHECK_NAMES = ["syntax", "dns", "mx", "reverse_dns", "smtp"] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

/**
 * - `passed`: the check ran and its answer is yes (the domain exists, it has a mail host, …);
 * - `failed`: the check ran and its answer is a definite no (NXDOMAIN, null MX, mailbox missing);
 * - `error`: the check ran but got no answer (timeout, SERVFAIL, a refused or dropped session);
 * - `skipped`: the check did not run, because an earlier one decided or policy keeps us away.
 */
export const CHECK_STATUSES = ["passed", "failed", "skipped", "error"] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

export interface Check {
  status: CheckStatus;
  /** Why, as a short snake_case word (docs/checks.md); null when there is nothing to add. */
  reason: string | null;
}

export type ResultChecks = Record<CheckName, Check>;

/** The spec's result statuses, in its order (the API schema's enum follows it). */
export const VERIFICATION_STATUSES = [
  "valid",
  "invalid",
  "catchall",
  "invalid_syntax",
  "disposable_domain",
  "unknown",
] as const;

export type VerificationStatus = (typeof VERIFICATION_STATUSES)[number];

/** Why a result is `unknown`. Which of them are worth a later retry is the batch pipeline's call (jobs/backoff.ts). */
export const UNKNOWN_REASONS = [
  "greylisted",
  "smtp_timeout",
  "connection_failed",
  "connection_dropped",
  "ip_blocklisted",
  "policy_rejection",
  // The recipient refuses this sender (a personal block list, "blocked by the recipient"): the
  // mailbox exists, so it is never `invalid`; a standing choice, not worth a retry.
  "recipient_blocks_sender",
  "rate_limited",
  "temporary_failure",
  "dns_timeout",
  "dns_error",
  "port25_blocked",
  "proxy_error",
  "smtp_protocol_error",
  "unclassified_rejection",
  "timeout_dns",
  "timeout_smtp",
  "cancelled",
  // An address literal (user@[192.0.2.1]): valid syntax, but never probed by policy.
  "address_literal",
  // Every address of every mail host is loopback/private/link-local/reserved: refused by the
  // outbound guard (DESIGN.md §5), never connected to.
  "private_host_refused",
] as const;

export type UnknownReason = (typeof UNKNOWN_REASONS)[number];

export const isUnknownReason = (value: unknown): value is UnknownReason =>
  typeof value === "string" && (UNKNOWN_REASONS as readonly string[]).includes(value);

/** One verified address: the engine's output. Its public fields, and how each is written, are in result-fields.ts. */
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
  /**
   * IP address of that host actually connected to (empty when none): the grain at which servers
   * count our connections and the batch scheduler keys its politeness. Not a public result field.
   */
  hostAddress?: string;
  /** e.g. "google", "microsoft365", "outlook", "yahoo", "proofpoint", "mimecast", "postfix", "exim", "unknown". */
  serverType: string;
  isCatchall: boolean;
  validatedAt: Date;
  unknownReason: UnknownReason | null;
  needsPhysicalVerify: boolean;
  /** Per-check status: syntax, dns, mx, reverse_dns, smtp (checks.ts, docs/checks.md). */
  checks: ResultChecks;
  /**
   * The address with its domain corrected when the domain looks like a typo of a popular mail
   * domain and cannot receive mail itself (verify/suggest.ts); null otherwise.
   */
  didYouMean: string | null;
  /** The domain is a free (consumer) mailbox provider: gmail.com, outlook.com, yahoo.com, … */
  isFreeProvider: boolean;
  /**
   * What decided the status, in one line (the reply and rule, or the evidence that decided an
   * unrecognised rejection). Stored and logged; not one of the spec's result fields.
   */
  evidence: string;
  /** For a temporary unknown: how long the server asked us to wait before retrying, when it said. */
  retryAfterMs?: number | null;
  /**
   * Set when the answer is `unknown` because one of our own dependencies failed (our DNS
   * resolvers or SOCKS proxy did not answer at all), not because of the address's domain: the
   * realtime API answers 424 instead of this result. Not a public result field.
   */
  dependencyFailure?: DependencyFailure | null;
  /**
   * Set when the answer is `unknown` because a provider's pace held it back: the provider refused
   * our volume, or its pace had no room (docs/pacing.md). The batch retries it when the pace has
   * room, without taking a step of the retry schedule. Not a public result field.
   */
  pacedBy?: PacedBy | null;
}

/** Which of our own dependencies failed, and how (the spec's DEPENDENCY_* codes). */
export interface DependencyFailure {
  dependency: "dns_resolver" | "smtp_proxy";
  kind: "timeout" | "unavailable" | "rate_limit";
  /** One line for the operator and the error message. */
  detail: string;
}
