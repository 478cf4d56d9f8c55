// The doctor's vocabulary: its checks and verdicts, its options and ports, the caps on each
// network step, and the small helpers every check words its verdict with.
import type { HeloNameSource } from "../lib/host-names.ts";
import type {
  AddressPolicy,
  ConnectPort,
  DnsAnswer,
  DnsPort,
  DomainResolution,
  SmtpReply,
} from "../verify/index.ts";

export type CheckStatus = "ok" | "warn" | "fail";

/** The checks, in the order they are reported. */
export const DOCTOR_CHECKS = ["dns", "helo_name", "smtp", "fcrdns", "mail_from_domain"] as const;
export type CheckId = (typeof DOCTOR_CHECKS)[number];

export interface DoctorCheck {
  id: CheckId;
  status: CheckStatus;
  /** What was found. */
  message: string;
  /** What to do about it; null when nothing needs doing. */
  fix: string | null;
  /** The egress identity (SMTP_EGRESS) an smtp or fcrdns check is about; absent: the only one. */
  egress?: string;
}

export interface DoctorReport {
  /** No check failed (warnings allowed). */
  ok: boolean;
  checks: DoctorCheck[];
  /** The mail host the SMTP check talked to, when one was found. */
  mx: { host: string; address: string } | null;
  /** The IP receivers see us as, and how we know it; null when it can't be known. */
  egress: EgressIp | null;
  /** With SMTP_EGRESS: each identity and the IP receivers see it as (port 25 and FCrDNS checked per identity). */
  identities: { name: string; egress: EgressIp | null }[];
}

export interface EgressIp {
  ip: string;
  source: "reported_by_mx" | "local_socket";
}

/** One egress identity to check: its name, its way out, and whether that is a proxy. */
export interface DoctorEgress {
  name: string;
  connect: ConnectPort;
  viaProxy: boolean;
}

/** DNS as the doctor needs it: the engine's port plus AAAA alone (FCrDNS of an IPv6 egress). */
export interface DoctorDnsPort extends DnsPort {
  /** AAAA records (DnsPort.addresses returns them only for names without an A record). */
  addresses6(host: string): Promise<DnsAnswer<string[]>>;
}

export interface DoctorPorts {
  dns: DoctorDnsPort;
  connect: ConnectPort;
  /** Orders MX hosts of equal preference; default Math.random. */
  random?: () => number;
  /**
   * The outbound guard (the engine's `addressPolicy`): a non-public egress address means NAT, so
   * FCrDNS failures soften to warnings. Without one, every address is judged as it is.
   */
  addressPolicy?: AddressPolicy;
  /**
   * SMTP_EGRESS identities: port 25 and FCrDNS are checked through each (`connect` and
   * `viaProxy` then describe none). Absent or empty: the one way out.
   */
  egress?: readonly DoctorEgress[];
}

export interface DoctorOptions {
  heloName: string;
  heloNameSource: HeloNameSource;
  mailFrom: string;
  /** Resolvers as configured ("host" or "host:port"); empty = the system's. Only named in messages. */
  dnsServers: readonly string[];
  smtpPort: number;
  /** `--mx`: an IP, a host or a domain (its best MX); null probes the MAIL FROM domain's MX. */
  mxTarget: string | null;
  /** SMTP goes through a SOCKS5 proxy: our socket's local address is not what receivers see. */
  viaProxy: boolean;
  /** The configured timeouts; the doctor caps each (see DOCTOR_LIMITS_MS). */
  dnsTimeoutMs: number;
  smtpConnectTimeoutMs: number;
  smtpGreetingTimeoutMs: number;
  smtpCommandTimeoutMs: number;
}

// Caps on every network step, so that a whole run ends within 30 s. The checks run in parallel
// lanes; the longest is mail host (MX, then addresses: 2 DNS steps) → connect → SMTP
// conversation → QUIT → FCrDNS (PTR, then forward: 2 DNS steps) = 4 + 5 + 13 + 1 + 4 = 27 s.
export const DOCTOR_LIMITS_MS = {
  dnsStep: 2_000,
  connect: 5_000,
  greeting: 8_000,
  command: 4_000,
  /** The whole SMTP conversation after connecting. */
  smtpTotal: 13_000,
  quit: 1_000,
} as const;

export const SET_HELO =
  "set SMTP_HELO_NAME to the fully-qualified name your egress IP's PTR record points at, " +
  "e.g. SMTP_HELO_NAME=mail.example.com";

export function check(
  id: CheckId,
  status: CheckStatus,
  message: string,
  fix: string | null = null,
): DoctorCheck {
  return { id, status, message, fix };
}

export function quote(reply: SmtpReply): string {
  const text = reply.text.split("\n").join(" ").slice(0, 200);
  return `"${reply.code} ${text}"`;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** "[192.0.2.1]" → "192.0.2.1"; anything else unchanged. */
export function bareIp(target: string): string {
  return target.replace(/^\[(?:IPv6:)?(.*)\]$/i, "$1");
}

export function describeNoMailHost(target: string, resolution: DomainResolution): string {
  switch (resolution.kind) {
    case "mail_hosts":
      return `${target} has no mail host with an address`;
    case "no_mail":
      return {
        nxdomain: `${target} does not exist in DNS`,
        no_records: `${target} has neither MX nor address records`,
        null_mx: `${target} publishes a null MX (accepts no mail)`,
        no_host_address: `${target}'s MX hosts have no address`,
      }[resolution.cause];
    case "dns_error":
      return `${target} could not be resolved (${resolution.code})`;
    case "dns_timeout":
      return `${target} could not be resolved (DNS timeout)`;
  }
}
