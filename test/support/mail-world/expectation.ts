// Ground truth: what a perfect verifier answers for an address of a world, on its FIRST attempt
// (greylisting has not expired yet). Used to score the engine's accuracy, so the rules are few
// and explicit:
//
// 1. DNS: unknown domain, nxdomain, null_mx, no_records, no MX host with an address -> invalid;
//    servfail -> unknown dns_error; timeout -> unknown dns_timeout.
// 2. SMTP: hosts with an address are tried in MX preference order. A host that fails before RCPT
//    (refused, tarpit > 10 s, dropped after banner, fixed connect reply, rate limit of 0) makes
//    the verifier move on; if every host fails that way, the most preferred host's failure is the
//    answer. Politeness traps are not truth: rateLimitAfterConnections > 0, maxRcptPerMessage,
//    maxRcptPerConnection, the error limits (soft/hard, postfixErrorLimits), the PIPELINING
//    setting, frontEndMaxConnections, tenantAttribution and a provider's RCPT quota
//    (HostSpec.throttle: every address can be answered once the window slides) only punish a
//    verifier that is not careful. startTls "require" is not truth either: a perfect verifier
//    uses STARTTLS when offered. A host of a front end behaves as its front end's listener
//    (rules.ts effectiveHost).
// 3. The first host that reaches RCPT decides, in this order:
//    a. its rcptReply if it has one (classified below);
//    a'. closeOnRcpt for that local part: "421" -> its reply classified below (the stock Google
//       text -> unknown rate_limited); "drop" -> unknown connection_dropped. Only the culprit:
//       every other recipient of the domain goes on to b-f;
//    b. blockExceptPostmaster, for every local part but postmaster and abuse: classified below,
//       but never invalid (an unclassifiable wording -> unknown policy_rejection): the mailbox
//       behind it may well exist, the refusal is about the client. So the spamhaus wording ->
//       unknown ip_blocklisted, "550 5.7.1 Rejected" / "550 Administrative prohibition" -> unknown
//       policy_rejection; postmaster@ and abuse@ go on to d-f;
//    c. greylisting -> unknown greylisted (with greylistStyle "postgrey", postmaster@ and abuse@
//       are not greylisted and go on);
//    c'. senderBlockedMailboxes -> unknown recipient_blocks_sender; busyMailboxes -> unknown
//       rate_limited (these mailboxes exist, but this verifier cannot see it now);
//    d. catchAll -> catchall;
//    e. a full or existing mailbox -> valid; a disabled one -> invalid; postmaster@ -> valid unless
//       rejectPostmaster (RFC 5321 §4.5.1); abuse@ -> valid when acceptAbuse (default per kind,
//       see rules.ts);
//    f. anything else is an unknown user -> invalid, whatever the wording (unknownUserReply, the
//       persona's): "550 Unrouteable address" or "524 5.2.4 Mailing list expansion problem" mean
//       no such user, and a careful verifier can tell with evidence from the same server (an
//       accepted recipient, or the postmaster control accepted while the random probe is refused
//       alike). A configured unknownUserReply with a 4xx code -> unknown temporary_failure.
//
// Fixed replies (connectReply, rcptReply, blockExceptPostmaster) are classified by text then code:
// blocklist wording -> ip_blocklisted; other 5.7.x -> policy_rejection; 421 or rate wording ->
// rate_limited; other 4xx -> temporary_failure; 2xx -> catchall (every RCPT accepted); other 5xx
// -> invalid.

import {
  closeOnRcptFor,
  closeOnRcptReply,
  configuredUnknownUser,
  effectiveHost,
  frontEndSpecs,
  greylistApplies,
  isRoleAddress,
  roleExists,
} from "./rules.ts";
import type { DomainSpec, Expectation, FixedReply, HostSpec, WorldSpec } from "./types.ts";

/** Tarpits longer than this are beyond any sane verifier's banner timeout. */
export const SMTP_TIMEOUT_MS = 10_000;

const BLOCKLIST = /spamhaus|block ?list|black ?list|dnsbl|poor reputation|banned|client host rejected/i;
const RATE = /too many|rate limit|try again later|throttl/i;

const unknown = (unknownReason: string): Expectation => ({ status: "unknown", unknownReason });
const plain = (status: Expectation["status"]): Expectation => ({ status, unknownReason: null });

/** Builds the expectation function of a world (indexes the domains once). */
export function createExpectation(spec: WorldSpec): (address: string) => Expectation {
  const domains = new Map(spec.domains.map((d) => [d.name.toLowerCase(), d]));
  const frontEnds = frontEndSpecs(spec.domains);
  return (address) => {
    const lower = address.trim().toLowerCase();
    const at = lower.lastIndexOf("@");
    const domain = domains.get(lower.slice(at + 1).replace(/\.$/, ""));
    if (!domain) return plain("invalid");
    return expectationFor(domain, lower.slice(0, at), frontEnds);
  };
}

/** frontEnds: the world's front ends (rules.ts frontEndSpecs); without it, hosts behave as listed. */
export function expectationFor(
  domain: DomainSpec,
  local: string,
  frontEnds: ReadonlyMap<string, HostSpec> = new Map(),
): Expectation {
  const hosts = (domain.hosts ?? []).map((h) => effectiveHost(h, frontEnds));
  switch (domain.dns ?? "mx") {
    case "nxdomain":
    case "null_mx":
    case "no_records":
      return plain("invalid");
    case "servfail":
      return unknown("dns_error");
    case "timeout":
      return unknown("dns_timeout");
    case "a_only":
      return smtpExpectation(domain, hosts.slice(0, 1), local);
    case "mx":
      return smtpExpectation(domain, hosts, local);
  }
}

function smtpExpectation(domain: DomainSpec, hosts: readonly HostSpec[], local: string): Expectation {
  const reachable = hosts
    .filter((h) => h.hasAddress !== false)
    .sort((a, b) => (a.preference ?? 10) - (b.preference ?? 10));
  if (reachable.length === 0) return plain("invalid");
  let firstFailure: Expectation | undefined;
  for (const host of reachable) {
    const failure = connectFailure(host);
    if (!failure) return rcptExpectation(domain, host, local);
    firstFailure ??= failure;
  }
  return firstFailure ?? plain("invalid");
}

/** Why a session with this host never reaches RCPT, or undefined when it does. */
function connectFailure(host: HostSpec): Expectation | undefined {
  if (host.refuseConnections) return unknown("connection_failed");
  if ((host.bannerDelayMs ?? 0) > SMTP_TIMEOUT_MS) return unknown("smtp_timeout");
  if (host.rateLimitAfterConnections === 0) return unknown("rate_limited");
  if (host.connectReply) return classifyFixedReply(host.connectReply);
  if (host.dropAfterBanner) return unknown("connection_dropped");
  return undefined;
}

function rcptExpectation(domain: DomainSpec, host: HostSpec, local: string): Expectation {
  if (host.rcptReply) return classifyFixedReply(host.rcptReply);
  const closing = closeOnRcptFor(domain, local);
  if (closing?.action === "drop") return unknown("connection_dropped");
  if (closing) return classifyFixedReply(closeOnRcptReply(closing));
  if (host.blockExceptPostmaster && !isRoleAddress(local)) return classifyBlock(host.blockExceptPostmaster);
  if (greylistApplies(domain, local)) return unknown("greylisted");
  const has = (list: readonly string[] | undefined): boolean =>
    (list ?? []).some((l) => l.toLowerCase() === local);
  if (has(domain.senderBlockedMailboxes)) return unknown("recipient_blocks_sender");
  if (has(domain.busyMailboxes)) return unknown("rate_limited");
  if (domain.catchAll) return plain("catchall");
  if (has(domain.fullMailboxes)) return plain("valid");
  if (has(domain.disabledMailboxes)) return plain("invalid");
  if (has(domain.mailboxes) || roleExists(domain, host.kind ?? "postfix", local)) return plain("valid");
  const reply = configuredUnknownUser(domain, host, `${local}@${domain.name}`);
  if (reply && reply.code >= 400 && reply.code < 500) return unknown("temporary_failure");
  if (reply && reply.code < 300) return plain("catchall");
  return plain("invalid");
}

/** A refusal about the client, not the mailbox: whatever it says, never invalid. */
function classifyBlock(reply: FixedReply): Expectation {
  const classified = classifyFixedReply(reply);
  return classified.status === "unknown" ? classified : unknown("policy_rejection");
}

export function classifyFixedReply(reply: FixedReply): Expectation {
  if (BLOCKLIST.test(reply.text)) return unknown("ip_blocklisted");
  if (reply.code >= 200 && reply.code < 300) return plain("catchall");
  if (reply.code >= 500 && /^5\.7\.\d+/.test(reply.text)) return unknown("policy_rejection");
  if (reply.code === 421 || (reply.code >= 400 && reply.code < 500 && RATE.test(reply.text))) {
    return unknown("rate_limited");
  }
  if (reply.code >= 400 && reply.code < 500) return unknown("temporary_failure");
  return plain("invalid");
}
