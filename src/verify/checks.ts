// Per-check status of a result (the spec's Errors section: "when some checks succeed and others
// fail, the response includes per-check status"). Five checks, each answering one question; the
// vocabulary of reasons is docs/checks.md. `has_mx_records: false` alone cannot tell "the domain
// has no MX" from "the lookup failed"; `checks.dns`/`checks.mx` can.
import {
  CHECK_NAMES,
  CHECK_STATUSES,
  type Check,
  type ResultChecks,
  type VerificationResult,
} from "./types.ts";

export const passed = (reason: string | null = null): Check => ({ status: "passed", reason });
export const failed = (reason: string): Check => ({ status: "failed", reason });
export const skipped = (reason: string): Check => ({ status: "skipped", reason });
export const checkError = (reason: string): Check => ({ status: "error", reason });

/** Every check after syntax skipped for one reason (disposable list, address literal, …). */
export const allSkippedAfterSyntax = (reason: string): ResultChecks => ({
  syntax: passed(),
  dns: skipped(reason),
  mx: skipped(reason),
  reverse_dns: skipped(reason),
  smtp: skipped(reason),
});

/** A c-ares error code as a reason word: ESERVFAIL → servfail, ECONNREFUSED → connrefused. */
export const dnsCodeReason = (code: string): string => code.replace(/^E/, "").toLowerCase();

/** The SMTP check of a settled address: what the server said about this recipient. */
export function smtpCheckOf(
  status: VerificationResult["status"],
  unknownReason: VerificationResult["unknownReason"],
  verdictKind: string | undefined,
): Check {
  switch (status) {
    case "valid":
      return passed(verdictKind === "mailbox_full" ? "mailbox_full" : "accepted");
    case "catchall":
      return passed("catchall");
    case "invalid":
      return failed(verdictKind === "mailbox_disabled" ? "mailbox_disabled" : "mailbox_missing");
    default:
      return checkError(unknownReason ?? "unclassified_rejection");
  }
}

/** Is this value a ResultChecks (a stored jsonb read back)? */
export function isResultChecks(value: unknown): value is ResultChecks {
  if (typeof value !== "object" || value === null) return false;
  return CHECK_NAMES.every((name) => {
    const c = (value as Record<string, unknown>)[name];
    return (
      typeof c === "object" &&
      c !== null &&
      (CHECK_STATUSES as readonly unknown[]).includes((c as Check).status) &&
      ((c as Check).reason === null || typeof (c as Check).reason === "string")
    );
  });
}

/**
 * The checks of a result stored before checks were recorded, from its other fields. Only what
 * those fields prove is stated; the rest is `skipped` with reason `not_recorded`.
 */
export function checksOfLegacyResult(
  r: Pick<
    VerificationResult,
    "status" | "unknownReason" | "hasMxRecords" | "hasReverseDns" | "hostName" | "isDisposable"
  >,
): ResultChecks {
  const unrecorded = skipped("not_recorded");
  if (r.status === "invalid_syntax")
    return {
      syntax: failed("not_recorded"),
      dns: skipped("invalid_syntax"),
      mx: skipped("invalid_syntax"),
      reverse_dns: skipped("invalid_syntax"),
      smtp: skipped("invalid_syntax"),
    };
  if (r.status === "disposable_domain") return allSkippedAfterSyntax("disposable_domain");
  const dnsFailed = r.unknownReason === "dns_timeout" || r.unknownReason === "dns_error";
  const reachedHost = r.hostName !== "";
  return {
    syntax: passed(),
    dns: dnsFailed ? checkError(r.unknownReason === "dns_timeout" ? "timeout" : "not_recorded") : unrecorded,
    mx: r.hasMxRecords ? passed("mx_records") : dnsFailed ? skipped("dns_error") : unrecorded,
    reverse_dns: r.hasReverseDns ? passed() : unrecorded,
    smtp: reachedHost ? smtpCheckOf(r.status, r.unknownReason, undefined) : unrecorded,
  };
}
