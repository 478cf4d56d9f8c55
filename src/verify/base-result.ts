import type { ResultChecks, VerificationResult } from "./types.ts";

/**
 * The one shape every engine result starts from: an `unknown` result that learnt nothing about
 * the address. Each answer (syntax failure, address literal, sandbox, pipeline, deadline partial)
 * spreads it and sets what it knows. `hostAddress`, `retryAfterMs` and `dependencyFailure` are
 * left out: they are present only where an answer has them.
 */
export function baseResult(
  email: string,
  domainName: string,
  validatedAt: Date,
  checks: ResultChecks,
): VerificationResult {
  return {
    email,
    status: "unknown",
    isRoleBased: false,
    isDisposable: false,
    hasMxRecords: false,
    hasReverseDns: false,
    domainName,
    hostName: "",
    serverType: "unknown",
    isCatchall: false,
    validatedAt,
    unknownReason: null,
    needsPhysicalVerify: false,
    didYouMean: null,
    isFreeProvider: false,
    checks,
    evidence: "",
  };
}
