// Sandbox addresses: a documented set of addresses under a reserved domain
// that get fixed answers with no DNS and no SMTP, so integrations (n8n, Zapier, Sheets, scripts)
// can build and test flows against every result shape. `.invalid` is reserved by RFC 2606 §2 and
// RFC 6761 §6.4: no real mailbox can ever live under it, so answering it without the network
// cannot misreport anyone's mail. Billing never charges them (realtime/, tasks/).
import { baseResult } from "./base-result.ts";
import { allSkippedAfterSyntax, passed, smtpCheckOf } from "./checks.ts";
import { isRoleAccount } from "./lists/role-accounts.ts";
import type { ResultChecks, UnknownReason, VerificationResult, VerificationStatus } from "./types.ts";

/** The reserved sandbox domain. Only this exact domain is the sandbox, not its subdomains. */
export const SANDBOX_DOMAIN = "sandbox.mailprobe.invalid";

/** The mail host a sandbox answer names (it exists nowhere; nothing ever connects to it). */
export const SANDBOX_HOST = "mx.sandbox.mailprobe.invalid";

/** `server_type` of every sandbox answer that "reached SMTP": marks the data as sandbox data. */
const SANDBOX_SERVER_TYPE = "sandbox";

/** One sandbox mailbox: what its answer says beyond the common fields. */
export interface SandboxMailbox {
  status: VerificationStatus;
  unknownReason: UnknownReason | null;
  isCatchall: boolean;
  isDisposable: boolean;
  needsPhysicalVerify: boolean;
  /** False for answers the real engine gives before DNS (disposable): no MX, host or server facts. */
  reachedSmtp: boolean;
  /** What a real server would have said, for the `evidence` line. */
  evidence: string;
}

const answer = (
  status: VerificationStatus,
  evidence: string,
  extra: Partial<SandboxMailbox> = {},
): SandboxMailbox => ({
  status,
  unknownReason: null,
  isCatchall: false,
  isDisposable: false,
  needsPhysicalVerify: false,
  reachedSmtp: true,
  evidence,
  ...extra,
});

/**
 * The sandbox mailboxes by local part (lowercase; a `+tag` suffix is ignored, so a flow can use
 * many distinct addresses of one kind). The README's sandbox table is this table.
 */
export const SANDBOX_MAILBOXES: Readonly<Record<string, SandboxMailbox>> = Object.freeze({
  valid: answer("valid", "250 2.1.5 recipient ok"),
  invalid: answer("invalid", "550 5.1.1 mailbox does not exist"),
  catchall: answer("catchall", "250 2.1.5 ok; the random probe was accepted too", { isCatchall: true }),
  // An accept-all provider (like Yahoo): only sending mail would tell whether the mailbox exists.
  physical: answer("catchall", "250 ok from an accept-all provider", {
    isCatchall: true,
    needsPhysicalVerify: true,
  }),
  // The real engine decides disposable domains from its list, before any DNS: no MX, no host.
  disposable: answer("disposable_domain", "list: disposable domain", {
    isDisposable: true,
    reachedSmtp: false,
  }),
  // A role account (is_role_based comes from the role list, as for every address).
  info: answer("valid", "250 2.1.5 recipient ok"),
  "unknown-greylisted": answer("unknown", "450 4.2.0 greylisted, try again later", {
    unknownReason: "greylisted",
  }),
  "unknown-timeout": answer("unknown", "the server stopped answering (SMTP command timeout)", {
    unknownReason: "smtp_timeout",
  }),
  // The caller's deadline ran out mid-session: realtime answers 408 with this partial result.
  timeout: answer("unknown", "session: deadline reached", { unknownReason: "timeout_smtp" }),
});

/** Any other local part under the sandbox domain: a mailbox that does not exist. */
const NO_SUCH_MAILBOX = answer("invalid", "550 5.1.1 no such sandbox mailbox");

// No trimming: white space after the last @ makes an RFC-invalid address, billed like any other
// (the SQL twin, BILLABLE_ADDRESS_SQL, compares the same text).
export const isSandboxDomain = (domain: string): boolean => domain.toLowerCase() === SANDBOX_DOMAIN;

/**
 * True when the text after the last `@` is the sandbox domain, whatever the case and whether or
 * not the local part is valid syntax: every such address is answered and billed (free) as sandbox.
 */
export function isSandboxAddress(address: string): boolean {
  const at = address.lastIndexOf("@");
  return at >= 0 && isSandboxDomain(address.slice(at + 1));
}

/** The sandbox mailbox a local part names (unlisted ones: the no-such-mailbox answer). */
function sandboxMailboxOf(local: string): SandboxMailbox {
  const base = local.toLowerCase().split("+")[0] ?? "";
  return Object.hasOwn(SANDBOX_MAILBOXES, base) ? SANDBOX_MAILBOXES[base]! : NO_SUCH_MAILBOX;
}

/** The fixed answer for a syntactically valid canonical sandbox address, stamped `at`. */
export function sandboxResult(canonical: string, at: Date): VerificationResult {
  const local = canonical.slice(0, canonical.lastIndexOf("@"));
  const box = sandboxMailboxOf(local);
  return {
    ...baseResult(canonical, SANDBOX_DOMAIN, at, sandboxChecks(box)),
    status: box.status,
    isRoleBased: isRoleAccount(local),
    isDisposable: box.isDisposable,
    hasMxRecords: box.reachedSmtp,
    hasReverseDns: box.reachedSmtp,
    hostName: box.reachedSmtp ? SANDBOX_HOST : "",
    serverType: box.reachedSmtp ? SANDBOX_SERVER_TYPE : "unknown",
    isCatchall: box.isCatchall,
    unknownReason: box.unknownReason,
    needsPhysicalVerify: box.needsPhysicalVerify,
    evidence: `sandbox: ${box.evidence}`,
    retryAfterMs: null,
  };
}

/** The checks a real answer of the same kind would carry: a mail host that has MX and PTR. */
function sandboxChecks(box: SandboxMailbox): ResultChecks {
  if (!box.reachedSmtp) return allSkippedAfterSyntax("disposable_domain");
  return {
    syntax: passed(),
    dns: passed(),
    mx: passed("mx_records"),
    reverse_dns: passed(),
    smtp: smtpCheckOf(box.status, box.unknownReason, undefined),
  };
}
