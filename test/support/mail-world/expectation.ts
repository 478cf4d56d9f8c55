// Ground truth: what a perfect verifier answers for an address of a world, on its FIRST attempt
// (greylisting has not expired yet). Used to score the engine's accuracy, so the rules are few
// and explicit:
//
// 1. DNS: unknown domain, nxdomain, null_mx, no_records, no MX host with an address -> invalid;
//    servfail -> unknown dns_error; timeout -> unknown dns_timeout.
// 2. SMTP: hosts with an address are tried in MX preference order. A host that fails before RCPT
//    (refused, tarpit > 10 s, dropped after banner, fixed connect reply, rate limit of 0) makes
//    the verifier move on; if every host fails that way, the most preferred host's failure is the
//    answer. rateLimitAfterConnections > 0 and maxRcptPerMessage are politeness traps, not truth.
// 3. The first host that reaches RCPT decides: its rcptReply if it has one (classified below),
//    else greylisting -> unknown greylisted, catchAll -> catchall, a full or existing mailbox ->
//    valid, anything else (disabled, unknown user) -> invalid.
//
// Fixed replies (connectReply, rcptReply) are classified by text then code: blocklist wording ->
// ip_blocklisted; other 5.7.x -> policy_rejection; 421 or rate wording -> rate_limited; other 4xx
// -> temporary_failure; 2xx -> catchall (every RCPT accepted); other 5xx -> invalid.

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
  return (address) => {
    const lower = address.trim().toLowerCase();
    const at = lower.lastIndexOf("@");
    const domain = domains.get(lower.slice(at + 1).replace(/\.$/, ""));
    if (!domain) return plain("invalid");
    return expectationFor(domain, lower.slice(0, at));
  };
}

export function expectationFor(domain: DomainSpec, local: string): Expectation {
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
      return smtpExpectation(domain, (domain.hosts ?? []).slice(0, 1), local);
    case "mx":
      return smtpExpectation(domain, domain.hosts ?? [], local);
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
  if ((domain.greylistSeconds ?? 0) > 0) return unknown("greylisted");
  if (domain.catchAll) return plain("catchall");
  const has = (list: readonly string[] | undefined): boolean =>
    (list ?? []).some((l) => l.toLowerCase() === local);
  if (has(domain.fullMailboxes)) return plain("valid");
  if (has(domain.disabledMailboxes)) return plain("invalid");
  return plain(has(domain.mailboxes) ? "valid" : "invalid");
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
