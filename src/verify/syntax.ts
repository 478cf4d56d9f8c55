// RFC 5321 §4.1.2 mailbox syntax (with RFC 6531 UTF-8 local parts) and the canonical form
// every later stage works on. Pure: no DNS, no lists.
import { domainToASCII } from "node:url";

/** Why an address is not a usable mailbox. */
export type SyntaxFailureReason =
  | "empty"
  | "missing_at"
  | "local_empty"
  | "local_invalid"
  | "local_too_long"
  | "domain_empty"
  | "address_literal"
  | "domain_invalid"
  | "domain_too_long"
  | "label_too_long"
  | "single_label"
  | "numeric_tld"
  | "address_too_long";

export type SyntaxResult =
  { ok: true; canonical: string; local: string; domain: string } | { ok: false; reason: SyntaxFailureReason };

export type DomainSyntaxResult = { ok: true; domain: string } | { ok: false; reason: SyntaxFailureReason };

// RFC 5321 §4.5.3.1.1: 64 octets of local part; §4.5.3.1.3 and RFC 3696 errata 1690: a path
// is at most 256 octets including the angle brackets, so 254 for the address itself.
const MAX_LOCAL_OCTETS = 64;
const MAX_ADDRESS_OCTETS = 254;
// RFC 1035 §2.3.4: 255 octets on the wire = 253 characters in dotted text form.
const MAX_DOMAIN_CHARS = 253;
const MAX_LABEL_CHARS = 63;

// atext (RFC 5322 §3.2.3) and, per RFC 6531 §3.3, any UTF-8 non-ASCII character. Separators,
// control/format characters and lone surrogates are still refused: they can't be typed and
// no mail system hands them out.
const ATEXT = /^(?:[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]|[^\p{C}\p{Z}\p{ASCII}])+$/u;
// qtextSMTP (RFC 5321 §4.1.2: %d32-33 / %d35-91 / %d93-126) plus UTF-8 non-ASCII.
const QTEXT = /^(?:[\x20\x21\x23-\x5B\x5D-\x7E]|[^\p{C}\p{Z}\p{ASCII}])$/u;
const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
const ALL_DIGITS = /^[0-9]+$/;

const octets = (s: string): number => Buffer.byteLength(s, "utf8");

/** Parses and canonicalises one address. Canonical = trimmed, lowercased, domain in punycode. */
export function checkSyntax(input: string): SyntaxResult {
  const trimmed = input.trim();
  if (trimmed === "") return { ok: false, reason: "empty" };
  // The last "@" splits: a quoted local part may itself contain "@" ("a@b"@example.com).
  const at = trimmed.lastIndexOf("@");
  if (at < 0) return { ok: false, reason: "missing_at" };

  const local = parseLocalPart(trimmed.slice(0, at));
  if (!local.ok) return local;
  const domain = checkDomainSyntax(trimmed.slice(at + 1));
  if (!domain.ok) return domain;

  if (octets(local.local) > MAX_LOCAL_OCTETS) return { ok: false, reason: "local_too_long" };
  const canonical = `${local.local}@${domain.domain}`;
  if (octets(canonical) > MAX_ADDRESS_OCTETS) return { ok: false, reason: "address_too_long" };
  return { ok: true, canonical, local: local.local, domain: domain.domain };
}

/**
 * Validates a domain and returns its canonical form (lowercase, IDN → punycode).
 * Address literals (`[192.0.2.1]`, RFC 5321 §4.1.3) are refused: they are legal SMTP but no
 * customer list carries them deliberately, they bypass DNS (no MX, no policy) and probing an
 * arbitrary IP on port 25 is not something a verification service should do.
 */
export function checkDomainSyntax(input: string): DomainSyntaxResult {
  const raw = input.trim();
  if (raw === "") return { ok: false, reason: "domain_empty" };
  if (raw.startsWith("[")) return { ok: false, reason: "address_literal" };

  // Only non-ASCII names go through IDNA: for ASCII ones domainToASCII is laxer than LDH
  // (it keeps "_" and a trailing dot), and the LDH check below is the rule we want.
  const ascii = /^\p{ASCII}*$/u.test(raw) ? raw.toLowerCase() : domainToASCII(raw);
  if (ascii === "") return { ok: false, reason: "domain_invalid" };
  if (ascii.length > MAX_DOMAIN_CHARS) return { ok: false, reason: "domain_too_long" };

  const labels = ascii.split(".");
  for (const label of labels) {
    if (label.length > MAX_LABEL_CHARS) return { ok: false, reason: "label_too_long" };
    if (!LDH_LABEL.test(label)) return { ok: false, reason: "domain_invalid" };
  }
  if (labels.length < 2) return { ok: false, reason: "single_label" };
  // An all-numeric TLD makes "1.2.3.4" look like a domain; no such TLD exists (RFC 3696 §2).
  if (ALL_DIGITS.test(labels[labels.length - 1] ?? "")) return { ok: false, reason: "numeric_tld" };
  return { ok: true, domain: ascii };
}

type LocalResult = { ok: true; local: string } | { ok: false; reason: SyntaxFailureReason };

function parseLocalPart(raw: string): LocalResult {
  if (raw === "") return { ok: false, reason: "local_empty" };
  // NFC per RFC 6532 §3.1, so "é" typed two ways is one mailbox.
  const text = raw.normalize("NFC");
  if (text.startsWith('"')) return parseQuotedLocal(text);
  return isDotAtom(text) ? { ok: true, local: text.toLowerCase() } : { ok: false, reason: "local_invalid" };
}

function isDotAtom(text: string): boolean {
  return text.split(".").every((atom) => atom !== "" && ATEXT.test(atom));
}

function parseQuotedLocal(text: string): LocalResult {
  if (text.length < 2 || !text.endsWith('"')) return { ok: false, reason: "local_invalid" };
  const chars = Array.from(text.slice(1, -1));
  let content = "";
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] ?? "";
    if (c === "\\") {
      // quoted-pairSMTP = %d92 %d32-126
      const next = chars[++i];
      if (next === undefined || !/^[\x20-\x7E]$/.test(next)) return { ok: false, reason: "local_invalid" };
      content += next;
    } else if (QTEXT.test(c)) {
      content += c;
    } else {
      return { ok: false, reason: "local_invalid" };
    }
  }
  // `""@example.com` matches the grammar, but an empty mailbox name is never a real mailbox.
  if (content === "") return { ok: false, reason: "local_empty" };
  // RFC 5321 §4.1.2: "a sending system SHOULD ... transmit the dot-string form" when it exists,
  // so `"john.doe"@x` and `john.doe@x` are one address.
  if (isDotAtom(content)) return { ok: true, local: content.toLowerCase() };
  const requoted = `"${content.replace(/(["\\])/g, "\\$1")}"`;
  return { ok: true, local: requoted.toLowerCase() };
}

/** Best-effort domain part of an address that failed syntax, for the result's domain_name. */
export function extractDomainPart(input: string): string {
  const trimmed = input.trim();
  const at = trimmed.lastIndexOf("@");
  return at < 0 ? "" : trimmed.slice(at + 1).toLowerCase();
}
