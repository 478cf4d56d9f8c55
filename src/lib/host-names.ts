// Host-name syntax as a receiving MTA judges our EHLO name and our sender's domain. One home for
// the rule: config/ validates SMTP_HELO_NAME and SMTP_MAIL_FROM with it, doctor/doctor.ts reports
// with it.
import { isIPv4, isIPv6 } from "node:net";

/**
 * How a name looks to a receiver:
 * - `fqdn`: mail.example.com. At least two LDH labels and a TLD of letters (or an IDN `xn--` TLD).
 * - `address_literal`: [192.0.2.1], [IPv6:2001:db8::1]. Legal in EHLO (RFC 5321 §4.1.3), but
 *   spam filters score it and it never matches a PTR name.
 * - `not_fqdn`: web-1, localhost, a container id, a bare 192.0.2.1. Stock Postfix with
 *   `reject_non_fqdn_helo_hostname` answers "504 5.5.2 <web-1>: Helo command rejected: need
 *   fully-qualified hostname" and then refuses every recipient.
 * - `invalid`: not a host name at all (spaces, "_", empty labels, a label over 63 or a name over
 *   253 characters).
 */
export type HostNameKind = "fqdn" | "address_literal" | "not_fqdn" | "invalid";

/** Where the EHLO name in use came from: SMTP_HELO_NAME, os.hostname(), or a derived fallback. */
export type HeloNameSource = "configured" | "hostname" | "derived";

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/i;

/** Classifies a host name (one trailing root dot is ignored). */
export function classifyHostName(name: string): HostNameKind {
  const literal = /^\[(.*)\]$/.exec(name);
  if (literal !== null) {
    const inner = literal[1] ?? "";
    const v6 = /^IPv6:(.+)$/i.exec(inner)?.[1];
    return isIPv4(inner) || (v6 !== undefined && isIPv6(v6)) ? "address_literal" : "invalid";
  }
  const bare = name.endsWith(".") ? name.slice(0, -1) : name;
  if (bare.length === 0 || bare.length > 253) return "invalid";
  const labels = bare.split(".");
  if (!labels.every((label) => LABEL.test(label))) return "invalid";
  return labels.length >= 2 && TLD.test(labels.at(-1) ?? "") ? "fqdn" : "not_fqdn";
}

/** True for a fully-qualified host name (see classifyHostName). */
export const isFqdn = (name: string): boolean => classifyHostName(name) === "fqdn";

/** Lowercase and without the trailing root dot: how two DNS names are compared. */
export const normaliseHostName = (name: string): string => name.trim().toLowerCase().replace(/\.$/, "");
