import { guardPorts } from "../app/engine-options.ts";
import type { Config } from "../config/index.ts";
import { createDoctorDns, runDoctor, type DoctorCheck, type DoctorReport } from "../doctor/doctor.ts";
import {
  createDirectConnect,
  createSocksConnect,
  directConnect,
  egressName,
  isProxySpec,
} from "../verify/index.ts";

/**
 * `mailprobe doctor [--mx HOST|DOMAIN]`: checks the operator's set-up (resolvers, HELO name,
 * outbound port 25, FCrDNS of the egress IP, the MAIL FROM domain). Needs no database.
 */
export async function runDoctorCommand(
  config: Readonly<Config>,
  opts: { mx: string | null },
): Promise<DoctorReport> {
  const v = config.verify;
  const dns = createDoctorDns({
    servers: v.dnsServers,
    // The doctor bounds every step itself; these keep c-ares from retrying past it.
    timeoutMs: Math.min(v.dnsTimeoutMs, 2_000),
    tries: Math.min(v.dnsTries, 2),
  });
  try {
    return await runDoctor(
      {
        heloName: v.smtpHeloName,
        heloNameSource: v.smtpHeloNameSource,
        mailFrom: v.smtpMailFrom,
        dnsServers: v.dnsServers,
        smtpPort: v.smtpPort,
        mxTarget: opts.mx,
        viaProxy: v.smtpProxy !== null,
        dnsTimeoutMs: v.dnsTimeoutMs,
        smtpConnectTimeoutMs: v.smtpConnectTimeoutMs,
        smtpGreetingTimeoutMs: v.smtpGreetingTimeoutMs,
        smtpCommandTimeoutMs: v.smtpCommandTimeoutMs,
      },
      {
        dns,
        connect:
          v.smtpProxy === null ? directConnect : createSocksConnect(v.smtpProxy, v.smtpConnectTimeoutMs),
        // Every SMTP_EGRESS identity: its own port-25 reachability and its own PTR/FCrDNS.
        egress: v.smtpEgress.map((spec) => ({
          name: egressName(spec),
          viaProxy: isProxySpec(spec),
          connect: isProxySpec(spec)
            ? createSocksConnect(spec, v.smtpConnectTimeoutMs)
            : createDirectConnect(spec),
        })),
        ...guardPorts,
      },
    );
  } finally {
    dns.close();
  }
}

const line = (c: DoctorCheck): string =>
  `${c.status.padEnd(4)}  ${c.id.padEnd(16)}  ${c.message}${c.fix === null ? "" : `. Fix: ${c.fix}`}`;

/** One line per check, then the tally. */
export function formatDoctorReport(config: Readonly<Config>, report: DoctorReport): string {
  const v = config.verify;
  const count = (status: DoctorCheck["status"]): number =>
    report.checks.filter((c) => c.status === status).length;
  return [
    `mailprobe doctor: HELO ${v.smtpHeloName}, MAIL FROM ${v.smtpMailFrom}, ` +
      `port ${v.smtpPort}${v.smtpProxy === null ? "" : " through SMTP_PROXY"}` +
      (v.smtpEgress.length === 0 ? "" : `, egress ${v.smtpEgress.map(egressName).join(", ")}`),
    ...report.checks.map(line),
    `${count("ok")} ok, ${count("warn")} warn, ${count("fail")} fail`,
  ].join("\n");
}

/** The --json document (snake_case, like the API). */
export function doctorJson(config: Readonly<Config>, report: DoctorReport): unknown {
  return {
    ok: report.ok,
    helo_name: config.verify.smtpHeloName,
    mail_from: config.verify.smtpMailFrom,
    mx: report.mx,
    egress: report.egress,
    identities: report.identities,
    checks: report.checks,
  };
}
