import assert from "node:assert/strict";
import { test } from "node:test";
import { checkDomainSyntax, checkSyntax, extractDomainPart } from "../../../src/verify/syntax.ts";

const a = (n: number, c = "a"): string => c.repeat(n);
// 63 + 1 + 63 + 1 + 57 + 4 = 189 characters: with a 64-octet local part, 64 + 1 + 189 = 254.
const domain189 = `${a(63, "b")}.${a(63, "c")}.${a(57, "d")}.com`;

const valid: [input: string, canonical: string][] = [
  ["john@example.com", "john@example.com"],
  ["John.Doe@Example.COM", "john.doe@example.com"],
  ["  padded@example.com \t", "padded@example.com"],
  ["first.middle.last@example.co.uk", "first.middle.last@example.co.uk"],
  ["user+tag@example.com", "user+tag@example.com"],
  ["o'reilly@example.ie", "o'reilly@example.ie"],
  ["a!#$%&'*+-/=?^_`{|}~@example.org", "a!#$%&'*+-/=?^_`{|}~@example.org"],
  ["x@a-b.example", "x@a-b.example"],
  ["x@123.example.com", "x@123.example.com"],
  ["x@example.xn--p1ai", "x@example.xn--p1ai"],
  ['"john.doe"@example.com', "john.doe@example.com"],
  ['"John Doe"@example.com', '"john doe"@example.com'],
  ['"a@b"@example.com', '"a@b"@example.com'],
  ['"a\\"b"@example.com', '"a\\"b"@example.com'],
  ['"very.(),:;<>[]\\".unusual"@example.com', '"very.(),:;<>[]\\".unusual"@example.com'],
  ["jöhn@example.com", "jöhn@example.com"],
  ["用户@例子.广告", "用户@xn--fsqu00a.xn--4rr70v"],
  ["user@München.de", "user@xn--mnchen-3ya.de"],
  ["ÄRGER@bücher.example", "ärger@xn--bcher-kva.example"],
  [`${a(64)}@example.com`, `${a(64)}@example.com`],
  [`${a(32, "é")}@example.com`, `${a(32, "é")}@example.com`],
  [`x@${a(63)}.com`, `x@${a(63)}.com`],
  [`${a(64)}@${domain189}`, `${a(64)}@${domain189}`],
];

const invalid: [input: string, reason: string][] = [
  ["", "empty"],
  ["   ", "empty"],
  ["plainaddress", "missing_at"],
  ["@example.com", "local_empty"],
  ["john@", "domain_empty"],
  ["john..doe@example.com", "local_invalid"],
  [".john@example.com", "local_invalid"],
  ["john.@example.com", "local_invalid"],
  ["john doe@example.com", "whitespace"],
  ["john@doe@example.com", "local_invalid"],
  ["john(comment)@example.com", "local_invalid"],
  ['"unterminated@example.com', "local_invalid"],
  ['""@example.com', "local_empty"],
  ['"bad\x01char"@example.com', "local_invalid"],
  ["<john@example.com>", "local_invalid"],
  [`${a(65)}@example.com`, "local_too_long"],
  [`${a(33, "é")}@example.com`, "local_too_long"],
  [`${a(64)}@${domain189.replace(".com", ".coma")}`, "address_too_long"],
  ["john@localhost", "single_label"],
  ["john@example", "single_label"],
  ["john@-example.com", "domain_invalid"],
  ["john@example-.com", "domain_invalid"],
  ["john@exa_mple.com", "domain_invalid"],
  ["john@example..com", "domain_invalid"],
  ["john@.example.com", "domain_invalid"],
  ["john@example.com.", "domain_invalid"],
  ["john@exa mple.com", "whitespace"],
  [`john@${a(64)}.com`, "label_too_long"],
  ["john@1.2.3.4", "numeric_tld"],
  ["john@example.123", "numeric_tld"],
];

void test("syntax table has at least 40 cases", () => {
  assert.ok(valid.length + invalid.length >= 40);
});

for (const [input, canonical] of valid) {
  void test(`valid: ${JSON.stringify(input).slice(0, 60)}`, () => {
    const r = checkSyntax(input);
    assert.equal(r.ok, true, JSON.stringify(r));
    if (r.ok) {
      assert.equal(r.canonical, canonical);
      assert.equal(`${r.local}@${r.domain}`, canonical);
    }
  });
}

for (const [input, reason] of invalid) {
  void test(`invalid (${reason}): ${JSON.stringify(input).slice(0, 60)}`, () => {
    assert.deepEqual(checkSyntax(input), { ok: false, reason });
  });
}

void test("limits are counted in UTF-8 octets, not characters", () => {
  // 32 × "é" = 64 octets (ok), 33 × "é" = 66 octets though only 33 characters.
  assert.equal(checkSyntax(`${a(32, "é")}@example.com`).ok, true);
  assert.equal(checkSyntax(`${a(33, "é")}@example.com`).ok, false);
});

void test("domain helpers: canonical domain and best-effort domain of a failed address", () => {
  assert.deepEqual(checkDomainSyntax("Bücher.Example"), {
    ok: true,
    domain: "xn--bcher-kva.example",
    addressLiteral: false,
  });
  assert.equal(extractDomainPart("john@@Example.com"), "example.com");
  assert.equal(extractDomainPart("nodomain"), "");
});

// ---- Rule: IDNA2008 domains (RFC 5890–5893). Case and NFC are canonicalisation; any other
// mapping UTS-46 would apply, and anything IDNA2008 disallows, is invalid_syntax.

void test("IDNA2008: letters, marks and digits of any script are valid; case is folded", () => {
  const cases: [input: string, canonical: string][] = [
    ["x@MÜNCHEN.DE", "x@xn--mnchen-3ya.de"],
    ["x@münchen.de", "x@xn--mnchen-3ya.de"],
    ["x@mu\u0308nchen.de", "x@xn--mnchen-3ya.de"], // NFD input is the same name
    ["x@ΒΌΛΟΣ.gr", "x@xn--nxasmq6b.gr"], // uppercase Σ folds to σ, as UTS-46 maps it
    ["x@βόλος.gr", "x@xn--nxasmm1c.gr"], // final ς is PVALID in IDNA2008 (nontransitional)
    ["x@faß.de", "x@xn--fa-hia.de"], // ß is an RFC 5892 exception: PVALID, not "ss"
    ["x@l·l.cat", "x@xn--ll-0ea.cat"], // CONTEXTO middle dot between two l
    ["x@アイ・ウ.jp", "x@xn--cckeg35a.jp"], // CONTEXTO katakana middle dot in a kana label
    ["x@ک\u200Cی.ir", "x@xn--ckb4e528g.ir"], // ZWNJ in its joining context (RFC 5892 A.1)
    ["x@אב.co.il", "x@xn--4dbc.co.il"], // right-to-left label passing the Bidi rule
    ["x@例子.广告", "x@xn--fsqu00a.xn--4rr70v"],
    ["x@Ꭰ.com", "x@xn--58d.com"], // Cherokee capital is the stable (case-folded) form
    ["x@ab--cd.com", "x@ab--cd.com"], // ASCII labels with "--" at 3–4 are left alone
  ];
  for (const [input, canonical] of cases) {
    const r = checkSyntax(input);
    assert.equal(r.ok && r.canonical, canonical, `${input}: ${JSON.stringify(r)}`);
  }
});

void test("IDNA2008: what UTS-46 would have to map, and symbols, are idn_disallowed", () => {
  const cases = [
    "x@ｅｘａｍｐｌｅ.com", // fullwidth letters
    "x@ＥＸＡＭＰＬＥ.com", // fullwidth capitals: folding them is a mapping, not just case
    "x@exa\u200Bmple.com", // zero-width space
    "x@exa\u00ADmple.com", // soft hyphen
    "x@exa\u2060mple.com", // word joiner
    "x@a\u3002b.com", // ideographic full stop, mapped to "."
    "x@©.com",
    "x@™.com", // maps to "tm"
    "x@😀.com",
    "x@♥.com",
    "x@ä$b.com", // ASCII symbol in a U-label
    "x@Ⅻ.com", // roman numeral: compatibility form
    "x@ꭰ.com", // Cherokee small letter: unstable under case folding
    "x@ـ.com", // Arabic tatweel: an RFC 5892 exception, DISALLOWED
    "x@a·b.com", // middle dot outside l·l
    "x@a・b.com", // katakana middle dot without kana/han
    "x@١۲.com", // Arabic-Indic mixed with extended Arabic-Indic digits
    "x@a\u20D0.com", // Combining Diacritical Marks for Symbols block
    "x@\u1100.com", // old Hangul jamo on its own
    "x@xn--ls8h.com", // A-label of an emoji
    "x@xn--gba.com", // A-label of "©"
  ];
  for (const input of cases)
    assert.deepEqual(checkSyntax(input), { ok: false, reason: "idn_disallowed" }, input);
});

void test("IDNA2008: broken A-labels and label rules are idn_invalid", () => {
  const cases = [
    "x@xn--zz.com", // does not decode
    "x@xn--abc.com", // decodes to nothing non-ASCII
    "x@xn--a-0hc.com", // "aא": breaks the Bidi rule (RFC 5893)
    "x@aא.com",
    "x@1א.com", // RTL label starting with a digit
    "x@a\u200Cb.com", // ZWNJ outside its context
    "x@\u0301a.com", // combining mark first
    "x@ab--ü.com", // "--" at 3–4 of a U-label
  ];
  for (const input of cases)
    assert.deepEqual(checkSyntax(input), { ok: false, reason: "idn_invalid" }, input);
  // A-labels are canonicalised like ASCII (case), and must encode back to themselves.
  assert.equal(checkDomainSyntax("XN--Mnchen-3ya.de").ok, true);
  assert.deepEqual(checkSyntax("x@xn--mnchen-3ya-.de"), { ok: false, reason: "domain_invalid" });
  assert.deepEqual(checkSyntax("x@xn--.com"), { ok: false, reason: "domain_invalid" });
  assert.deepEqual(checkSyntax("x@-ü.com"), { ok: false, reason: "domain_invalid" });
});

// ---- Rule: lengths count octets as written (RFC 5321 §4.5.3.1.1 counts the local part as
// transmitted): quotes and backslashes count, and so does the canonical form we send.

void test("length: a quoted local part counts its quotes and backslashes", () => {
  // 62 letters in quotes: 64 octets as written (ok); 63 letters: 65 octets, though the
  // canonical (dot-atom) form is only 63.
  assert.equal(checkSyntax(`"${a(62)}"@example.com`).ok, true);
  assert.deepEqual(checkSyntax(`"${a(63)}"@example.com`), { ok: false, reason: "local_too_long" });
  // 31 quoted-pairs: 2 + 62 = 64 octets; 32: 66 octets, canonical 32 letters.
  assert.equal(checkSyntax(`"${"\\a".repeat(31)}"@example.com`).ok, true);
  assert.deepEqual(checkSyntax(`"${"\\a".repeat(32)}"@example.com`), {
    ok: false,
    reason: "local_too_long",
  });
  // The 254 total too: a 64-octet quoted local part fits exactly with a 189-octet domain.
  assert.equal(checkSyntax(`"${a(62)}"@${domain189}`).ok, true);
  assert.deepEqual(checkSyntax(`"${a(62)}"@${domain189}x`), { ok: false, reason: "address_too_long" });
});

void test("length: the 254-octet total counts the domain as written, U-labels in UTF-8", () => {
  // 3 labels of 21 "例" (63 octets each in UTF-8, 27 characters as A-labels) + ".com".
  const unicodeDomain = `${a(21, "例")}.${a(21, "例")}.${a(21, "例")}.com`;
  const input = `${a(64)}@${unicodeDomain}`;
  const ace = checkDomainSyntax(unicodeDomain);
  assert.ok(ace.ok && 64 + 1 + ace.domain.length <= 254, "precondition: short enough as A-labels");
  assert.ok(Buffer.byteLength(input) > 254, "precondition: too long as written");
  assert.deepEqual(checkSyntax(input), { ok: false, reason: "address_too_long" });
  assert.equal(checkSyntax(`${a(32)}@${unicodeDomain}`).ok, true);
});

// ---- Rule: whitespace or line breaks inside an address are invalid; the ends are trimmed.

void test("whitespace inside an address is invalid, including SMTP command injection", () => {
  const cases = [
    "john@ example.com",
    "john @example.com",
    "jo hn@example.com",
    "john@exa mple.com",
    "john@example.com\r\nRCPT TO:<x@y>",
    "john@example.com\nRCPT TO:<x@example.net>",
    "john\r\n@example.com",
    "jo\thn@example.com",
    "john@exa\tmple.com",
    "jo\u00A0hn@example.com", // NBSP
    "john@exa\u00A0mple.com",
    "john@exa\u2028mple.com", // LINE SEPARATOR
    "john@exa\u3000mple.com", // IDEOGRAPHIC SPACE
    "jo\u0085hn@example.com", // NEL
    '"john\tdoe"@example.com', // a quoted string allows a space, never a TAB …
    '"john\r\ndoe"@example.com', // … or a line break
    '"john doe"@ example.com',
    "john@[192.0.2.1 ]",
  ];
  for (const input of cases)
    assert.deepEqual(checkSyntax(input), { ok: false, reason: "whitespace" }, JSON.stringify(input));
  // The ends of the field are trimmed (CR/LF, TAB, NBSP, U+2028 included).
  assert.equal(checkSyntax("\r\n\t john@example.com \u00A0\u2028").ok, true);
  // RFC 5321 qtextSMTP has %d32 and quoted-pairSMTP %d92 %d32: a plain space in quotes is legal.
  const quoted = checkSyntax('"john doe"@example.com');
  assert.equal(quoted.ok && quoted.canonical, '"john doe"@example.com');
  const pair = checkSyntax('"john\\ doe"@example.com');
  assert.equal(pair.ok && pair.canonical, '"john doe"@example.com');
  // checkDomainSyntax trims the ends of its field, nothing inside.
  assert.equal(checkDomainSyntax(" example.com ").ok, true);
  assert.deepEqual(checkDomainSyntax("exa mple.com"), { ok: false, reason: "whitespace" });
});

void test("no text on one side stays 'not address-shaped' whatever else is wrong", () => {
  assert.deepEqual(checkSyntax("john doe@"), { ok: false, reason: "domain_empty" });
  assert.deepEqual(checkSyntax("@exa mple.com"), { ok: false, reason: "local_empty" });
});

// ---- Rule: a TLD is letters (two or more) or an xn-- A-label.

void test("TLD: letters or an A-label; digits, hyphens and single letters are refused", () => {
  for (const ok of [
    "x@example.io",
    "x@example.museum",
    "x@example.xn--p1ai",
    "x@example.рф",
    "x@example.COM",
  ])
    assert.equal(checkSyntax(ok).ok, true, ok);
  const cases: [input: string, reason: string][] = [
    ["x@example.c", "tld_invalid"],
    ["x@example.c0m", "tld_invalid"],
    ["x@example.co-m", "tld_invalid"],
    ["x@example.c1", "tld_invalid"],
    ["x@example.123", "numeric_tld"],
    ["x@1.2.3.4", "numeric_tld"],
    ["x@example.xn--zz", "idn_invalid"],
  ];
  for (const [input, reason] of cases) assert.deepEqual(checkSyntax(input), { ok: false, reason }, input);
});

// ---- Rule: address literals (RFC 5321 §4.1.3) are valid syntax, flagged, never probed.

void test("address literals are valid syntax with addressLiteral: true", () => {
  const cases: [input: string, domain: string][] = [
    ["john@[192.0.2.1]", "[192.0.2.1]"],
    ["John@[192.000.002.001]", "[192.0.2.1]"], // Snum = 1*3DIGIT; leading zeros dropped
    ["john@[IPv6:2001:db8::1]", "[ipv6:2001:db8::1]"],
    ["john@[ipv6:2001:DB8::1]", "[ipv6:2001:db8::1]"],
    ["john@[IPv6:::ffff:192.0.2.1]", "[ipv6:::ffff:192.0.2.1]"],
  ];
  for (const [input, domain] of cases) {
    const r = checkSyntax(input);
    assert.equal(r.ok, true, `${input}: ${JSON.stringify(r)}`);
    if (r.ok) {
      assert.equal(r.addressLiteral, true);
      assert.equal(r.domain, domain);
      assert.equal(r.canonical, `${r.local}@${domain}`);
    }
  }
  assert.deepEqual(checkDomainSyntax("[IPv6:2001:DB8::1]"), {
    ok: true,
    domain: "[ipv6:2001:db8::1]",
    addressLiteral: true,
  });
  const plain = checkSyntax("john@example.com");
  assert.equal(plain.ok && plain.addressLiteral, false);
});

void test("malformed or untagged address literals are address_literal_invalid", () => {
  const cases = [
    "john@[256.0.0.1]",
    "john@[192.0.2]",
    "john@[2001:db8::1]", // v6 needs the "IPv6:" tag (RFC 5321 §4.1.3)
    "john@[IPv6:2001:db8::g]",
    "john@[IPv6:fe80::1%eth0]", // no zone identifiers in the grammar
    "john@[IPv6:192.0.2.1]",
    "john@[IPv4:192.0.2.1]", // no such Standardized-tag
    "john@[x400:c=gb]", // General-address-literal: no tag other than IPv6 is registered
    "john@[]",
    "john@[192.0.2.1",
    "john@192.0.2.1]",
  ];
  for (const input of cases)
    assert.deepEqual(checkSyntax(input), { ok: false, reason: "address_literal_invalid" }, input);
});
