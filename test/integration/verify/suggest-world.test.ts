// did_you_mean through the engine against the mail-world simulator (real DNS and SMTP on
// loopback): look-alikes of popular domains that receive mail are never "corrected", whatever
// their mailboxes say; dead look-alikes are, and only their domain part changes.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Engine } from "../../../src/verify/engine.ts";
import { suggestDomain } from "../../../src/verify/suggest.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { engineFor } from "./helpers.ts";

let world: MailWorld;
let engine: Engine;

before(async () => {
  world = await startMailWorld({
    domains: [
      {
        name: "gmail.com",
        hosts: [{ name: "gmail-smtp-in.l.google.com", kind: "google" }],
        mailboxes: ["bob"],
      },
      // One or two edits from a popular domain, and each receives mail (MX, or A only).
      { name: "acme.com", hosts: [{ name: "mx1.acme.com" }], mailboxes: ["bob"] },
      { name: "gmai.com", hosts: [{ name: "mx.gmai.com" }], mailboxes: ["bob"] },
      { name: "yahooo.com", hosts: [{ name: "mx.yahooo.com" }], catchAll: true },
      { name: "outlok.com", hosts: [{ name: "mx.outlok.com" }], mailboxes: [] },
      { name: "gmail.co", dns: "a_only", hosts: [{ name: "gmail.co" }], mailboxes: ["bob"] },
      // Dead look-alikes (gamil.com is not in the zone: NXDOMAIN).
      { name: "yaho.com", dns: "null_mx" },
      { name: "hotmal.com", dns: "no_records" },
      { name: "outlook.co", hosts: [{ name: "mx.outlook.co", hasAddress: false }] },
      // Look-alike whose DNS fails: undetermined, so no suggestion.
      { name: "yahoo.co", dns: "servfail" },
    ],
  });
  engine = engineFor(world);
});
after(async () => {
  await engine.close();
  await world.close();
});

void test("a domain that receives mail never gets a suggestion, valid, invalid or catch-all", async () => {
  // Each of them is a candidate: only the gate keeps the suggestion away.
  for (const d of ["gmai.com", "yahooo.com", "outlok.com", "gmail.co", "yahoo.co"])
    assert.notEqual(suggestDomain(d), null, d);
  for (const address of [
    "bob@gmail.com",
    "bob@acme.com",
    "bob@gmai.com",
    "nobody@gmai.com",
    "bob@yahooo.com",
    "bob@outlok.com",
    "bob@gmail.co",
  ]) {
    const r = await engine.verifyOne(address);
    assert.notEqual(r.status, "unknown", `${address}: ${r.evidence}`);
    assert.equal(r.didYouMean, null, address);
  }
});

void test("a dead look-alike of a popular domain gets the address on that domain", async () => {
  const cases: Array<[string, string, string]> = [
    ["Bob@Gamil.com", "invalid", "bob@gmail.com"],
    ["ann.lee@yaho.com", "invalid", "ann.lee@yahoo.com"],
    ["bob@hotmal.com", "invalid", "bob@hotmail.com"],
    ["bob@outlook.co", "invalid", "bob@outlook.com"],
    ["bob@hotmial.com", "disposable_domain", "bob@hotmail.com"],
  ];
  for (const [address, status, suggestion] of cases) {
    const r = await engine.verifyOne(address);
    assert.deepEqual([r.status, r.didYouMean, r.isFreeProvider], [status, suggestion, false], address);
  }
});

void test("undetermined DNS and syntax failures get no suggestion", async () => {
  const servfail = await engine.verifyOne("bob@yahoo.co");
  assert.equal(servfail.status, "unknown");
  assert.equal(servfail.didYouMean, null);
  const syntax = await engine.verifyOne("bob..x@gmial.com");
  assert.equal(syntax.status, "invalid_syntax");
  assert.equal(syntax.didYouMean, null);
});

void test("is_free_provider: true for gmail.com, in a group too", async () => {
  const group = await engine.verifyGroup("gmail.com", ["bob@gmail.com", "nobody@gmail.com"]);
  assert.deepEqual(
    group.map((r) => [r.status, r.isFreeProvider, r.didYouMean]),
    [
      ["valid", true, null],
      ["invalid", true, null],
    ],
  );
  assert.equal((await engine.verifyOne("bob@acme.com")).isFreeProvider, false);
});
