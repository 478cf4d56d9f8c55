// Where the results of addresses past syntax are put together: one answer for every address of a
// domain (a stage decided before SMTP), an address settled by its session, the partial answer of
// a caller whose deadline ran out, and the address literal. Every one goes through `resultOf`, so
// the domain's facts and checks reach each result the same way.
import type { Clock } from "../lib/clock.ts";
import { baseResult } from "./base-result.ts";
import { checkError, failed, passed, skipped, smtpCheckOf } from "./checks.ts";
import type { SettledAddress } from "./classify.ts";
import { isDisposableDomain } from "./lists/disposable.ts";
import { isRoleAccount } from "./lists/role-accounts.ts";
import { providerLabel, type PacedBy } from "./pace.ts";
import { isFreeProviderDomain } from "./providers.ts";
import type { SessionReport } from "./smtp/session-types.ts";
import { suggestAddress, type DeadDomainCause } from "./suggest.ts";
import type { Check, DependencyFailure, ResultChecks, UnknownReason, VerificationResult } from "./types.ts";

/** The checks a domain's addresses share (syntax passed, and smtp is per address). */
export type DomainChecks = Pick<ResultChecks, "dns" | "mx" | "reverse_dns">;

/** How far a domain's verification got: what a caller whose deadline ran out is told. */
export interface Progress {
  stage: "dns" | "smtp";
  facts: {
    hasMxRecords: boolean;
    hasReverseDns: boolean;
    hostName: string;
    hostAddress: string;
    serverType: string;
  };
  checks: DomainChecks;
}

/** dns, mx and reverse_dns skipped for one reason; smtp goes with them. */
export const domainSkipped = (reason: string): DomainChecks => ({
  dns: skipped(reason),
  mx: skipped(reason),
  reverse_dns: skipped(reason),
});

export const newProgress = (): Progress => ({
  stage: "dns",
  facts: {
    hasMxRecords: false,
    hasReverseDns: false,
    hostName: "",
    hostAddress: "",
    serverType: "unknown",
  },
  checks: domainSkipped("not_reached"),
});

// The deadline ran out (caller) or the engine is closing: name the step, or say cancelled.
export const abortReason = (
  run: { closing: AbortSignal },
  step: "timeout_dns" | "timeout_smtp",
): UnknownReason => (run.closing.aborted ? "cancelled" : step);

function resultOf(
  run: { clock: Clock },
  address: string,
  domain: string,
  progress: Progress,
  c: Pick<
    VerificationResult,
    "status" | "unknownReason" | "isCatchall" | "needsPhysicalVerify" | "evidence" | "retryAfterMs"
  > &
    Partial<Pick<VerificationResult, "didYouMean" | "isFreeProvider" | "dependencyFailure" | "pacedBy">> & {
      smtp: Check;
    },
): VerificationResult {
  const { smtp, ...rest } = c;
  return {
    ...baseResult(address, domain, run.clock.now(), { syntax: passed(), ...progress.checks, smtp }),
    isRoleBased: isRoleAccount(address.slice(0, address.lastIndexOf("@"))),
    isDisposable: isDisposableDomain(domain),
    ...progress.facts,
    isFreeProvider: isFreeProviderDomain(domain),
    ...rest,
  };
}

/** The one answer a stage gives every address of the domain, before any SMTP. */
export interface SameAnswer {
  status: VerificationResult["status"];
  unknownReason: UnknownReason | null;
  evidence: string;
  smtp: Check;
  /** Why the domain takes no mail, when that is the answer: the result suggests another address. */
  dead?: DeadDomainCause | null;
  dependencyFailure?: DependencyFailure | null;
}

/** Every address of the domain with the same answer. */
export function sameForAll(
  run: { clock: Clock },
  domain: string,
  addresses: readonly string[],
  progress: Progress,
  { status, unknownReason, evidence, smtp, dead = null, dependencyFailure = null }: SameAnswer,
): Map<string, VerificationResult> {
  const results = new Map<string, VerificationResult>();
  for (const a of addresses)
    results.set(
      a,
      resultOf(run, a, domain, progress, {
        status,
        unknownReason,
        isCatchall: false,
        needsPhysicalVerify: false,
        evidence,
        smtp,
        ...(dependencyFailure === null ? {} : { dependencyFailure }),
        // A domain that takes no mail is nobody's mailbox provider, whatever a list says.
        ...(dead === null ? {} : { didYouMean: suggestAddress(a, domain, dead), isFreeProvider: false }),
      }),
    );
  return results;
}

/**
 * An address its session settled. `proxyFailure`: our proxy was the cause when nothing was
 * reached; `paced`: the provider's pace shaped the session.
 */
export function settledResult(
  run: { clock: Clock },
  address: string,
  domain: string,
  progress: Progress,
  answer: { settled: SettledAddress; verdictKind: string | undefined },
  proxyFailure: DependencyFailure | null,
  paced: SessionReport["paced"],
): VerificationResult {
  const { settled, verdictKind } = answer;
  const smtp = smtpCheckOf(settled.status, settled.unknownReason, verdictKind);
  const dependencyFailure = settled.status === "unknown" && verdictKind === undefined ? proxyFailure : null;
  const pacedBy = settled.unknownReason === "rate_limited" ? pacedByOf(paced, address) : null;
  return resultOf(run, address, domain, progress, {
    ...settled,
    ...(pacedBy === null ? {} : { pacedBy, evidence: pacedEvidence(pacedBy, settled.evidence) }),
    smtp: dependencyFailure === null ? smtp : checkError(`proxy_${dependencyFailure.kind}`),
    ...(dependencyFailure === null ? {} : { dependencyFailure }),
  });
}

/** Why `address` is unknown because of its provider's pace, when it is. */
function pacedByOf(paced: SessionReport["paced"], address: string): PacedBy | null {
  if (paced === null) return null;
  return { provider: paced.provider, retryAt: paced.retryAt, unasked: paced.unasked.includes(address) };
}

/** The evidence of a paced address: what the provider said, or that the pace left it unasked. */
function pacedEvidence(paced: PacedBy, said: string): string {
  const until = paced.retryAt === null ? "" : ` until ${paced.retryAt.toISOString()}`;
  const label = providerLabel(paced.provider);
  return paced.unasked
    ? `not asked: ${label} asked us to slow down, and its pace has no room${until}`
    : `${said}; ${label} asked us to slow down: paced${until}`;
}

/** The partial answer of a caller whose deadline ran out while its domain was still verified. */
export function deadlineResult(
  run: { clock: Clock; closing: AbortSignal },
  canonical: string,
  domain: string,
  progress: Progress,
): VerificationResult {
  const step = progress.stage === "smtp" ? "timeout_smtp" : "timeout_dns";
  // The checks as far as they got; the one running when the deadline came is an error.
  const cut: Progress = {
    ...progress,
    checks:
      step === "timeout_dns"
        ? { ...domainSkipped("deadline"), dns: checkError("deadline") }
        : {
            ...progress.checks,
            reverse_dns:
              progress.checks.reverse_dns.reason === "not_reached"
                ? skipped("deadline")
                : progress.checks.reverse_dns,
          },
  };
  return resultOf(run, canonical, domain, cut, {
    status: "unknown",
    unknownReason: abortReason(run, step),
    isCatchall: false,
    needsPhysicalVerify: false,
    evidence: `${step === "timeout_dns" ? "dns" : "session"}: deadline reached`,
    retryAfterMs: null,
    smtp: step === "timeout_dns" ? skipped("deadline") : checkError(abortReason(run, step)),
  });
}

export function syntaxFailureResult(
  input: string,
  domain: string,
  reason: string,
  at: Date,
): VerificationResult {
  return {
    ...baseResult(input.trim(), domain, at, {
      syntax: failed(reason),
      dns: skipped("invalid_syntax"),
      mx: skipped("invalid_syntax"),
      reverse_dns: skipped("invalid_syntax"),
      smtp: skipped("invalid_syntax"),
    }),
    status: "invalid_syntax",
    evidence: `syntax: ${reason}`,
  };
}

/** user@[192.0.2.1]: legal SMTP, but probing an arbitrary IP's port 25 is not ours to do. */
export function literalResult(run: { clock: Clock }, canonical: string, domain: string): VerificationResult {
  return {
    ...resultOf(
      run,
      canonical,
      domain,
      { ...newProgress(), checks: domainSkipped("address_literal") },
      {
        status: "unknown",
        unknownReason: "address_literal",
        isCatchall: false,
        needsPhysicalVerify: false,
        evidence: "syntax: address literal; not probed by policy",
        smtp: skipped("address_literal"),
      },
    ),
    isDisposable: false,
  };
}
