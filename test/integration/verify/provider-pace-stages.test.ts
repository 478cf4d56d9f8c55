// Providers refuse our volume at different stages of the conversation: Gmail at RCPT (the
// simulator's quotas, provider-pace.test.ts), Outlook.com's 4.7.650 at MAIL FROM, Yahoo's [TSS04]
// in its banner. Each teaches the provider's pace (a provider_paces row on the real database) and
// marks the held-back addresses paced; a limit on concurrent connections at the banner does not.
// Scripted servers, because the simulator's quotas count RCPTs only.
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import type { Database } from "../../../src/db/client.ts";
import { createPgProviderPace } from "../../../src/politeness/provider-pace.ts";
import { systemClock } from "../../../src/lib/clock.ts";
import type { DnsPort } from "../../../src/verify/ports.ts";
import { createEngine } from "../../../src/verify/engine.ts";
import { startScripted } from "../../support/scripted-smtp.ts";
import { openTestDatabase } from "../../support/test-db.ts";

let db: Database;

before(async () => {
  db = await openTestDatabase();
});

after(async () => {
  await db?.close();
});

beforeEach(async () => {
  await db.query("delete from provider_pace_spends");
  await db.query("delete from provider_paces");
});

const dnsFor = (mx: string): DnsPort => ({
  mx: async () => ({ kind: "found", records: [{ exchange: mx, priority: 10 }] }),
  addresses: async () => ({ kind: "found", records: ["127.0.0.1"] }),
  reverse: async () => ({ kind: "found", records: [mx] }),
});

/** Verifies two addresses of `domain` served by `mx` (a scripted server): results and the paces written. */
async function verifyAt(
  mx: string,
  banner: string,
  reply: (line: string) => string | null,
): Promise<{ reasons: Array<string | null>; paced: Array<string | null>; paces: string[] }> {
  const server = await startScripted(banner, reply);
  const engine = createEngine(
    {
      smtpPort: server.port,
      smtpHeloName: "probe.mailprobe.test",
      smtpMailFrom: "bounce@mailprobe.test",
      smtpCommandTimeoutMs: 1000,
      smtpGreetingTimeoutMs: 1000,
      smtpAllowPrivateHosts: true,
    },
    {
      dns: dnsFor(mx),
      random: () => 0,
      pace: createPgProviderPace({ db, clock: systemClock, quietMs: 3_600_000, whenNoRoom: "defer" }),
    },
  );
  try {
    const results = await engine.verifyGroup("customer.test", ["ann@customer.test", "bob@customer.test"]);
    const { rows } = await db.query<{ provider: string }>("select provider from provider_paces order by 1");
    return {
      reasons: results.map((r) => r.unknownReason),
      paced: results.map((r) => r.pacedBy?.provider ?? null),
      paces: rows.map((r) => r.provider),
    };
  } finally {
    await engine.close();
    await server.close();
  }
}

const greeting = (line: string, mail: string): string | null => {
  if (/^EHLO/i.test(line)) return "250-mx.scripted.test\r\n250 PIPELINING";
  if (/^MAIL/i.test(line)) return mail;
  if (/^RCPT/i.test(line)) return "250 2.1.5 Recipient ok";
  if (/^QUIT/i.test(line)) return "221 2.0.0 Bye";
  return "250 2.0.0 OK";
};

test("Outlook.com's 4.7.650 at MAIL FROM teaches the pace of outlook", async () => {
  const got = await verifyAt("customer-test.olc.protection.outlook.com", "220 outlook ESMTP", (line) =>
    greeting(
      line,
      "451 4.7.650 The mail server [127.0.0.1] has been temporarily rate limited due to IP reputation. For e-mail delivery information, see https://aka.ms/postmaster (S775)",
    ),
  );
  assert.deepEqual(got, {
    reasons: ["rate_limited", "rate_limited"],
    paced: ["outlook", "outlook"],
    paces: ["outlook"],
  });
});

test("Yahoo's [TSS04] in the banner teaches the pace of yahoo", async () => {
  const got = await verifyAt(
    "mta5.am0.yahoodns.net",
    "421 4.7.0 [TSS04] Messages from 127.0.0.1 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes",
    (line) => greeting(line, "250 2.1.0 OK"),
  );
  assert.deepEqual(got.paces, ["yahoo"]);
  assert.deepEqual(got.paced, ["yahoo", "yahoo"]);
});

test("a limit on concurrent connections at the banner is no volume refusal: no pace", async () => {
  const got = await verifyAt(
    "mx.plain.test",
    "421 4.7.0 Too many concurrent connections from 127.0.0.1",
    (line) => greeting(line, "250 2.1.0 OK"),
  );
  assert.deepEqual(got.paces, []);
  assert.deepEqual(got.paced, [null, null]);
});
