// Who our probes say they are: the EHLO name and the envelope sender, their defaults, and the
// warnings an operator must see. Receivers judge both before they answer a single RCPT: stock
// Postfix with `reject_non_fqdn_helo_hostname` answers "504 5.5.2 <web-1>: Helo command
// rejected: need fully-qualified hostname" to a bare host name and then refuses every recipient,
// and `reject_non_fqdn_sender` does the same to "verify@web-1".
//
// The default chain for the EHLO name:
//   1. SMTP_HELO_NAME, when set. Malformed (not a host name at all) stops the process; a bare
//      name ("web-1") or an address literal ("[192.0.2.1]") is used with a warning: labs and test
//      rigs talk to MTAs that accept them, and refusing to start would break upgrades of
//      deployments that work today. `mailprobe doctor` reports it as a failure.
//   2. os.hostname(), when it is fully qualified (warning: set it explicitly to match the PTR).
//   3. A syntactically valid FQDN: the SMTP_MAIL_FROM domain (a domain the operator owns, so it
//      resolves, which `reject_unknown_helo_hostname` also wants), else
//      "<first label of the host name>.localdomain" (warning).
// SMTP_MAIL_FROM defaults to verify@<the EHLO name>, or verify@<the derived FQDN> when the EHLO
// name is not fully qualified, so the default sender domain is always an FQDN.
import { classifyHostName, isFqdn, normaliseHostName, type HeloNameSource } from "../lib/host-names.ts";
import { ConfigError } from "./env-vars.ts";

/** Stable codes of the warnings (shown by /readyz). */
export type ConfigWarningCode =
  | "helo_name_unset"
  | "helo_name_derived"
  | "helo_name_not_fqdn"
  | "helo_name_address_literal"
  | "mail_from_not_fqdn";

/** A set-up problem that does not stop the process. */
export interface ConfigWarning {
  code: ConfigWarningCode;
  /** The environment variable to set or fix. */
  variable: string;
  /** For the operator: what is wrong, what it costs, what to set (with an example). */
  message: string;
}

export interface SmtpIdentity {
  heloName: string;
  heloNameSource: HeloNameSource;
  mailFrom: string;
  warnings: ConfigWarning[];
}

const SET_HELO =
  "set SMTP_HELO_NAME to the fully-qualified name your egress IP's PTR record points at, e.g. " +
  "SMTP_HELO_NAME=mail.example.com; `mailprobe doctor` checks the set-up";
// RFC 5322 dot-atom: the local parts a sender address needs; quoted ones are not worth the risk.
const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/** The EHLO name, the envelope sender and their warnings, from the two variables and the host name. */
export function resolveSmtpIdentity(input: {
  heloName: string | null;
  mailFrom: string | null;
  hostname: string;
}): SmtpIdentity {
  const warnings: ConfigWarning[] = [];
  const mailFromDomain = input.mailFrom === null ? null : checkMailFrom(input.mailFrom, warnings);
  const host = normaliseHostName(input.hostname);
  const hostDerived = isFqdn(host) ? host : `${firstLabel(host)}.localdomain`;

  let heloName: string;
  let heloNameSource: HeloNameSource;
  if (input.heloName !== null) {
    heloName = checkHeloName(input.heloName, warnings);
    heloNameSource = "configured";
  } else if (isFqdn(host)) {
    heloName = host;
    heloNameSource = "hostname";
    warnings.push({
      code: "helo_name_unset",
      variable: "SMTP_HELO_NAME",
      message: `SMTP_HELO_NAME is not set; probes announce this machine's host name "${host}": ${SET_HELO}`,
    });
  } else {
    const senderDomain =
      mailFromDomain !== null && isFqdn(mailFromDomain) ? normaliseHostName(mailFromDomain) : null;
    heloName = senderDomain ?? hostDerived;
    heloNameSource = "derived";
    warnings.push({
      code: "helo_name_derived",
      variable: "SMTP_HELO_NAME",
      message:
        `SMTP_HELO_NAME is not set and this machine's host name "${input.hostname}" is not fully ` +
        `qualified (receivers such as Postfix refuse a bare name with "504 5.5.2 Helo command ` +
        `rejected"), so probes announce "${heloName}" ` +
        `(${senderDomain !== null ? "the domain of SMTP_MAIL_FROM" : "a made-up name that does not resolve"}): ` +
        SET_HELO +
        (input.mailFrom === null ? ", and SMTP_MAIL_FROM=verify@example.com" : ""),
    });
  }
  const mailFrom = input.mailFrom ?? `verify@${isFqdn(heloName) ? heloName : hostDerived}`;
  return { heloName, heloNameSource, mailFrom, warnings };
}

function checkHeloName(raw: string, warnings: ConfigWarning[]): string {
  const name = raw.endsWith(".") ? raw.slice(0, -1) : raw;
  switch (classifyHostName(name)) {
    case "fqdn":
      return name;
    case "invalid":
      throw new ConfigError(
        "SMTP_HELO_NAME must be a fully-qualified host name such as mail.example.com (letters, " +
          "digits, hyphens and dots, at most 253 characters) or an address literal such as " +
          `[192.0.2.1], got "${raw}"`,
      );
    case "not_fqdn":
      warnings.push({
        code: "helo_name_not_fqdn",
        variable: "SMTP_HELO_NAME",
        message:
          `SMTP_HELO_NAME="${raw}" is not a fully-qualified domain name: stock Postfix answers ` +
          `"504 5.5.2 <${name}>: Helo command rejected: need fully-qualified hostname" and refuses ` +
          `every recipient (results come back unknown): ${SET_HELO}`,
      });
      return name;
    case "address_literal":
      warnings.push({
        code: "helo_name_address_literal",
        variable: "SMTP_HELO_NAME",
        message:
          `SMTP_HELO_NAME="${raw}" is an address literal: legal (RFC 5321), but spam filters score ` +
          `it and it can never match your PTR record: ${SET_HELO}`,
      });
      return name;
  }
}

/** Throws on a malformed address; returns its domain. */
function checkMailFrom(raw: string, warnings: ConfigWarning[]): string {
  const at = raw.lastIndexOf("@");
  const local = raw.slice(0, at);
  const domain = raw.slice(at + 1);
  const kind = classifyHostName(domain);
  if (at <= 0 || local.length > 64 || raw.length > 254 || !DOT_ATOM.test(local) || kind === "invalid") {
    throw new ConfigError(
      `SMTP_MAIL_FROM must be an address of a domain you own, such as verify@example.com, got "${raw}"`,
    );
  }
  if (kind !== "fqdn") {
    warnings.push({
      code: "mail_from_not_fqdn",
      variable: "SMTP_MAIL_FROM",
      message:
        `SMTP_MAIL_FROM="${raw}": "${domain}" is not a fully-qualified domain, so receivers such ` +
        `as Postfix answer "504 5.5.2 <${raw}>: Sender address rejected: need fully-qualified ` +
        "address\" and bounces can't reach it: use an address of a domain you own, e.g. " +
        "SMTP_MAIL_FROM=verify@example.com",
    });
  }
  return domain;
}

/** The first label of a host name as a valid LDH label ("my_box" → "my-box"), never "localhost". */
function firstLabel(host: string): string {
  const label = (host.split(".")[0] ?? "")
    .replace(/[^a-z0-9-]+/g, "-")
    .slice(0, 63)
    .replace(/^-+|-+$/g, "");
  // "localhost.localdomain" is a name many spam filters reject on sight.
  return label === "" || label === "localhost" ? "mailprobe" : label;
}
