// The declarative description of a simulated mail world and the handle a running world exposes.
// This file is the contract between the simulator (test/support/mail-world/) and its users:
// engine tests, the batch pipeline tests, bench/ and `npm run sim`.

/** Software personality of a simulated SMTP host: drives its banner and EHLO greeting text. */
export type ServerKind =
  | "google"
  | "microsoft365"
  | "outlook"
  | "yahoo"
  | "postfix"
  | "exim"
  | "proofpoint"
  | "mimecast"
  | "generic";

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
  /** Per-command reply latency override for this host (ms). */
  latencyMs?: number;
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
  /** Local parts whose mailbox is full: "552 5.2.2 Mailbox full". These mailboxes exist. */
  fullMailboxes?: string[];
  /** Local parts whose account is disabled: "550 5.2.1 Account disabled". */
  disabledMailboxes?: string[];
}

export interface WorldSpec {
  domains: DomainSpec[];
  /** Default per-command reply latency in ms (0 in tests, 20 in benchmarks). */
  latencyMs?: number;
}

/** Per-host counters, read by tests and benchmarks (politeness assertions). */
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
  /** Loopback address the named host listens on (also what its A record says). */
  addressOf(hostName: string): string;
  counters(hostName: string): HostCounters;
  /** Counters of every host, by host name. */
  allCounters(): Map<string, HostCounters>;
  resetCounters(): void;
  /** Ground truth for an address of this world. */
  expectation(address: string): Expectation;
  /** Stop every server and free every port. Idempotent. */
  close(): Promise<void>;
}
