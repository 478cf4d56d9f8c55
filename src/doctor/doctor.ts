// `mailprobe doctor`: is this machine set up to probe mail servers? Five checks, each a verdict
// (ok / warn / fail) with what to do. Pure diagnostics on ports (DNS, TCP connect); the CLI reads
// the configuration and prints. The outbound SMTP check is smtp-check.ts; the vocabulary and
// the helpers the checks share, report.ts.
import { isIP, isIPv4, isIPv6 } from "node:net";
import { classifyHostName, normaliseHostName } from "../lib/host-names.ts";
import {
  createNodeDns,
  expandIpv6,
  resolveMailHosts,
  type AddressPolicy,
  type DnsAnswer,
  type NodeDnsOptions,
} from "../verify/index.ts";
import {
  bareIp,
  check,
  describeNoMailHost,
  DOCTOR_LIMITS_MS,
  SET_HELO,
  type CheckStatus,
  type DoctorCheck,
  type DoctorDnsPort,
  type DoctorEgress,
  type DoctorOptions,
  type DoctorPorts,
  type DoctorReport,
  type EgressIp,
} from "./report.ts";
import { checkSmtp, type SmtpOutcome } from "./smtp-check.ts";

// What the CLI and tests name; the rest of the vocabulary is report.ts.
export type { CheckId, DoctorCheck, DoctorDnsPort, DoctorOptions, DoctorReport } from "./report.ts";

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
