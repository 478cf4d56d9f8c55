// RFC 5321 §4.1.2 mailbox syntax (with RFC 6531 UTF-8 local parts), RFC 5321 §4.1.3 address
// literals, IDNA2008 domains (RFC 5890–5893) and the canonical form every later stage works on.
// Pure: no DNS, no lists.
import { createRequire } from "node:module";
import { isIPv4, isIPv6 } from "node:net";

/** Why an address is not a usable mailbox. */
export type SyntaxFailureReason =
  | "empty"
  | "missing_at"
  /** Whitespace or a line break inside the address (ends are trimmed); only a plain space inside a quoted local part is allowed. */
  | "whitespace"
  | "local_empty"
  | "local_invalid"
  | "local_too_long"
  | "domain_empty"
  | "domain_invalid"
  | "domain_too_long"
  | "label_too_long"
  | "single_label"
  | "numeric_tld"
  /** The last label is neither letters (at least two) nor an `xn--` A-label. */
  | "tld_invalid"
  /** A code point IDNA2008 does not permit, or one UTS-46 would have to map (fullwidth, zero-width, symbols, emoji). */
  | "idn_disallowed"
  /** An IDN label that breaks an IDNA2008 label rule: undecodable or non-canonical A-label, Bidi, joiners, combining mark first, "--" at 3–4. */
  | "idn_invalid"
  /** A bracketed domain that is neither `[IPv4]` nor `[IPv6:…]`. */
  | "address_literal_invalid"
  | "address_too_long";

export type SyntaxResult =
  | {
      ok: true;
      canonical: string;
      local: string;
      domain: string;
      /** The domain is an address literal (`[192.0.2.1]`, `[ipv6:2001:db8::1]`): valid, but never probed. */
      addressLiteral: boolean;
    }
  | { ok: false; reason: SyntaxFailureReason };

export type DomainSyntaxResult =
  { ok: true; domain: string; addressLiteral: boolean } | { ok: false; reason: SyntaxFailureReason };

type Failure = { ok: false; reason: SyntaxFailureReason };
const fail = (reason: SyntaxFailureReason): Failure => ({ ok: false, reason });

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
const WHITESPACE = /\p{White_Space}/u;
const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
const ALL_DIGITS = /^[0-9]+$/;
const ALPHA_TLD = /^[a-z]{2,}$/;
const ACE_PREFIX = "xn--";
const NON_ASCII = /[^\p{ASCII}]/u;

const octets = (s: string): number => Buffer.byteLength(s, "utf8");

/** Parses and canonicalises one address. Canonical = trimmed, lowercased, domain in punycode. */
export function checkSyntax(input: string): SyntaxResult {
  const trimmed = input.trim();
  if (trimmed === "") return fail("empty");
  // The last "@" splits: a quoted local part may itself contain "@" ("a@b"@example.com).
  const at = trimmed.lastIndexOf("@");
  if (at < 0) return fail("missing_at");
  const rawLocal = trimmed.slice(0, at);
  const rawDomain = trimmed.slice(at + 1);
  // No text on one side: not address-shaped (DESIGN §5), named before anything else.
  if (rawLocal === "") return fail("local_empty");
  if (rawDomain === "") return fail("domain_empty");
  // Before any parsing: "john@example.com\r\nRCPT TO:<x@y>" must never reach an SMTP line.
  if (hasInnerWhitespace(rawLocal) || WHITESPACE.test(rawDomain)) return fail("whitespace");

  const local = parseLocalPart(rawLocal);
  if (!local.ok) return local;
  const domain = parseDomain(rawDomain);
  if (!domain.ok) return domain;

  // RFC 5321 §4.5.3.1.1 counts the local part as transmitted, quotes and backslashes included;
  // the canonical form is what we transmit, so both must fit. (NFC first: a decomposed "é"
  // typed on a Mac is the same text, not a longer one.)
  if (octets(rawLocal.normalize("NFC")) > MAX_LOCAL_OCTETS || octets(local.local) > MAX_LOCAL_OCTETS)
    return fail("local_too_long");
  const canonical = `${local.local}@${domain.domain}`;
  // As written (U-labels in UTF-8, as an SMTPUTF8 client sends them) and as we send it (A-labels).
  if (octets(trimmed.normalize("NFC")) > MAX_ADDRESS_OCTETS || octets(canonical) > MAX_ADDRESS_OCTETS)
    return fail("address_too_long");
  return {
    ok: true,
    canonical,
    local: local.local,
    domain: domain.domain,
    addressLiteral: domain.addressLiteral,
  };
}

/**
 * Validates a domain (the ends of the field trimmed) and returns its canonical form: lowercase,
 * IDN → A-labels, or the canonical address literal (`addressLiteral: true`).
 */
export function checkDomainSyntax(input: string): DomainSyntaxResult {
  return parseDomain(input.trim());
}

/**
 * RFC 5321 qtextSMTP (%d32) and quoted-pairSMTP (%d92 %d32-126) allow a plain space inside a
 * quoted local part (`"john doe"@example.com` is a legal mailbox), so that one is kept; every
 * other whitespace (TAB, CR, LF, NBSP, U+2028 …) is outside the grammar everywhere.
 */
function hasInnerWhitespace(rawLocal: string): boolean {
  const quoted = rawLocal.length >= 2 && rawLocal.startsWith('"') && rawLocal.endsWith('"');
  return WHITESPACE.test(quoted ? rawLocal.slice(1, -1).replaceAll(" ", "") : rawLocal);
}

function parseDomain(raw: string): DomainSyntaxResult {
  if (raw === "") return fail("domain_empty");
  if (WHITESPACE.test(raw)) return fail("whitespace");
  if (raw.startsWith("[") || raw.endsWith("]")) return parseAddressLiteral(raw);

  // Case is not significant in domains: lowercasing and NFC (RFC 5891 §5.2) are
  // canonicalisation. Anything else UTS-46 would map is refused below.
  const lower = Array.from(raw.normalize("NFC"), foldCase).join("").normalize("NFC");
  const labels = lower.split(".");
  for (const label of labels) {
    if (label === "") return fail("domain_invalid");
    if (NON_ASCII.test(label)) {
      // RFC 5891 §4.2.3.1: U-labels follow the LDH hyphen rules too.
      if (label.startsWith("-") || label.endsWith("-")) return fail("domain_invalid");
    } else if (!LDH_LABEL.test(label)) {
      return fail("domain_invalid");
    }
  }

  const idn = labels.some((l) => NON_ASCII.test(l) || l.startsWith(ACE_PREFIX));
  const converted = idn ? toAceDomain(lower, labels) : { ok: true as const, ascii: lower };
  if (!converted.ok) return converted;
  const ascii = converted.ascii;

  if (ascii.length > MAX_DOMAIN_CHARS) return fail("domain_too_long");
  const asciiLabels = ascii.split(".");
  if (asciiLabels.some((l) => l.length > MAX_LABEL_CHARS)) return fail("label_too_long");
  if (asciiLabels.length < 2) return fail("single_label");
  // TLDs are letters or an IDN A-label (RFC 1123 §2.1, RFC 3696 §2). An all-numeric one makes
  // "1.2.3.4" look like a domain; "c", "c0m" and "co-m" exist nowhere either.
  const tld = asciiLabels[asciiLabels.length - 1] ?? "";
  if (ALL_DIGITS.test(tld)) return fail("numeric_tld");
  if (!tld.startsWith(ACE_PREFIX) && !ALPHA_TLD.test(tld)) return fail("tld_invalid");
  return { ok: true, domain: ascii, addressLiteral: false };
}

// ---------------------------------------------------------------------------------------------
// IDNA2008. tr46 (jsdom's UTS-46, the one whatwg-url uses) supplies punycode, the Bidi rule
// (RFC 5893) and the joiner rule (RFC 5892 A.1/A.2) from Unicode data; Node's own domainToASCII
// skips parts of the Bidi rule (it accepts "aא.com" and "1א.com"). UTS-46 is laxer than IDNA2008
// in two ways, both closed here: it *maps* (fullwidth → ASCII, soft hyphen and zero-width
// characters dropped, "™" → "tm"), which we refuse instead of silently rewriting the address;
// and it keeps IDNA2003's symbols valid ("©", emoji: "NV8"), which RFC 5892 disallows.

interface Tr46Options {
  checkHyphens?: boolean;
  checkBidi?: boolean;
  checkJoiners?: boolean;
  useSTD3ASCIIRules?: boolean;
  transitionalProcessing?: boolean;
  verifyDNSLength?: boolean;
}
interface Tr46 {
  toASCII(domain: string, options?: Tr46Options): string | null;
  toUnicode(domain: string, options?: Tr46Options): { domain: string; error: boolean };
}
// tr46 is CommonJS without bundled types; this is the slice of its API we use.
const tr46 = createRequire(import.meta.url)("tr46") as Tr46;

// Nontransitional (IDNA2008: "ß" and "ς" are themselves), STD3 (LDH for the ASCII part), Bidi and
// joiner rules on. Hyphens and lengths are checked here (ASCII "ab--cd" labels stay legal).
const TR46_OPTIONS: Tr46Options = {
  checkHyphens: false,
  checkBidi: true,
  checkJoiners: true,
  useSTD3ASCIIRules: true,
  transitionalProcessing: false,
  verifyDNSLength: false,
};

/**
 * One code point lowercased the way UTS-46 maps it: "Ü" → "ü", "Σ" → "σ" (per code point, not
 * JavaScript's context-dependent final "ς"). Kept as is when UTS-46 maps it to something other
 * than its lowercase (fullwidth "Ａ" → "a": refused later as a mapping) or when the lowercase is
 * the unstable form (Cherokee: case folding goes small → capital, so "Ꭰ" is the valid one).
 */
function foldCase(c: string): string {
  if (c < "\x80") return c.toLowerCase();
  const lower = c.toLowerCase();
  if (lower === c) return c;
  const mapped = tr46.toUnicode(c, { useSTD3ASCIIRules: true }).domain;
  return mapped === lower ? lower : c;
}

type AceResult = { ok: true; ascii: string } | Failure;

function toAceDomain(lower: string, labels: readonly string[]): AceResult {
  // Code points first, so a symbol is named as such rather than as a generic label failure.
  for (const label of labels) {
    if (NON_ASCII.test(label) && !idnaPermits(label)) return fail("idn_disallowed");
  }
  const unicode = tr46.toUnicode(lower, TR46_OPTIONS);
  // Undecodable punycode, an A-label of plain ASCII, Bidi, joiners, a leading combining mark.
  if (unicode.error) return fail("idn_invalid");
  const uLabels = unicode.domain.split(".");
  // A mapping added or removed a dot ("。" → ".", "⒈" → "1.").
  if (uLabels.length !== labels.length) return fail("idn_disallowed");
  for (const [i, label] of labels.entries()) {
    const uLabel = uLabels[i] ?? "";
    if (label.startsWith(ACE_PREFIX)) {
      // RFC 5891 §5.4: an A-label must decode to a valid U-label and encode back to itself.
      if (!idnaPermits(uLabel)) return fail("idn_disallowed");
      if (hasReservedHyphens(uLabel)) return fail("idn_invalid");
      if (tr46.toASCII(uLabel, TR46_OPTIONS) !== label) return fail("idn_invalid");
    } else if (NON_ASCII.test(label)) {
      // UTS-46 had to map something in this label (fullwidth letters, ignorables, compatibility forms).
      if (uLabel !== label) return fail("idn_disallowed");
      if (hasReservedHyphens(label)) return fail("idn_invalid");
    }
  }
  const ascii = tr46.toASCII(lower, TR46_OPTIONS);
  return ascii === null ? fail("idn_invalid") : { ok: true, ascii };
}

/** RFC 5891 §4.2.3.1: "--" in the third and fourth positions is reserved (for "xn--"). */
const hasReservedHyphens = (uLabel: string): boolean => {
  const cps = Array.from(uLabel);
  return cps[2] === "-" && cps[3] === "-";
};

// RFC 5892 §2 derives each code point's IDNA2008 property from Unicode properties; Node's regex
// property escapes carry that data. What UTS-46 maps (the "Unstable" category §2.5: uppercase,
// compatibility forms) is refused through tr46's mapping above, so it is not repeated here.
type CodePointRanges = readonly (readonly [number, number])[];
const inRanges = (cp: number, ranges: CodePointRanges): boolean =>
  ranges.some(([lo, hi]) => cp >= lo && cp <= hi);
// §2.6 Exceptions, as listed in the RFC (they cannot be derived):
const EXCEPTION_PVALID = new Set([0x00df, 0x03c2, 0x06fd, 0x06fe, 0x0f0b, 0x3007]);
const EXCEPTION_DISALLOWED: CodePointRanges = [
  [0x0640, 0x0640],
  [0x07fa, 0x07fa],
  [0x302e, 0x302f],
  [0x3031, 0x3035],
  [0x303b, 0x303b],
];
// §2.7 IgnorableBlocks (Combining Diacritical Marks for Symbols, Musical Symbols, Ancient Greek
// Musical Notation) and §2.9 OldHangulJamo (Hangul_Syllable_Type L, V, T: the Hangul Jamo
// blocks); JavaScript regexes have no Block or Hangul_Syllable_Type property.
const IGNORABLE_BLOCKS: CodePointRanges = [
  [0x20d0, 0x20ff],
  [0x1d100, 0x1d24f],
  [0x1100, 0x11ff],
  [0xa960, 0xa97f],
  [0xd7b0, 0xd7ff],
];
// §2.8 IgnorableProperties, plus §2.3 Unassigned (RFC 5891 §5.5: never looked up).
const IGNORABLE_PROPERTY =
  /^[\p{Default_Ignorable_Code_Point}\p{White_Space}\p{Noncharacter_Code_Point}\p{Cn}]$/u;
// §2.1 LetterDigits: PVALID. Everything else (symbols, punctuation, spaces, format) is DISALLOWED.
const LETTER_DIGIT = /^[\p{Ll}\p{Lu}\p{Lo}\p{Lm}\p{Mn}\p{Mc}\p{Nd}]$/u;
const GREEK = /^\p{Script=Greek}$/u;
const HEBREW = /^\p{Script=Hebrew}$/u;
const KANA_HAN = /^[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]$/u;
const ARABIC_INDIC_DIGIT = /^[\u0660-\u0669]$/u;
const EXTENDED_ARABIC_INDIC_DIGIT = /^[\u06F0-\u06F9]$/u;
const ZWNJ = "\u200C";
const ZWJ = "\u200D";

/** True when every code point of a (lowercase, NFC) U-label is PVALID or its context rule holds. */
function idnaPermits(uLabel: string): boolean {
  const cps = Array.from(uLabel);
  return cps.every((c, i) => permittedAt(c, cps, i));
}

function permittedAt(c: string, cps: readonly string[], i: number): boolean {
  const cp = c.codePointAt(0) ?? 0;
  if (cp < 0x80) return /^[a-z0-9-]$/.test(c);
  if (EXCEPTION_PVALID.has(cp)) return true;
  // CONTEXTO rules, RFC 5892 Appendix A.3–A.9.
  if (cp === 0x00b7) return cps[i - 1] === "l" && cps[i + 1] === "l"; // Catalan "l·l"
  if (cp === 0x0375) return GREEK.test(cps[i + 1] ?? ""); // keraia
  if (cp === 0x05f3 || cp === 0x05f4) return HEBREW.test(cps[i - 1] ?? ""); // geresh, gershayim
  if (cp === 0x30fb) return cps.some((x) => KANA_HAN.test(x)); // katakana middle dot
  if (ARABIC_INDIC_DIGIT.test(c)) return !cps.some((x) => EXTENDED_ARABIC_INDIC_DIGIT.test(x));
  if (EXTENDED_ARABIC_INDIC_DIGIT.test(c)) return !cps.some((x) => ARABIC_INDIC_DIGIT.test(x));
  if (inRanges(cp, EXCEPTION_DISALLOWED)) return false;
  // CONTEXTJ (RFC 5892 A.1, A.2): tr46's checkJoiners decides.
  if (c === ZWNJ || c === ZWJ) return true;
  if (IGNORABLE_PROPERTY.test(c) || inRanges(cp, IGNORABLE_BLOCKS)) return false;
  return LETTER_DIGIT.test(c);
}

// ---------------------------------------------------------------------------------------------

const IPV4_LITERAL = /^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$/;
const TAGGED_LITERAL = /^([A-Za-z0-9-]*[A-Za-z0-9]):(.+)$/s;
const IPV6_CHARS = /^[0-9A-Fa-f:.]+$/;

/**
 * RFC 5321 §4.1.3: `[IPv4]` or `[IPv6:…]` (the tag is required for v6; case-insensitive like all
 * ABNF strings). Valid syntax, never probed (the engine answers `unknown`). Canonical: lowercase,
 * IPv4 octets without leading zeros (the grammar allows "1*3DIGIT"). A General-address-literal
 * with any other Standardized-tag is refused: the tag must be registered with IANA and "IPv6" is
 * the only one ever registered, so no server could route such an address.
 */
function parseAddressLiteral(raw: string): DomainSyntaxResult {
  if (raw.length < 3 || !raw.startsWith("[") || !raw.endsWith("]")) return fail("address_literal_invalid");
  const body = raw.slice(1, -1);
  const v4 = IPV4_LITERAL.exec(body);
  if (v4 !== null) {
    const dotted = v4.slice(1, 5).map(Number).join(".");
    return isIPv4(dotted)
      ? { ok: true, domain: `[${dotted}]`, addressLiteral: true }
      : fail("address_literal_invalid");
  }
  const tagged = TAGGED_LITERAL.exec(body);
  const tag = tagged?.[1]?.toLowerCase();
  const address = tagged?.[2] ?? "";
  // The character check keeps out what isIPv6 tolerates but the grammar doesn't (zone "%eth0").
  if (tag === "ipv6" && IPV6_CHARS.test(address) && isIPv6(address))
    return { ok: true, domain: `[ipv6:${address.toLowerCase()}]`, addressLiteral: true };
  return fail("address_literal_invalid");
}

type LocalResult = { ok: true; local: string } | Failure;

function parseLocalPart(raw: string): LocalResult {
  if (raw === "") return fail("local_empty");
  // NFC per RFC 6532 §3.1, so "é" typed two ways is one mailbox.
  const text = raw.normalize("NFC");
  if (text.startsWith('"')) return parseQuotedLocal(text);
  return isDotAtom(text) ? { ok: true, local: text.toLowerCase() } : fail("local_invalid");
}

function isDotAtom(text: string): boolean {
  return text.split(".").every((atom) => atom !== "" && ATEXT.test(atom));
}

function parseQuotedLocal(text: string): LocalResult {
  if (text.length < 2 || !text.endsWith('"')) return fail("local_invalid");
  const chars = Array.from(text.slice(1, -1));
  let content = "";
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] ?? "";
    if (c === "\\") {
      // quoted-pairSMTP = %d92 %d32-126
      const next = chars[++i];
      if (next === undefined || !/^[\x20-\x7E]$/.test(next)) return fail("local_invalid");
      content += next;
    } else if (QTEXT.test(c)) {
      content += c;
    } else {
      return fail("local_invalid");
    }
  }
  // `""@example.com` matches the grammar, but an empty mailbox name is never a real mailbox.
  if (content === "") return fail("local_empty");
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
