import assert from "node:assert/strict";
import { test } from "node:test";
import { providerOf, restReasonOf } from "../../../src/verify/smtp/egress.ts";

test("the provider a rest is about", () => {
  assert.equal(providerOf("gmail-smtp-in.l.google.com", "192.0.2.1"), "google");
  assert.equal(providerOf("alt1.aspmx.l.googlemail.com.", "192.0.2.1"), "google");
  assert.equal(providerOf("mx1.acme.example", "192.0.2.1"), "acme.example");
  assert.equal(providerOf("MX.Shop.co.uk", "192.0.2.1"), "shop.co.uk");
  assert.equal(providerOf(null, "192.0.2.1"), "192.0.2.1");
  // The Public Suffix List, not label lengths: ab.de is a registrable domain, com.au a suffix.
  assert.equal(providerOf("mx.ab.de", "192.0.2.1"), "ab.de");
  assert.equal(providerOf("mx1.mail.example.com.au", "192.0.2.1"), "example.com.au");
  assert.equal(providerOf("mx.tenant.test", "192.0.2.1"), "tenant.test");
});

test("replies that send an identity to rest, and replies about a mailbox that don't", () => {
  const reply = (code: number, enhanced: string | null, text: string) => ({ code, enhanced, text });
  const cases: [ReturnType<typeof reply>, string | null][] = [
    [
      reply(
        554,
        "5.7.1",
        "5.7.1 Service unavailable; Client host [192.0.2.10] blocked using zen.spamhaus.org",
      ),
      "ip_blocklisted",
    ],
    [reply(421, "4.7.0", "4.7.0 mx.example Error: too many connections from 192.0.2.10"), "rate_limited"],
    [reply(450, "4.2.1", "4.2.1 The user you are trying to contact is receiving mail too quickly"), null],
    [reply(550, "5.1.1", "5.1.1 <bob@example.com>: Recipient address rejected: User unknown"), null],
    [reply(451, "4.7.1", "4.7.1 <bob@example.com>: Recipient address rejected: Greylisted"), null],
  ];
  for (const [r, expected] of cases) assert.equal(restReasonOf(r), expected, r.text);
  assert.equal(restReasonOf(undefined), null);
});
