// The outbound SMTP check, through one egress identity: a mail host (the `--mx` target or the
// MAIL FROM domain's best MX), connect, banner, EHLO, MAIL FROM, RCPT; the verdict names what the
// server refused us for and the IP it saw us as.
//
// The SMTP check goes one step past EHLO: MAIL FROM and one RCPT TO:<postmaster@domain> (RFC 5321
// §4.5.1: every mail domain must accept it), then QUIT, never DATA. Postfix evaluates
// smtpd_helo_restrictions at RCPT time by default (smtpd_delay_reject=yes), so a non-FQDN HELO
// gets "250" to EHLO and "504 5.5.2 <web-1>: Helo command rejected: need fully-qualified hostname"
// only to the RCPT: checking EHLO alone would pass exactly the set-up this command exists to catch.
import { isIP } from "node:net";
import {
  AbortedError,
  classifyReply,
  ConnectError,
  resolveMailHosts,
  SmtpClosedError,
  SmtpConnection,
  SmtpProtocolError,
  SmtpTimeoutError,
  type SmtpReply,
} from "../verify/index.ts";
import {
  bareIp,
  check,
  describeNoMailHost,
  DOCTOR_LIMITS_MS,
  errorText,
  quote,
  SET_HELO,
  type CheckStatus,
  type DoctorCheck,
  type DoctorDnsPort,
  type DoctorOptions,
  type DoctorPorts,
} from "./report.ts";

// ---- 3. outbound SMTP -------------------------------------------------------------------------

export interface SmtpOutcome {
  check: DoctorCheck;
  /** A TCP connection (direct or through the proxy) was made. */
  connected: boolean;
  mx: { host: string; address: string } | null;
  /** Our socket's local address (meaningless through a proxy). */
  localAddress: string | null;
  /** The client address the server printed in its EHLO reply ("… Hello [203.0.113.9]"). */
  reportedIp: string | null;
}

export async function checkSmtp(
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
