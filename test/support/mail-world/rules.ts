// Rules shared by the simulated hosts (smtp-host.ts) and the ground truth (expectation.ts), so the
// two cannot drift apart: postmaster/abuse handling, greylisting wordings, unknown-user wordings,
// Postfix-style error limits, per-recipient refusals, front ends, and the stock reply texts of
// real mail software.

import { normalizeName } from "./dns-server.ts";
import type { CloseOnRcpt, DomainSpec, FixedReply, HostSpec, ServerKind, ThrottleReply } from "./types.ts";

/**
 * Real reply texts, for HostSpec/DomainSpec.unknownUserReply and blockExceptPostmaster ("%a" is
 * the recipient address). The unknown-user ones carry no mailbox-meaning text a classifier could
 * rely on (except Exchange's 5.1.10): a careful verifier needs evidence from the same server.
 */
export const STOCK_REPLIES = {
  /** Exim's default for an unknown user of a local or virtual domain (no router accepted it). */
  eximUnrouteable: { code: 550, text: "Unrouteable address" },
  /** OpenSMTPD, name missing from a virtual table: lka_session.c sets "524 5.2.4 Mailing list
   * expansion problem", smtp_session.c replies "%s: <%s>" with the recipient. */
  opensmtpdVirtual: { code: 524, text: "5.2.4 Mailing list expansion problem: <%a>" },
  /** OpenSMTPD, local user missing from the userbase (lka_session.c's fallback "550 Invalid recipient"). */
  opensmtpdInvalid: { code: 550, text: "Invalid recipient: <%a>" },
  /** Cisco Secure Email (IronPort) LDAP accept-query miss, the "qmail-ish" #-prefixed wording seen at
   * large corporate gateways. */
  ironportRejected: { code: 550, text: "#5.1.0 Address rejected." },
  /** Exchange on-premises recipient filtering. */
  exchangeNotFound: {
    code: 550,
    text: "5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup",
  },
  /** Postfix reject_rbl_client zen.spamhaus.org (names the block). */
  spamhausBlock: {
    code: 554,
    text: "5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/127.0.0.1",
  },
  /** Exim's default text of an ACL "deny" without a message (does not name the block). */
  eximAdministrativeProhibition: { code: 550, text: "Administrative prohibition" },
  /** A terse policy refusal that does not name the block either. */
  plainRejected: { code: 550, text: "5.7.1 Rejected" },
  /**
   * Mimecast, a personal block list entry of the recipient for our address ("A personal block
   * policy is in place for the email address/domain": Mimecast's SMTP error code reference, the
   * link below; sisimai's Mimecast table; seen in the wild as "550 Envelope blocked - User
   * Entry"). The default DomainSpec.senderBlockReply.
   */
  mimecastUserEntry: {
    code: 550,
    text: "Envelope blocked - User Entry - https://community.mimecast.com/docs/DOC-1369#550",
  },
  /** Mimecast, the same for a personal block of our whole domain. */
  mimecastUserDomainEntry: {
    code: 550,
    text: "Envelope blocked - User Domain Entry - https://community.mimecast.com/docs/DOC-1369#550",
  },
  /**
   * Barracuda Email Security Service refusing a recipient whose (per-user or per-domain) policy
   * blocks the message, as Postfix logs it: "host d290004a.ess.barracudanetworks.com said: 550
   * permanent failure for one or more recipients (wlin@evga.com:blocked) (in reply to end of DATA
   * command)" (a bounce quoted in a public repository). Barracuda says it after DATA; the
   * simulator says it at RCPT, the only place a verifier could see it.
   */
  barracudaBlocked: { code: 550, text: "permanent failure for one or more recipients (%a:blocked)" },
} as const satisfies Record<string, FixedReply>;

// ---------------------------------------------------------------------------------------------
// Role addresses.

export const POSTMASTER = "postmaster";
export const ABUSE = "abuse";

/** Kinds whose stock alias files define abuse@ (Debian's and OpenBSD's /etc/aliases). */
const ABUSE_BY_DEFAULT: Readonly<Record<ServerKind, boolean>> = {
  postfix: true,
  exim: true,
  generic: true,
  opensmtpd: true,
  google: false,
  microsoft365: false,
  outlook: false,
  yahoo: false,
  proofpoint: false,
  mimecast: false,
  exchange: false,
};

/** postmaster@ and abuse@: exempt from blockExceptPostmaster and from postgrey-style greylisting. */
export function isRoleAddress(local: string): boolean {
  return local === POSTMASTER || local === ABUSE;
}

/** Whether a role local part exists on this domain without being listed (lowercase local part). */
export function roleExists(domain: DomainSpec, kind: ServerKind, local: string): boolean {
  if (local === POSTMASTER) return domain.rejectPostmaster !== true;
  if (local === ABUSE) return domain.acceptAbuse ?? ABUSE_BY_DEFAULT[kind];
  return false;
}

// ---------------------------------------------------------------------------------------------
// Greylisting wordings.

const POSTGREY_DEFAULT_TEXT = "Greylisted, see http://postgrey.schweikert.ch/help/%r.html";

/** Whether greylisting applies to this local part (postgrey's stock recipient whitelist). */
export function greylistApplies(domain: DomainSpec, local: string): boolean {
  if ((domain.greylistSeconds ?? 0) <= 0) return false;
  return !(domain.greylistStyle === "postgrey" && isRoleAddress(local));
}

/** The refusal of a greylisted RCPT; secondsLeft until the triplet is admitted. */
export function greylistReply(domain: DomainSpec, recipient: string, secondsLeft: number): FixedReply {
  const at = recipient.lastIndexOf("@");
  const fill = (template: string): string =>
    template.replace(/%s/g, secondsLeft.toString()).replace(/%r/g, recipient.slice(at + 1));
  switch (domain.greylistStyle ?? "generic") {
    case "generic":
      return { code: 451, text: fill(domain.greylistText ?? "4.7.1 Greylisted, please try again later") };
    case "hint":
      return {
        code: 451,
        text: fill(domain.greylistText ?? "4.7.1 Greylisted, please try again in %s seconds"),
      };
    case "postgrey": {
      // postgrey answers "DEFER_IF_PERMIT 4.2.0 <text>" (it adds 4.2.0 when the text has no status
      // code); Postfix turns that into "450 4.2.0 <rcpt>: Recipient address rejected: <text>".
      let text = fill(domain.greylistText ?? POSTGREY_DEFAULT_TEXT);
      if (!/^\d/.test(text)) text = `4.2.0 ${text}`;
      const [, dsn = "4.2.0", rest = text] = /^(\d\.\d{1,3}\.\d{1,3})\s+(.*)$/s.exec(text) ?? [];
      return { code: 450, text: `${dsn} <${recipient}>: Recipient address rejected: ${rest}` };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Unknown users.

/** The configured unknown-user reply (domain's, else host's), "%a" filled; undefined: the persona's. */
export function configuredUnknownUser(
  domain: DomainSpec,
  host: HostSpec,
  address: string,
): FixedReply | undefined {
  const reply = domain.unknownUserReply ?? host.unknownUserReply;
  return reply && { code: reply.code, text: reply.text.replace(/%a/g, address) };
}

// ---------------------------------------------------------------------------------------------
// Per-recipient refusals of a mailbox that exists, and recipients that end the connection.

/** The refusal of a mailbox that blocks our sender (DomainSpec.senderBlockReply), "%a" filled. */
export function senderBlockReply(domain: DomainSpec, address: string): FixedReply {
  const reply = domain.senderBlockReply ?? STOCK_REPLIES.mimecastUserEntry;
  return { code: reply.code, text: reply.text.replace(/%a/g, address) };
}

/** Gmail's per-recipient rate refusal (DomainSpec.busyMailboxes), "\n" between its lines. */
export function receivingTooQuicklyReply(traceId: string): FixedReply {
  return {
    code: 450,
    text: [
      "4.2.1 The user you are trying to contact is receiving mail too quickly. Please",
      "4.2.1 resend your message at a later time. If the user is able to receive",
      "4.2.1 mail at that time, your message will be delivered. For more",
      "4.2.1 information, go to",
      `4.2.1  https://support.google.com/mail/?p=ReceivingRate ${traceId} - gsmtp`,
    ].join("\n"),
  };
}

/** The closeOnRcpt entry for this (lowercase) local part, if it ends the connection. */
export function closeOnRcptFor(domain: DomainSpec, local: string): CloseOnRcpt | undefined {
  return domain.closeOnRcpt?.find((c) => c.local.toLowerCase() === local);
}

/** The 421 of a closeOnRcpt entry (action "421"). */
export function closeOnRcptReply(entry: CloseOnRcpt): FixedReply {
  return { code: 421, text: entry.text ?? "4.7.0 IP not in whitelist for RCPT domain, closing connection." };
}

// ---------------------------------------------------------------------------------------------
// Routing and front ends.

/** Hosts reachable through DNS: every MX target, and hosts[0] of A-only domains. */
export function routedHosts(domain: DomainSpec): HostSpec[] {
  const hosts = domain.hosts ?? [];
  switch (domain.dns ?? "mx") {
    case "mx":
      return hosts;
    case "a_only":
      return hosts.slice(0, 1);
    case "null_mx":
    case "nxdomain":
    case "no_records":
    case "servfail":
    case "timeout":
      return [];
  }
}

/**
 * The spec each front end's listener runs, by normalized label: its first member with an address
 * in domain order, host order, counting only the first definition of each host name (the one the
 * simulator serves when several domains list the same name).
 */
export function frontEndSpecs(domains: readonly DomainSpec[]): Map<string, HostSpec> {
  const specs = new Map<string, HostSpec>();
  const seen = new Set<string>();
  for (const domain of domains) {
    for (const host of routedHosts(domain)) {
      const name = normalizeName(host.name);
      if (seen.has(name)) continue;
      seen.add(name);
      if (host.frontEnd === undefined || host.hasAddress === false) continue;
      const label = normalizeName(host.frontEnd);
      if (!specs.has(label)) specs.set(label, host);
    }
  }
  return specs;
}

/**
 * How a host behaves: its front end's listener settings with its own per-name fields (name,
 * preference, hasAddress), or the host itself when it is not part of a front end.
 */
export function effectiveHost(host: HostSpec, frontEnds: ReadonlyMap<string, HostSpec>): HostSpec {
  const listener = host.frontEnd === undefined ? undefined : frontEnds.get(normalizeName(host.frontEnd));
  if (!listener || listener === host) return host;
  const own: HostSpec = { ...listener, name: host.name };
  if (host.preference === undefined) delete own.preference;
  else own.preference = host.preference;
  if (host.hasAddress === undefined) delete own.hasAddress;
  else own.hasAddress = host.hasAddress;
  return own;
}

/** Postfix anvil's refusal of a connection over smtpd_client_connection_count_limit (smtpd.c). */
export function tooManyConnectionsReply(hostName: string, clientAddress: string): FixedReply {
  return { code: 421, text: `4.7.0 ${hostName} Error: too many connections from ${clientAddress}` };
}

/** Exchange Online Protection's refusal of a recipient of another tenant in the same transaction. */
export function crossTenantReply(hostName: string): FixedReply {
  return { code: 452, text: `4.5.3 Recipients belong to multiple regions ATTR38 [${hostName}]` };
}

/**
 * A provider's refusal of a RCPT over its per-client-IP quota (ThrottleSpec). Modelled on what
 * each provider sends when it throttles a client IP, as bounces and postmaster pages quote it:
 * Gmail's "421 4.7.0 Try again later, closing connection." (Google's SMTP error reference, with
 * the trace Gmail appends to every reply), Yahoo's "[TSS04] … unexpected volume or user
 * complaints" (Yahoo Sender Hub's SMTP error codes) and Outlook.com's "451 4.7.650 … temporarily
 * rate limited due to IP reputation … (S775)". A 421 closes the connection (smtp-server closes
 * after any 421), Outlook's 451 does not.
 */
export function throttleReply(style: ThrottleReply, client: string, traceId: string): FixedReply {
  switch (style) {
    case "gmail":
      return { code: 421, text: `4.7.0 Try again later, closing connection. ${traceId} - gsmtp` };
    case "yahoo":
      return {
        code: 421,
        text:
          `4.7.0 [TSS04] Messages from ${client} temporarily deferred due to unexpected volume or user ` +
          "complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes",
      };
    case "outlook":
      return {
        code: 451,
        text:
          `4.7.650 The mail server [${client}] has been temporarily rate limited due to IP reputation. ` +
          "For e-mail delivery information, see https://aka.ms/postmaster (S775)",
      };
  }
}

// ---------------------------------------------------------------------------------------------
// Postfix error limits.

export interface ErrorLimits {
  /** Error replies after which every reply waits sleepMs (Infinity: never). */
  soft: number;
  sleepMs: number;
  /** Error replies after which the host says 421 and closes (Infinity: never). */
  hard: number;
}

/** The host's error limits, or undefined when it has none (the default). */
export function errorLimits(spec: HostSpec): ErrorLimits | undefined {
  const postfix = spec.postfixErrorLimits === true;
  const soft = spec.softErrorLimit ?? (postfix ? 10 : undefined);
  const hard = spec.hardErrorLimit ?? (postfix ? 20 : undefined);
  if (soft === undefined && hard === undefined) return undefined;
  return { soft: soft ?? Infinity, sleepMs: spec.errorSleepMs ?? 1000, hard: hard ?? Infinity };
}
