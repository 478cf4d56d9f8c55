// `mailprobe doctor`: is this machine set up to probe mail servers? Five checks, each a verdict
// (ok / warn / fail) with what to do. Pure diagnostics on ports (DNS, TCP connect); the CLI reads
// the configuration and prints.
//
// The SMTP check goes one step past EHLO: MAIL FROM and one RCPT TO:<postmaster@domain> (RFC 5321
// §4.5.1: every mail domain must accept it), then QUIT, never DATA. Postfix evaluates
// smtpd_helo_restrictions at RCPT time by default (smtpd_delay_reject=yes), so a non-FQDN HELO
// gets "250" to EHLO and "504 5.5.2 <web-1>: Helo command rejected: need fully-qualified hostname"
// only to the RCPT: checking EHLO alone would pass exactly the set-up this command exists to catch.
import { isIP, isIPv4, isIPv6 } from "node:net";
import { classifyHostName, normaliseHostName, type HeloNameSource } from "../lib/host-names.ts";
import { AbortedError } from "../verify/abort.ts";
import {
  createNodeDns,
  expandIpv6,
  type DnsAnswer,
  type DnsPort,
  type NodeDnsOptions,
} from "../verify/dns.ts";
import type { AddressPolicy } from "../verify/ports.ts";
import { resolveMailHosts, type DomainResolution } from "../verify/resolve-domain.ts";
import { ConnectError, type ConnectPort } from "../verify/smtp/connect.ts";
import { SmtpClosedError, SmtpConnection, SmtpTimeoutError } from "../verify/smtp/connection.ts";
import { SmtpProtocolError, type SmtpReply } from "../verify/smtp/reply-reader.ts";
import { classifyReply } from "../verify/smtp/replies.ts";

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

const SET_HELO =
  "set SMTP_HELO_NAME to the fully-qualified name your egress IP's PTR record points at, " +
  "e.g. SMTP_HELO_NAME=mail.example.com";

/** Runs every check. Never throws for what it finds: broken set-ups are verdicts. */
export async function runDoctor(opts: DoctorOptions, ports: DoctorPorts): Promise<DoctorReport> {
  const dnsStepMs = Math.min(opts.dnsTimeoutMs * 2, DOCTOR_LIMITS_MS.dnsStep);
  const dns = boundedDns(ports.dns, dnsStepMs);
  const mailDomain = opts.mailFrom.slice(opts.mailFrom.lastIndexOf("@") + 1);
  const target = normaliseHostName(opts.mxTarget ?? mailDomain);

  const ways: DoctorEgress[] =
    ports.egress !== undefined && ports.egress.length > 0
      ? [...ports.egress]
      : [{ name: "", connect: ports.connect, viaProxy: opts.viaProxy }];
  const [dnsCheck, mailFromCheck, perEgress] = await Promise.all([
    checkResolvers(dns, opts.dnsServers, isIP(bareIp(target)) ? mailDomain : target),
    checkMailFromDomain(dns, opts.mailFrom, mailDomain, ports.random ?? Math.random),
    // Every identity in parallel: the run stays within its 30 s however many there are.
    Promise.all(ways.map((way) => checkEgress(dns, ports, opts, target, way))),
  ]);
  const first = perEgress[0]!;
  const checks: DoctorCheck[] = [
    dnsCheck,
    checkHeloName(opts),
    ...perEgress.map((e) => e.smtp.check),
    ...perEgress.map((e) => e.fcrdns),
    mailFromCheck,
  ];
  return {
    ok: checks.every((c) => c.status !== "fail"),
    checks,
    mx: first.smtp.mx,
    egress: first.egress,
    identities:
      ways.length === 1 && ways[0]!.name === ""
        ? []
        : perEgress.map((e) => ({ name: e.name, egress: e.egress })),
  };
}

/** Port 25 and FCrDNS through one identity; its checks name it when it is one of SMTP_EGRESS. */
async function checkEgress(
  dns: DoctorDnsPort,
  ports: DoctorPorts,
  opts: DoctorOptions,
  target: string,
  way: DoctorEgress,
): Promise<{ name: string; smtp: SmtpOutcome; fcrdns: DoctorCheck; egress: EgressIp | null }> {
  const own = { ...opts, viaProxy: way.viaProxy };
  const smtp = await checkSmtp(dns, { ...ports, connect: way.connect }, own, target);
  const fcrdns = await checkFcrdns(dns, own, smtp, ports.addressPolicy ?? null);
  const named = (c: DoctorCheck): DoctorCheck =>
    way.name === "" ? c : { ...c, message: `egress ${way.name}: ${c.message}`, egress: way.name };
  return {
    name: way.name,
    smtp: { ...smtp, check: named(smtp.check) },
    fcrdns: named(fcrdns),
    egress: egressOf(smtp, way.viaProxy),
  };
}

// ---- 1. resolvers -----------------------------------------------------------------------------

async function checkResolvers(
  dns: DoctorDnsPort,
  servers: readonly string[],
  domain: string,
): Promise<DoctorCheck> {
  const who = servers.length > 0 ? `DNS_SERVERS ${servers.join(", ")}` : "the system's resolvers";
  const started = Date.now();
  const answer = await dns.mx(domain);
  const took = `${Date.now() - started} ms`;
  switch (answer.kind) {
    case "found":
    case "nodata":
    case "nxdomain": {
      const what = { found: "MX records", nodata: "no MX records", nxdomain: "NXDOMAIN" }[answer.kind];
      return check("dns", "ok", `${who} answered MX ${domain} (${what}) in ${took}`);
    }
    case "timeout":
      return check(
        "dns",
        "fail",
        `${who} did not answer MX ${domain} within ${took}`,
        "check DNS_SERVERS (or /etc/resolv.conf) and that UDP and TCP port 53 are open to them",
      );
    case "error":
      return check(
        "dns",
        "fail",
        `${who} failed on MX ${domain}: ${answer.code}`,
        answer.code === "ESERVFAIL"
          ? "the resolver could not resolve that domain; try another with --mx, or another resolver"
          : "check DNS_SERVERS (or /etc/resolv.conf): the resolver must accept recursive queries from this host",
      );
  }
}

// ---- 2. HELO name -----------------------------------------------------------------------------

function checkHeloName(opts: DoctorOptions): DoctorCheck {
  const name = opts.heloName;
  const kind = classifyHostName(name);
  if (kind === "not_fqdn" || kind === "invalid") {
    return check(
      "helo_name",
      "fail",
      `SMTP_HELO_NAME=${name} is not fully qualified: stock Postfix answers "504 5.5.2 <${name}>: Helo command rejected: need fully-qualified hostname" and refuses every recipient`,
      SET_HELO,
    );
  }
  if (kind === "address_literal") {
    return check(
      "helo_name",
      "warn",
      `SMTP_HELO_NAME=${name} is an address literal: legal, but spam filters score it and it never matches a PTR`,
      SET_HELO,
    );
  }
  switch (opts.heloNameSource) {
    case "configured":
      return check("helo_name", "ok", `SMTP_HELO_NAME=${name} is a fully-qualified name`);
    case "hostname":
      return check(
        "helo_name",
        "warn",
        `SMTP_HELO_NAME is not set; probes announce this machine's host name ${name}`,
        SET_HELO,
      );
    case "derived":
      return check(
        "helo_name",
        "warn",
        `SMTP_HELO_NAME is not set and this machine's host name is not fully qualified; probes announce the stand-in ${name}`,
        SET_HELO,
      );
  }
}

// ---- 3. outbound SMTP -------------------------------------------------------------------------

interface SmtpOutcome {
  check: DoctorCheck;
  /** A TCP connection (direct or through the proxy) was made. */
  connected: boolean;
  mx: { host: string; address: string } | null;
  /** Our socket's local address (meaningless through a proxy). */
  localAddress: string | null;
  /** The client address the server printed in its EHLO reply ("… Hello [203.0.113.9]"). */
  reportedIp: string | null;
}

async function checkSmtp(
  dns: DoctorDnsPort,
  ports: DoctorPorts,
  opts: DoctorOptions,
  target: string,
): Promise<SmtpOutcome> {
  const none = { connected: false, mx: null, localAddress: null, reportedIp: null };
  const port = opts.smtpPort;
  let mx: { host: string; address: string; domain: string | null };
  if (isIP(bareIp(target))) {
    mx = { host: bareIp(target), address: bareIp(target), domain: null };
  } else {
    const resolution = await resolveMailHosts(target, dns, ports.random ?? Math.random);
    const best = resolution.kind === "mail_hosts" ? resolution.hosts[0] : undefined;
    const address = best?.addresses[0];
    if (best === undefined || address === undefined) {
      const why = describeNoMailHost(target, resolution);
      return opts.mxTarget === null
        ? {
            ...none,
            check: check(
              "smtp",
              "warn",
              `not checked: the MAIL FROM domain ${why}`,
              "pass a domain to try its mail servers, e.g. mailprobe doctor --mx gmail.com",
            ),
          }
        : { ...none, check: check("smtp", "fail", `--mx ${why}`, "pass another host or domain to --mx") };
    }
    mx = { host: best.name, address, domain: target };
  }
  const where = mx.host === mx.address ? `[${mx.address}]:${port}` : `${mx.host} [${mx.address}]:${port}`;
  const found = { ...none, mx: { host: mx.host, address: mx.address } };

  const connectMs = Math.min(opts.smtpConnectTimeoutMs, DOCTOR_LIMITS_MS.connect);
  let connection: SmtpConnection;
  let localAddress: string | null;
  try {
    const socket = await ports.connect.connect(mx.address, port, AbortSignal.timeout(connectMs));
    localAddress = opts.viaProxy ? null : (socket.localAddress ?? null);
    connection = new SmtpConnection(socket);
  } catch (error) {
    return { ...found, check: connectFailure(error, where, connectMs, opts.viaProxy) };
  }

  const deadline = Date.now() + DOCTOR_LIMITS_MS.smtpTotal;
  const within = (capMs: number): number => Math.max(1, Math.min(capMs, deadline - Date.now()));
  const commandMs = Math.min(opts.smtpCommandTimeoutMs, DOCTOR_LIMITS_MS.command);
  const ask = async (command: string): Promise<SmtpReply> => {
    connection.send([command]);
    return connection.read(within(commandMs));
  };
  let reportedIp: string | null = null;
  const outcome = (c: DoctorCheck): SmtpOutcome => ({
    ...found,
    connected: true,
    localAddress,
    reportedIp,
    check: c,
  });
  try {
    const greetingMs = Math.min(opts.smtpGreetingTimeoutMs, DOCTOR_LIMITS_MS.greeting);
    const banner = await connection.read(within(greetingMs), "greeting");
    if (banner.code !== 220) {
      return outcome(
        check(
          "smtp",
          "fail",
          `${where} greeted with ${quote(banner)} instead of 220`,
          banner.code === 554 || /block|listed|reputation/i.test(banner.text)
            ? "your egress IP is refused: check it on blocklists (e.g. https://check.spamhaus.org)"
            : "try another host with --mx; if every host answers like this, your egress IP is refused",
        ),
      );
    }
    let hello = await ask(`EHLO ${opts.heloName}`);
    // RFC 5321 §4.1.1.1: a server that does not know EHLO answers 500/502; HELO is the fallback.
    if (hello.code === 500 || hello.code === 502) hello = await ask(`HELO ${opts.heloName}`);
    if (hello.code !== 250) {
      return outcome(
        check("smtp", "fail", `${where} rejected EHLO ${opts.heloName}: ${quote(hello)}`, SET_HELO),
      );
    }
    reportedIp = clientIpIn(hello);
    if (mx.domain === null) {
      return outcome(
        check(
          "smtp",
          "ok",
          `${where} answered 220 and accepted EHLO ${opts.heloName} (MAIL FROM and RCPT not tried: pass a domain to --mx to try them)`,
        ),
      );
    }
    const mail = await ask(`MAIL FROM:<${opts.mailFrom}>`);
    if (mail.code < 200 || mail.code >= 300) {
      return outcome(judgeRejection(where, `MAIL FROM:<${opts.mailFrom}>`, mail));
    }
    const rcptTo = `RCPT TO:<postmaster@${mx.domain}>`;
    const rcpt = await ask(rcptTo);
    return outcome(judgeRcpt(where, opts.heloName, rcptTo, rcpt));
  } catch (error) {
    return outcome(conversationFailure(error, where));
  } finally {
    await connection.quit(DOCTOR_LIMITS_MS.quit);
  }
}

function describeNoMailHost(target: string, resolution: DomainResolution): string {
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

function connectFailure(error: unknown, where: string, connectMs: number, viaProxy: boolean): DoctorCheck {
  const blocked = viaProxy
    ? "the proxy (SMTP_PROXY) may not reach port 25: try another --mx, or another proxy"
    : "outbound port 25 is probably blocked (common on cloud networks): ask the provider to open it, or set SMTP_PROXY=socks5://host:port to a host that may send on port 25";
  if (error instanceof AbortedError) {
    return check("smtp", "fail", `no TCP connection to ${where} within ${connectMs} ms`, blocked);
  }
  if (!(error instanceof ConnectError)) {
    return check("smtp", "fail", `connecting to ${where} failed: ${errorText(error)}`, blocked);
  }
  switch (error.kind) {
    case "refused":
      return check(
        "smtp",
        "fail",
        `${where} refused the connection`,
        "nothing listens there: try another host with --mx (if every host refuses, a firewall rejects outbound port 25)",
      );
    case "timeout":
      return check("smtp", "fail", `no TCP connection to ${where}: ${error.message}`, blocked);
    case "unreachable":
      return check("smtp", "fail", `${where} is unreachable: ${error.message}`, blocked);
    case "dropped":
      return check("smtp", "fail", `connecting to ${where} failed: ${error.message}`, blocked);
    case "proxy":
      return check(
        "smtp",
        "fail",
        `the SOCKS5 proxy failed to connect to ${where}: ${error.message}`,
        "check SMTP_PROXY (address, credentials) and that the proxy may connect to port 25",
      );
  }
}

function conversationFailure(error: unknown, where: string): DoctorCheck {
  if (error instanceof SmtpTimeoutError) {
    return check(
      "smtp",
      "fail",
      `${where} accepted the connection but did not answer in time (${error.step})`,
      "the host may be tarpitting this IP: try another host with --mx",
    );
  }
  if (error instanceof SmtpClosedError || error instanceof SmtpProtocolError) {
    return check(
      "smtp",
      "fail",
      `${where} broke off the conversation: ${error.message}`,
      "a middlebox may intercept port 25, or the host refuses this IP: try another host with --mx",
    );
  }
  return check("smtp", "fail", `talking to ${where} failed: ${errorText(error)}`, null);
}

const HELO_TEXT = /\b(?:helo|ehlo)\b/i;
const SENDER_TEXT = /\bsender\b|\bmail from\b/i;
const RELAY_TEXT = /\brelay/i;

/** A refused MAIL FROM (or RCPT that blames something other than the mailbox). */
function judgeRejection(where: string, command: string, reply: SmtpReply): DoctorCheck {
  const status: CheckStatus = reply.code >= 500 ? "fail" : "warn";
  const said = `${where} answered ${command} with ${quote(reply)}`;
  if (HELO_TEXT.test(reply.text)) return check("smtp", "fail", said, SET_HELO);
  if (SENDER_TEXT.test(reply.text)) {
    return check(
      "smtp",
      status,
      said,
      "set SMTP_MAIL_FROM to an address of a domain you own that has MX records, e.g. SMTP_MAIL_FROM=verify@example.com",
    );
  }
  const verdict = classifyReply(reply);
  if (verdict.kind === "unknown" && verdict.reason === "greylisted") {
    return check("smtp", "warn", said, "greylisted: run the doctor again in a few minutes");
  }
  if (verdict.kind === "unknown" && verdict.reason === "ip_blocklisted") {
    return check(
      "smtp",
      "fail",
      said,
      "the receiver refuses your egress IP: check it on blocklists (e.g. https://check.spamhaus.org) and its PTR",
    );
  }
  return check(
    "smtp",
    status,
    said,
    status === "fail" ? "read the reply: the receiver refuses this sender set-up" : "try again later",
  );
}

function judgeRcpt(where: string, heloName: string, rcptTo: string, reply: SmtpReply): DoctorCheck {
  if (reply.code >= 200 && reply.code < 300) {
    return check(
      "smtp",
      "ok",
      `${where} answered 220 and accepted EHLO ${heloName}, MAIL FROM and ${rcptTo}`,
    );
  }
  if (!HELO_TEXT.test(reply.text) && !SENDER_TEXT.test(reply.text)) {
    const verdict = classifyReply(reply);
    // The server judged the mailbox, so it had nothing against our HELO, IP or sender.
    if (
      verdict.kind === "mailbox_missing" ||
      verdict.kind === "mailbox_disabled" ||
      verdict.kind === "mailbox_full"
    ) {
      return check(
        "smtp",
        "ok",
        `${where} answered 220 and accepted EHLO ${heloName} and MAIL FROM (${rcptTo}: ${quote(reply)})`,
      );
    }
    if (RELAY_TEXT.test(reply.text)) {
      return check(
        "smtp",
        "warn",
        `${where} accepted EHLO ${heloName} and MAIL FROM but is not a mail host of that domain (${quote(reply)})`,
        "pass a mail domain to --mx, not a host name",
      );
    }
  }
  return judgeRejection(where, rcptTo, reply);
}

/** The last "[ip]" of the EHLO reply's first line: Exim, Gmail and Microsoft name the client there. */
function clientIpIn(reply: SmtpReply): string | null {
  const firstLine = reply.text.split("\n")[0] ?? "";
  const found = [...firstLine.matchAll(/\[(?:IPv6:)?([0-9A-Fa-f:.]+)\]/g)].map((m) => m[1] ?? "");
  const ip = found.reverse().find((candidate) => isIP(candidate) !== 0);
  return ip ?? null;
}

// ---- 4. forward-confirmed reverse DNS of the egress IP ------------------------------------------

function egressOf(smtp: SmtpOutcome, viaProxy: boolean): DoctorReport["egress"] {
  if (smtp.reportedIp !== null) return { ip: smtp.reportedIp, source: "reported_by_mx" };
  if (smtp.localAddress !== null && !viaProxy) return { ip: smtp.localAddress, source: "local_socket" };
  return null;
}

async function checkFcrdns(
  dns: DoctorDnsPort,
  opts: DoctorOptions,
  smtp: SmtpOutcome,
  policy: AddressPolicy | null,
): Promise<DoctorCheck> {
  const egress = egressOf(smtp, opts.viaProxy);
  if (egress === null) {
    return !smtp.connected
      ? check("fcrdns", "warn", "not checked: it needs a connection to a mail host (see smtp)", null)
      : check(
          "fcrdns",
          "warn",
          "the egress IP can't be known: SMTP goes through SMTP_PROXY and the mail host did not name our address",
          "look up the proxy's public IP: its PTR must name SMTP_HELO_NAME, and that name must resolve back to it (dig -x IP)",
        );
  }
  const ip = egress.ip;
  // A private egress address (a local socket behind NAT, or an MX on our own network) is not what
  // receivers on the internet see, so a missing or mismatched PTR proves nothing: failures
  // soften to warnings and say why.
  const isPrivate = policy !== null && !policy(ip).public;
  const privateNote = isPrivate
    ? ` (${ip} is not a public address: receivers on the internet see another address; check that one with dig -x)`
    : "";
  const verdict = (status: CheckStatus, message: string, fix: string | null): DoctorCheck =>
    check("fcrdns", status === "fail" && isPrivate ? "warn" : status, message + privateNote, fix);

  const helo = normaliseHostName(opts.heloName);
  const ptr = await dns.reverse(ip);
  if (ptr.kind === "timeout" || ptr.kind === "error") {
    const why = ptr.kind === "timeout" ? "timed out" : ptr.code;
    return verdict(
      "warn",
      `the PTR lookup of ${ip} failed (${why})`,
      "run the doctor again; check DNS_SERVERS",
    );
  }
  const names = ptr.kind === "found" ? [...new Set(ptr.records.map(normaliseHostName))].filter(Boolean) : [];
  if (names.length === 0) {
    return verdict(
      "fail",
      `${ip} has no PTR record: Gmail answers "550 5.7.25 The IP address sending this message does not have a PTR record" and many receivers distrust it`,
      `ask whoever owns ${ip} (your hosting provider) to set its PTR to ${helo}, and add an A record ${helo} → ${ip}`,
    );
  }
  // The HELO name first, then the others; a PTR rarely lists more than a few names.
  const candidates = [...names].sort((a, b) => Number(b === helo) - Number(a === helo)).slice(0, 4);
  const confirmed = await Promise.all(candidates.map((name) => resolvesTo(dns, name, ip)));
  const confirmedName = candidates.find((_, i) => confirmed[i] === true);
  const shown = names.slice(0, 4).join(", ");
  if (confirmedName === helo) {
    return verdict("ok", `${ip} → PTR ${helo} → ${ip}: forward-confirmed and equal to the HELO name`, null);
  }
  if (names.includes(helo)) {
    return verdict(
      "fail",
      `${ip} → PTR ${helo}, but ${helo} does not resolve back to ${ip} (not forward-confirmed)`,
      `add an ${isIPv6(ip) ? "AAAA" : "A"} record ${helo} → ${ip}`,
    );
  }
  if (confirmedName !== undefined) {
    return verdict(
      "warn",
      `${ip} → PTR ${confirmedName} → ${ip} is forward-confirmed, but the HELO name is ${helo}`,
      `set SMTP_HELO_NAME=${confirmedName}, or point the PTR of ${ip} at ${helo}`,
    );
  }
  return verdict(
    "fail",
    `${ip} → PTR ${shown}, which is not the HELO name ${helo} and does not resolve back to ${ip}`,
    `set the PTR of ${ip} to ${helo} and add an ${isIPv6(ip) ? "AAAA" : "A"} record ${helo} → ${ip}`,
  );
}

async function resolvesTo(dns: DoctorDnsPort, name: string, ip: string): Promise<boolean> {
  const answer = isIPv4(ip) ? await dns.addresses(name) : await dns.addresses6(name);
  return answer.kind === "found" && answer.records.some((a) => sameIp(a, ip));
}

// ---- 5. the MAIL FROM domain ------------------------------------------------------------------

async function checkMailFromDomain(
  dns: DoctorDnsPort,
  mailFrom: string,
  domain: string,
  random: () => number,
): Promise<DoctorCheck> {
  const fix =
    "set SMTP_MAIL_FROM to an address of a domain you own that has MX records, e.g. SMTP_MAIL_FROM=verify@example.com";
  if (classifyHostName(domain) !== "fqdn") {
    return check(
      "mail_from_domain",
      "fail",
      `SMTP_MAIL_FROM=${mailFrom}: ${domain} is not a fully-qualified domain (Postfix: "504 5.5.2 Sender address rejected: need fully-qualified address")`,
      fix,
    );
  }
  const resolution = await resolveMailHosts(domain, dns, random);
  switch (resolution.kind) {
    case "mail_hosts":
      return check(
        "mail_from_domain",
        "ok",
        resolution.hasMxRecords
          ? `${domain} has MX records (${[...resolution.hosts, ...resolution.fallbacks].map((h) => h.name).join(", ")})`
          : `${domain} has no MX records but an address (implicit MX)`,
      );
    case "no_mail":
      return check(
        "mail_from_domain",
        "fail",
        `${describeNoMailHost(domain, resolution)}: bounces can't reach SMTP_MAIL_FROM, and receivers that verify senders (Postfix reject_unknown_sender_domain: "450 4.1.8 Sender address rejected: Domain not found") refuse it`,
        fix,
      );
    case "dns_error":
    case "dns_timeout":
      return check(
        "mail_from_domain",
        "warn",
        describeNoMailHost(domain, resolution),
        "run the doctor again; check DNS_SERVERS",
      );
  }
}

// ---- helpers ----------------------------------------------------------------------------------

function check(id: CheckId, status: CheckStatus, message: string, fix: string | null = null): DoctorCheck {
  return { id, status, message, fix };
}

function quote(reply: SmtpReply): string {
  const text = reply.text.split("\n").join(" ").slice(0, 200);
  return `"${reply.code} ${text}"`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** "[192.0.2.1]" → "192.0.2.1"; anything else unchanged. */
function bareIp(target: string): string {
  return target.replace(/^\[(?:IPv6:)?(.*)\]$/i, "$1");
}

function sameIp(a: string, b: string): boolean {
  return isIPv6(a) && isIPv6(b) ? expandIpv6(a) === expandIpv6(b) : a === b;
}

/** Every DNS call of the doctor ends within `stepMs` (c-ares retries would otherwise add up). */
function boundedDns(dns: DoctorDnsPort, stepMs: number): DoctorDnsPort {
  const bound =
    <T>(lookup: (name: string) => Promise<DnsAnswer<T>>) =>
    (name: string): Promise<DnsAnswer<T>> => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<DnsAnswer<T>>((resolve) => {
        timer = setTimeout(() => resolve({ kind: "timeout" }), stepMs);
      });
      return Promise.race([lookup(name), late]).finally(() => clearTimeout(timer));
    };
  return {
    mx: bound((d) => dns.mx(d)),
    addresses: bound((h) => dns.addresses(h)),
    addresses6: bound((h) => dns.addresses6(h)),
    reverse: bound((ip) => dns.reverse(ip)),
  };
}

// ---- the default DNS port -----------------------------------------------------------------------

/** The doctor's DnsPort: the engine's own (PTRs asked of DNS, never /etc/hosts). */
export function createDoctorDns(options: NodeDnsOptions): DoctorDnsPort & { close(): void } {
  return createNodeDns(options);
}
