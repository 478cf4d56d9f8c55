// The declarative description of a simulated mail world and the handle a running world exposes.
// This file is the contract between the simulator (test/support/mail-world/) and its users:
// engine tests, the batch pipeline tests, bench/ and `npm run sim`.

/**
 * Software personality of a simulated SMTP host: drives its banner, EHLO greeting and reply texts,
 * whether abuse@ exists by default and whether PIPELINING is advertised (see smtp-host.ts).
 */
export type ServerKind =
  | "google"
  | "microsoft365"
  | "outlook"
  | "yahoo"
  | "postfix"
  | "exim"
  | "proofpoint"
  | "mimecast"
  | "generic"
  /** OpenSMTPD (OpenBSD): "220 host ESMTP OpenSMTPD", no PIPELINING in its EHLO, a name missing
   * from a virtual table gets "524 5.2.4 Mailing list expansion problem: <addr>" (lka_session.c). */
  | "opensmtpd"
  /** On-premises Exchange: "220 host Microsoft ESMTP MAIL Service ready at <date>", unknown user
   * "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup". */
  | "exchange";

/** A fixed SMTP reply the host sends instead of its normal behaviour. */
export interface FixedReply {
  code: number;
  /** Text after the code, may start with an enhanced status code, e.g. "5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org". */
  text: string;
}

/** One mail host (an MX target, or the A-record host of an A-only domain). */
export interface HostSpec {
  /** Host name, e.g. "mx1.acme.test" or "acme-test.mail.protection.outlook.com". */
  name: string;
  /** MX preference (lower is preferred). Default 10. */
  preference?: number;
  /** false: the name has no A record at all ("MX host without address"). Default true. */
  hasAddress?: boolean;
  /** true: the address exists but nothing listens there (connection refused). Default false. */
  refuseConnections?: boolean;
  /** true: a PTR record exists for the host's address. Default true. */
  hasPtr?: boolean;
  /** Banner/EHLO personality. Default "postfix". */
  kind?: ServerKind;
  /** Delay before the 220 banner (tarpit). Default 0. */
  bannerDelayMs?: number;
  /** Close the connection right after sending the banner. */
  dropAfterBanner?: boolean;
  /** Reply sent at connect instead of the 220 banner (e.g. 554 blocklist, 421 rate limit), then close. */
  connectReply?: FixedReply;
  /** Reply sent to every RCPT TO instead of mailbox logic (e.g. 550 5.7.1 Spamhaus, 554 Client host rejected). */
  rcptReply?: FixedReply;
  /** After this many connections (counted since start), further connections get "421 4.7.0 Too many connections" at connect. */
  rateLimitAfterConnections?: number;
  /** At most this many RCPT per transaction; the next one gets "452 4.5.3 Too many recipients". */
  maxRcptPerMessage?: number;
  /**
   * At most this many RCPT per connection, across transactions (RSET, MAIL and EHLO do not reset
   * the count); every further RCPT gets "452 4.5.3 Too many recipients". Imitates the per-session
   * recipient budgets of hosted anti-harvesting front ends; no stock MTA default. Counts RCPT
   * commands that reached recipient processing (a RCPT refused with 503/530 before it does not).
   */
  maxRcptPerConnection?: number;
  /**
   * Postfix smtpd_soft_error_limit (Postfix default 10; off here unless set): once the session has
   * sent this many error replies (4xx/5xx), every later reply, 2xx included, waits errorSleepMs.
   */
  softErrorLimit?: number;
  /** Postfix smtpd_error_sleep_time: the delay of softErrorLimit, in ms. Default 1000. */
  errorSleepMs?: number;
  /**
   * Postfix smtpd_hard_error_limit (Postfix default 20; off here unless set): right after the reply
   * that brings the session's error count to this number, the host sends, unasked,
   * "421 4.7.0 <host> Error: too many errors" and closes; pipelined commands behind it are ignored.
   */
  hardErrorLimit?: number;
  /** Shorthand for Postfix's stock limits: softErrorLimit 10, errorSleepMs 1000, hardErrorLimit 20. */
  postfixErrorLimits?: boolean;
  /**
   * STARTTLS (self-signed certificate: smtp-server's built-in one). "offer": advertised in EHLO,
   * optional. "require": also advertised, and MAIL, RCPT and DATA before TLS get
   * "530 5.7.0 Must issue a STARTTLS command first" (Postfix smtpd_tls_security_level = encrypt).
   * After the handshake the client must EHLO again (RFC 3207 §4.2). Default: no STARTTLS.
   */
  startTls?: "offer" | "require";
  /** false: PIPELINING is not advertised (and pipelined commands are recorded as a violation).
   * Default: true, except for kind "opensmtpd". */
  pipelining?: boolean;
  /**
   * RBL with the customary postmaster exemption (Postfix: check_recipient_access allowing
   * postmaster@/abuse@ before reject_rbl_client): every RCPT except postmaster@ and abuse@ of a
   * served domain gets this reply; those two go on to the normal mailbox logic. The trap: the
   * postmaster control is accepted while every other address, existing or not, is refused alike.
   */
  blockExceptPostmaster?: FixedReply;
  /** Reply to an unknown user instead of the persona's; "%a" is replaced by the address (see
   * STOCK_REPLIES in rules.ts for real wordings). DomainSpec.unknownUserReply wins over this. */
  unknownUserReply?: FixedReply;
  /** Per-command reply latency override for this host (ms). */
  latencyMs?: number;
  /**
   * Multi-tenant front end (Exchange Online Protection: every tenant's own MX name,
   * <domain-with-dashes>.mail.protection.outlook.com, resolves to the same shared IPs): every
   * host name with the same label shares ONE listener on ONE loopback address
   * (each name's A record points there), serving the domains of all of them, with ONE counters
   * object: the connection count, concurrency and politeness limits are per IP, not per name.
   * The label is the front end's own host name: its banner, EHLO greeting and PTR record. Every
   * setting of the listener (kind, latency, connect/RCPT behaviour, limits, tenantAttribution,
   * frontEndMaxConnections…) comes from the first member met in domain order, host order, as for
   * a host name shared by several domains; per name stay `name`, `preference` and `hasAddress`.
   * A label must not be the name of a host outside its front end.
   */
  frontEnd?: string;
  /**
   * At most this many simultaneous connections to this listener (per IP: the whole front end);
   * one more gets Postfix anvil's refusal at connect, "421 4.7.0 <host> Error: too many
   * connections from <client ip>" (smtpd.c, smtpd_client_connection_count_limit, stock 50), and
   * is closed. Counted in HostCounters.connectionLimitRefusals. A politeness trap, not truth.
   * (Exchange Online says "451 4.7.652 The mail server [ip] has exceeded the maximum number of
   * connections. (S3115)", and only at MAIL FROM: sisimai's Microsoft table.)
   */
  frontEndMaxConnections?: number;
  /**
   * At most this many simultaneous connections from one client IP (Postfix anvil's
   * smtpd_client_connection_count_limit, which counts per client, not per listener); one more
   * gets "421 4.7.0 <host> Error: too many connections from <client ip>" at connect.
   */
  maxConnectionsPerClient?: number;
  /**
   * Client IPs this host blocklists: a connection from one gets "554 5.7.1 Service unavailable;
   * Client host [<ip>] blocked using zen.spamhaus.org" at connect (Postfix postscreen/
   * reject_rbl_client), and is closed; other clients are served normally.
   */
  blockedClients?: readonly string[];
  /**
   * Tenant attribution (Exchange Online Protection): each served domain is one tenant. Within a
   * transaction, once a RCPT of one tenant was accepted (2xx), a RCPT of another tenant's domain
   * gets "452 4.5.3 Recipients belong to multiple regions ATTR38 [<host>]" — EOP's reply when one
   * message's recipients span tenants it cannot attribute together (quoted from EOP in
   * AfterShip/email-verifier's smtp.go and reacherhq/check-if-email-exists issue 1334; EOP says
   * so for tenants in different regions, the simulator for any two tenants: the harsher case).
   * A new MAIL FROM (after RSET, or a new EHLO) starts over. A 452 4.5.3 is what RFC 5321
   * §4.5.3.1.10 clients answer by sending the rest in a new transaction. Counted in
   * HostCounters.crossTenantRefusals. A politeness trap, not truth.
   */
  tenantAttribution?: boolean;
  /**
   * The name of a WorldSpec.throttles entry this host belongs to: every host naming it (a
   * provider's MX servers, each on its own IP) draws on one RCPT quota per client IP. A
   * politeness trap, not truth. Default: no throttle.
   */
  throttle?: string;
}

/** A recipient that makes the host give up on the connection (DomainSpec.closeOnRcpt). */
export interface CloseOnRcpt {
  /** Local part (case-insensitive) of the culprit. */
  local: string;
  /**
   * "421": the host replies "421 4.7.0 IP not in whitelist for RCPT domain, closing connection."
   * (Google Workspace's refusal when the recipient domain only accepts mail from listed gateway
   * IPs: Google's SMTP error reference, support.google.com/a/answer/3726730, quoted in sisimai's
   * Google table) and closes. "drop": the host closes the TCP connection without a reply right
   * after reading that RCPT. Either way, pipelined commands behind it are never answered, and
   * every later connection does the same for that recipient.
   */
  action: "421" | "drop";
  /** Replaces the text after "421 " (action "421" only). */
  text?: string;
}

/** How the domain looks in DNS. */
export type DnsMode =
  | "mx" //          MX records pointing at `hosts` (default)
  | "a_only" //      no MX; the domain itself has an A record (implicit MX, RFC 5321 §5.1) served by hosts[0]
  | "null_mx" //     single MX "0 ." (RFC 7505): accepts no mail
  | "nxdomain" //    the name does not exist
  | "no_records" //  the name exists (e.g. has a TXT record) but has neither MX nor A/AAAA
  | "servfail" //    the DNS server answers SERVFAIL for the name
  | "timeout"; //    the DNS server never answers queries for the name

export interface DomainSpec {
  /** Domain name, lowercase ASCII (punycode for IDN), e.g. "acme.test". */
  name: string;
  dns?: DnsMode;
  /** Mail hosts for this domain (for dns "mx": MX targets; for "a_only": hosts[0] is the domain's own address). */
  hosts?: HostSpec[];
  /** Local parts (lowercase) whose mailboxes exist. */
  mailboxes?: string[];
  /** Every RCPT is accepted (catch-all). */
  catchAll?: boolean;
  /** Greylisting: the first RCPT of a (client, sender, recipient) triplet gets "451 4.7.1 greylisted", accepted once this many seconds have passed since the first attempt. */
  greylistSeconds?: number;
  /**
   * Wording of the greylisting refusal:
   * - "generic" (default): "451 4.7.1 Greylisted, please try again later";
   * - "hint": "451 4.7.1 Greylisted, please try again in <seconds left> seconds";
   * - "postgrey": postgrey's stock reply through Postfix (DEFER_IF_PERMIT):
   *   "450 4.2.0 <rcpt>: Recipient address rejected: Greylisted, see
   *   http://postgrey.schweikert.ch/help/<domain>.html"; postmaster@ and abuse@ are not
   *   greylisted (postgrey's stock postgrey_whitelist_recipients).
   */
  greylistStyle?: "generic" | "postgrey" | "hint";
  /**
   * Replaces the text of the greylisting refusal (postgrey --greylist-text): "%s" becomes the
   * seconds left, "%r" the recipient's domain. With style "postgrey" it goes after
   * "<rcpt>: Recipient address rejected: " and gets "4.2.0 " in front unless it starts with a digit.
   */
  greylistText?: string;
  /**
   * RFC 5321 §4.5.1: every served domain accepts postmaster@ (whatever `mailboxes` says) unless
   * this is true, in which case postmaster@ gets the unknown-user reply.
   */
  rejectPostmaster?: boolean;
  /**
   * Whether abuse@ (RFC 2142) exists without being listed in `mailboxes`. Default: true for
   * self-hosted kinds whose stock alias files have it (postfix, exim, generic, opensmtpd:
   * Debian's and OpenBSD's /etc/aliases), false for hosted providers, gateways and Exchange.
   */
  acceptAbuse?: boolean;
  /** Reply to an unknown user of this domain ("%a" = the address); wins over the host's. */
  unknownUserReply?: FixedReply;
  /** Local parts whose mailbox is full: "552 5.2.2 Mailbox full". These mailboxes exist. */
  fullMailboxes?: string[];
  /** Local parts whose account is disabled: "550 5.2.1 Account disabled". */
  disabledMailboxes?: string[];
  /**
   * Local parts whose mailbox exists but blocks our sender (a personal block list entry): they get
   * senderBlockReply at RCPT. Ground truth: unknown "recipient_blocks_sender" (the mailbox exists,
   * nothing tells whether it would accept another sender).
   */
  senderBlockedMailboxes?: string[];
  /**
   * The refusal of senderBlockedMailboxes ("%a" = the address). Default Mimecast's "550 Envelope
   * blocked - User Entry - https://community.mimecast.com/docs/DOC-1369#550" (STOCK_REPLIES in
   * rules.ts, with other real wordings).
   */
  senderBlockReply?: FixedReply;
  /**
   * Local parts whose mailbox exists but is receiving mail too fast, whatever the host's kind:
   * Gmail's per-recipient rate refusal, multi-line as Gmail sends it, "450-4.2.1 The user you
   * are trying to contact is receiving mail too quickly. Please …
   * https://support.google.com/mail/?p=ReceivingRate <id> - gsmtp" (Google's SMTP error reference,
   * support.google.com/a/answer/3726730; sisimai's Google table). Every RCPT to them gets it; the
   * other recipients of the session are served normally. Ground truth: unknown "rate_limited".
   */
  busyMailboxes?: string[];
  /**
   * Recipients that end the connection (see CloseOnRcpt); the other recipients of the domain are
   * decided normally. Ground truth for a culprit: "421" → its reply classified as a fixed reply
   * (the default text → unknown "rate_limited", as the engine's temp_421 rule has it); "drop" →
   * unknown "connection_dropped".
   */
  closeOnRcpt?: CloseOnRcpt[];
}

/**
 * Whose words a throttle refuses with (rules.ts throttleReply; <ip> is the client's address):
 * - "gmail": "421 4.7.0 Try again later, closing connection. <trace> - gsmtp", then the host
 *   closes the connection;
 * - "yahoo": "421 4.7.0 [TSS04] Messages from <ip> temporarily deferred due to unexpected volume
 *   or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes", then the
 *   host closes the connection;
 * - "outlook": "451 4.7.650 The mail server [<ip>] has been temporarily rate limited due to IP
 *   reputation. For e-mail delivery information, see https://aka.ms/postmaster (S775)", for that
 *   RCPT only: the connection stays open (and every further RCPT over the quota gets it too).
 */
export type ThrottleReply = "gmail" | "yahoo" | "outlook";

/**
 * A provider-wide recipient quota per client IP, as large providers keep one across all their
 * mail servers: a sliding window of the RCPTs each client IP got through. A RCPT that would make
 * it more than maxRcpts within the last windowMs gets the provider's throttle reply and is not
 * counted in the window. "Got through" means answered by the mailbox logic, whatever the answer
 * (250, 550, greylisting…): the provider meters the asking, not the mailboxes found. Refusals by
 * a host's own per-connection or per-transaction caps happen before the quota and do not count.
 * The windows belong to the running world, so they outlive sessions and tasks (and
 * MailWorld.resetCounters()).
 */
export interface ThrottleSpec {
  /** What hosts name in HostSpec.throttle, and MailWorld.throttleCounters takes. */
  name: string;
  /** RCPTs one client IP may get through within any windowMs. */
  maxRcpts: number;
  /** Length of the sliding window, in ms. */
  windowMs: number;
  reply: ThrottleReply;
}

export interface WorldSpec {
  domains: DomainSpec[];
  /** Default per-command reply latency in ms (0 in tests, 20 in benchmarks). */
  latencyMs?: number;
  /** Provider-wide RCPT quotas per client IP, named by HostSpec.throttle. Default: none. */
  throttles?: ThrottleSpec[];
}

/**
 * Per-listener counters, read by tests and benchmarks (politeness assertions). A listener is one
 * loopback IP: a host, or a whole front end (HostSpec.frontEnd) whatever name was dialled.
 */
export interface HostCounters {
  connections: number;
  /** Connections open right now. */
  concurrent: number;
  /** Highest number of simultaneously open connections seen. */
  maxConcurrent: number;
  /** SMTP commands received (EHLO, MAIL, RCPT, …). */
  commands: number;
  /** Number of RCPT TO commands received in each session, in session order. */
  rcptPerSession: number[];
  /** RCPT TO commands that reached recipient processing, by lowercase address: a repeated probe shows here. */
  rcptByAddress: Record<string, number>;
  /** Error replies (4xx/5xx, a fixed connect reply included) sent in each session, in session order. */
  errorsPerSession: number[];
  /** Sessions that completed a STARTTLS handshake. */
  tlsSessions: number;
  /**
   * Client protocol violations, at most one of each text per session: "<VERB> after 421" (a command
   * other than QUIT that arrived after the host's 421 was on the wire), "<VERB> after QUIT",
   * "RCPT before MAIL", "pipelined commands without PIPELINING advertised".
   */
  violations: string[];
  /** Greylisting triplets this host let through, when they first passed (epoch ms). */
  greylistPassed: GreylistPass[];
  /** Connections refused at connect because frontEndMaxConnections were already open. */
  connectionLimitRefusals: number;
  /** RCPTs refused because the transaction already had an accepted recipient of another tenant. */
  crossTenantRefusals: number;
  /** Per client IP (the address our connections came from): what servers count per client. */
  byClient: Record<string, ClientCounters>;
}

export interface ClientCounters {
  connections: number;
  /** Connections from this client open right now. */
  concurrent: number;
  /** Highest number of simultaneously open connections from this client seen. */
  maxConcurrent: number;
  /** Connections refused at connect: maxConnectionsPerClient exceeded, or the client blocklisted. */
  refusals: number;
}

/** What one throttle (ThrottleSpec) saw, since start or MailWorld.resetCounters(). */
export interface ThrottleCounters {
  /** RCPTs the quota let through, every client together. */
  accepted: number;
  /** RCPTs refused with the throttle reply, every client together. */
  refusals: number;
  /** The most RCPTs any one client had in its window at once (at most maxRcpts). */
  maxInWindow: number;
  /** The same per client IP (the address our connections came from). */
  byClient: Record<string, ThrottleClientCounters>;
}

export interface ThrottleClientCounters {
  accepted: number;
  refusals: number;
  /** The most RCPTs of this client in its window at once. */
  maxInWindow: number;
}

export interface GreylistPass {
  recipient: string;
  sender: string;
  /** When the triplet was first refused (epoch ms). */
  firstAttemptAt: number;
  /** When an attempt first got past greylisting (epoch ms). */
  passedAt: number;
}

/** What a perfect verifier would answer for an address of this world. */
export interface Expectation {
  status: "valid" | "invalid" | "catchall" | "invalid_syntax" | "disposable_domain" | "unknown";
  /** Expected unknown_reason when status is "unknown" (e.g. "ip_blocklisted", "dns_timeout"), else null. */
  unknownReason: string | null;
}

export interface MailWorld {
  /** The simulated DNS server (UDP and TCP). Pass to the engine as DNS_SERVERS `${host}:${port}`. */
  readonly dns: { host: string; port: number };
  /** Every simulated SMTP host listens on this port at its own 127.x.y.z address. Pass as SMTP_PORT. */
  readonly smtpPort: number;
  /** Loopback address the named host (or front-end label) listens on (also its A record). */
  addressOf(hostName: string): string;
  /** Counters of the listener behind a host name or front-end label: shared by a front end's names. */
  counters(hostName: string): HostCounters;
  /** Counters of the listener on this loopback address. */
  countersOfAddress(address: string): HostCounters;
  /**
   * Counters of every listener, each once: by host name, and by its label for a front end (so
   * summing them counts every connection once).
   */
  allCounters(): Map<string, HostCounters>;
  /**
   * Zeroes every host's and every throttle's counters. A throttle's windows stay as they are (a
   * provider does not forget): each client's maxInWindow restarts at its current window.
   */
  resetCounters(): void;
  /** Counters of the named throttle (WorldSpec.throttles). */
  throttleCounters(name: string): ThrottleCounters;
  /**
   * How many queries of one type ("A", "AAAA", "MX", "PTR", …) the DNS server received, by owner
   * name (lowercase, no trailing dot), since start or resetDnsQueries().
   */
  dnsQueries(type: string): Map<string, number>;
  resetDnsQueries(): void;
  /** Ground truth for an address of this world. */
  expectation(address: string): Expectation;
  /** Stop every server and free every port. Idempotent. */
  close(): Promise<void>;
}
