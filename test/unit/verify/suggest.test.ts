// did_you_mean's candidate (library + our limits) and gate (only a domain that cannot take mail),
// and is_free_provider's list.
import assert from "node:assert/strict";
import { test } from "node:test";
import { isFreeProviderDomain } from "../../../src/verify/providers.ts";
import {
  editDistance,
  maxEditsFor,
  suggestAddress,
  suggestDomain,
  SUGGESTION_DOMAINS,
  type DeadDomainCause,
} from "../../../src/verify/suggest.ts";

const DEAD: readonly DeadDomainCause[] = [
  "nxdomain",
  "no_records",
  "null_mx",
  "no_host_address",
  "disposable",
];

void test("typos of popular mail domains get the popular domain", () => {
  const cases: Array<[string, string]> = [
    ["gmial.com", "gmail.com"],
    ["gamil.com", "gmail.com"],
    ["gmai.com", "gmail.com"],
    ["gmail.co", "gmail.com"],
    ["hotmial.com", "hotmail.com"],
    ["hotmai.com", "hotmail.com"],
    ["yaho.com", "yahoo.com"],
    ["yahooo.com", "yahoo.com"],
    ["outlok.com", "outlook.com"],
    ["outlook.co", "outlook.com"],
    ["Gmial.COM.", "gmail.com"],
  ];
  for (const [typed, popular] of cases) assert.equal(suggestDomain(typed), popular, typed);
});

void test("no candidate for the popular domains themselves, unrelated domains, or short look-alikes", () => {
  for (const d of [
    "gmail.com",
    "me.com",
    "yahoo.com",
    "outlook.com",
    // Two edits from me.com: a real company's domain, and the library's own answer is me.com.
    "acme.com",
    "example.com",
    "mailprobe.test",
    "zzzzz.com",
    // Disposable services that are not typos (two edits from qq.com / mail.ru).
    "99.com",
    "mail.tm",
    "",
  ])
    assert.equal(suggestDomain(d), null, d);
});

void test("the gate: a domain that cannot take mail gets the suggestion, a live or undetermined one never", () => {
  for (const dead of DEAD) {
    assert.equal(suggestAddress("bob.smith@gmial.com", "gmial.com", dead), "bob.smith@gmail.com", dead);
    assert.equal(suggestAddress("ann@yaho.com", "yaho.com", dead), "ann@yahoo.com", dead);
    // A real domain stays as it is even when its DNS is dead at the moment.
    assert.equal(suggestAddress("bob@acme.com", "acme.com", dead), null, dead);
    assert.equal(suggestAddress("bob@gmail.com", "gmail.com", dead), null, dead);
  }
  // null: the domain has working MX (or DNS could not tell): no suggestion, typo or not.
  for (const [address, domain] of [
    ["bob@gmial.com", "gmial.com"],
    ["bob@hotmial.com", "hotmial.com"],
    ["bob@outlok.com", "outlok.com"],
    ["bob@acme.com", "acme.com"],
    ["bob@me.com", "me.com"],
  ] as const)
    assert.equal(suggestAddress(address, domain, null), null, address);
});

void test("only the domain part changes: the local part is kept as typed (canonical), quotes included", () => {
  assert.equal(suggestAddress('"a@b"@hotmial.com', "hotmial.com", "nxdomain"), '"a@b"@hotmail.com');
  assert.equal(suggestAddress("o'neil+tag@outlok.com", "outlok.com", "null_mx"), "o'neil+tag@outlook.com");
  assert.equal(suggestAddress("@gmial.com", "gmial.com", "nxdomain"), null);
});

void test("every suggestion is a popular domain within the edit limit", () => {
  for (const typed of ["gmial.com", "hotmal.co", "yhoo.com", "outlook.cm", "icloud.co", "protonmail.co"]) {
    const s = suggestDomain(typed);
    if (s === null) continue;
    assert.ok(SUGGESTION_DOMAINS.includes(s), s);
    assert.ok(editDistance(typed, s) <= maxEditsFor(s), `${typed} → ${s}`);
  }
});

void test("editDistance counts a swap of neighbours as one edit", () => {
  assert.equal(editDistance("gmial.com", "gmail.com"), 1);
  assert.equal(editDistance("acme.com", "me.com"), 2);
  assert.equal(editDistance("", "abc"), 3);
  assert.equal(editDistance("same", "same"), 0);
  assert.equal(maxEditsFor("gmail.com"), 1);
  assert.equal(maxEditsFor("hotmail.com"), 2);
});

void test("is_free_provider: consumer mailbox domains from the list, exact names only", () => {
  for (const d of [
    "gmail.com",
    "outlook.com",
    "hotmail.com",
    "yahoo.com",
    "yahoo.co.jp",
    "gmx.de",
    "aol.com",
  ])
    assert.equal(isFreeProviderDomain(d), true, d);
  assert.equal(isFreeProviderDomain("GMAIL.com."), true);
  for (const d of [
    "acme.com",
    "example.com",
    "mailprobe.test",
    "mail.gmail.com.evil.test",
    "gmial.com",
    "10minutemail.com",
    "",
  ])
    assert.equal(isFreeProviderDomain(d), false, d);
});
