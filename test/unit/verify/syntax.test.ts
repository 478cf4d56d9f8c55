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
  ["john doe@example.com", "local_invalid"],
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
  ["john@exa mple.com", "domain_invalid"],
  [`john@${a(64)}.com`, "label_too_long"],
  ["john@1.2.3.4", "numeric_tld"],
  ["john@example.123", "numeric_tld"],
  ["john@[192.0.2.1]", "address_literal"],
  ["john@[IPv6:2001:db8::1]", "address_literal"],
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
  assert.deepEqual(checkDomainSyntax("Bücher.Example"), { ok: true, domain: "xn--bcher-kva.example" });
  assert.equal(extractDomainPart("john@@Example.com"), "example.com");
  assert.equal(extractDomainPart("nodomain"), "");
});
