// The doctor's verdicts on fake DNS answers and a scripted SMTP server on loopback: what the
// simulator can't stage (a public egress IP named by the MX, IPv6, a proxy, odd replies).
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { reverseName } from "../../../src/verify/dns.ts";
import type { ConnectPort, DnsAnswer, MxRecord } from "../../../src/verify/ports.ts";
import {
  runDoctor,
  type CheckId,
  type DoctorCheck,
  type DoctorDnsPort,
  type DoctorOptions,
  type DoctorReport,
} from "../../../src/doctor/doctor.ts";
import { ConnectError, directConnect } from "../../../src/verify/smtp/connect.ts";
import { classifyAddress } from "../../../src/net/address-policy.ts";
import { closeScriptedSmtp, doctorOptions, found, NX, scriptedSmtp } from "./fixture.ts";

after(closeScriptedSmtp);

/** DNS from tables; a name listed nowhere is NXDOMAIN. */
function fakeDns(t: {
  mx?: Record<string, MxRecord[]>;
  a?: Record<string, string[]>;
  aaaa?: Record<string, string[]>;
  ptr?: Record<string, string[]>;
}): DoctorDnsPort {
  const lookup = <T>(table: Record<string, T> | undefined, key: string): DnsAnswer<T> =>
    table?.[key] === undefined ? NX : found(table[key]);
  return {
    // A name with addresses exists: no MX is NODATA there, not NXDOMAIN.
    mx: async (d) =>
      t.mx?.[d] === undefined && (t.a?.[d] ?? t.aaaa?.[d]) ? { kind: "nodata" } : lookup(t.mx, d),
    addresses: async (h) => (t.a?.[h] ? found(t.a[h]) : lookup(t.aaaa, h)),
    addresses6: async (h) => lookup(t.aaaa, h),
    reverse: async (ip) => lookup(t.ptr, ip),
  };
}

const BASE_DNS = {
  mx: { "example.com": [{ exchange: "mx.example.com", priority: 10 }] },
  a: { "mx.example.com": ["127.0.0.1"], "mail.example.com": ["198.51.100.7"] },
};

/** For checks that must not reach any network: every connection is refused at once. */
const noConnections: ConnectPort = {
  connect: () => Promise.reject(new ConnectError("refused", "no connections in this test")),
};

const byId = (r: DoctorReport) =>
  Object.fromEntries(r.checks.map((c) => [c.id, c])) as Record<CheckId, DoctorCheck>;

describe("FCrDNS of the egress IP", () => {
  test("the MX names our public IP, which has the HELO name as a forward-confirmed PTR: ok", async () => {
    const port = await scriptedSmtp({ ehlo: "250 mx.example.net Hello mail.example.com [198.51.100.7]" });
    const dns = fakeDns({ ...BASE_DNS, ptr: { "198.51.100.7": ["Mail.Example.com."] } });
    const report = await runDoctor(doctorOptions(port), { dns, connect: directConnect });
    assert.deepEqual(report.egress, { ip: "198.51.100.7", source: "reported_by_mx" });
    assert.equal(byId(report).fcrdns.status, "ok");
    assert.equal(report.ok, true);
    assert.deepEqual(
      report.checks.map((c) => c.status),
      ["ok", "ok", "ok", "ok", "ok"],
    );
  });

  test("a public IP without PTR: fail, quoting Gmail", async () => {
    const port = await scriptedSmtp({ ehlo: "250 mx.example.net Hello [198.51.100.7]" });
    const report = await runDoctor(doctorOptions(port), { dns: fakeDns(BASE_DNS), connect: directConnect });
    const fcrdns = byId(report).fcrdns;
    assert.equal(fcrdns.status, "fail");
    assert.match(fcrdns.message, /198\.51\.100\.7 has no PTR record: Gmail answers "550 5\.7\.25/);
    assert.match(fcrdns.fix!, /set its PTR to mail\.example\.com/);
    assert.equal(report.ok, false);
  });

  test("a PTR naming the HELO name, which does not resolve back: fail", async () => {
    const port = await scriptedSmtp({ ehlo: "250 mx.example.net Hello [198.51.100.8]" });
    const dns = fakeDns({ ...BASE_DNS, ptr: { "198.51.100.8": ["mail.example.com"] } });
    const fcrdns = byId(await runDoctor(doctorOptions(port), { dns, connect: directConnect })).fcrdns;
    assert.equal(fcrdns.status, "fail");
    assert.match(fcrdns.message, /not forward-confirmed/);
    assert.equal(fcrdns.fix, "add an A record mail.example.com → 198.51.100.8");
  });

  test("a PTR naming neither the HELO name nor resolving back: fail", async () => {
    const port = await scriptedSmtp({ ehlo: "250 mx.example.net Hello [198.51.100.7]" });
    const dns = fakeDns({ ...BASE_DNS, ptr: { "198.51.100.7": ["198-51-100-7.cloud.example"] } });
    const fcrdns = byId(await runDoctor(doctorOptions(port), { dns, connect: directConnect })).fcrdns;
    assert.equal(fcrdns.status, "fail");
    assert.match(fcrdns.message, /PTR 198-51-100-7\.cloud\.example, which is not the HELO name/);
  });

  test("IPv6: the MX's [IPv6:…] form, AAAA records compared as addresses", async () => {
    const port = await scriptedSmtp({ ehlo: "250 mx.example.net Hello [IPv6:2001:db8::25]" });
    const dns = fakeDns({
      ...BASE_DNS,
      aaaa: { "mail.example.com": ["2001:0db8:0:0::0025"] },
      ptr: { "2001:db8::25": ["mail.example.com"] },
    });
    const report = await runDoctor(doctorOptions(port), { dns, connect: directConnect });
    assert.deepEqual(report.egress, { ip: "2001:db8::25", source: "reported_by_mx" });
    assert.equal(byId(report).fcrdns.status, "ok", byId(report).fcrdns.message);
  });

  test("through a proxy, with an MX that doesn't name us: the egress IP can't be known (warn)", async () => {
    const port = await scriptedSmtp({});
    const report = await runDoctor(doctorOptions(port, { viaProxy: true }), {
      dns: fakeDns(BASE_DNS),
      connect: directConnect,
    });
    assert.equal(report.egress, null);
    assert.equal(byId(report).fcrdns.status, "warn");
    assert.match(byId(report).fcrdns.message, /can't be known: SMTP goes through SMTP_PROXY/);
  });

  test("a non-public egress by the outbound guard (the addressPolicy port): failures soften to warnings", async () => {
    // Our socket's local address, 127.0.0.1, has no PTR: a failure for a public address.
    const port = await scriptedSmtp({});
    const run = (addressPolicy?: (ip: string) => { public: boolean; range: string }) =>
      runDoctor(doctorOptions(port), { dns: fakeDns(BASE_DNS), connect: directConnect, addressPolicy });
    const guarded = byId(await run(classifyAddress)).fcrdns;
    assert.equal(guarded.status, "warn");
    assert.match(guarded.message, /127\.0\.0\.1 is not a public address/);
    assert.equal(byId(await run()).fcrdns.status, "fail", "without a guard nothing is judged private");
  });

  test("reverse names", () => {
    assert.equal(reverseName("192.0.2.1"), "1.2.0.192.in-addr.arpa");
    assert.equal(
      reverseName("2001:db8::1"),
      "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa",
    );
  });
});

describe("SMTP replies", () => {
  test("EHLO refused: fail with the reply and the HELO fix", async () => {
    const port = await scriptedSmtp({ ehlo: "550 5.7.1 Go away" });
    const smtp = byId(
      await runDoctor(doctorOptions(port), { dns: fakeDns(BASE_DNS), connect: directConnect }),
    ).smtp;
    assert.equal(smtp.status, "fail");
    assert.match(smtp.message, /rejected EHLO mail\.example\.com: "550 5\.7\.1 Go away"/);
    assert.match(smtp.fix!, /SMTP_HELO_NAME=/);
  });

  test("the sender refused at RCPT: fail pointing at SMTP_MAIL_FROM", async () => {
    const port = await scriptedSmtp({
      rcpt: "450 4.1.8 <verify@example.com>: Sender address rejected: Domain not found",
    });
    const smtp = byId(
      await runDoctor(doctorOptions(port), { dns: fakeDns(BASE_DNS), connect: directConnect }),
    ).smtp;
    assert.equal(smtp.status, "warn");
    assert.match(smtp.fix!, /SMTP_MAIL_FROM/);
  });

  test("greylisted: warn, try again later", async () => {
    const port = await scriptedSmtp({
      rcpt: "450 4.2.0 <postmaster@example.com>: Recipient address rejected: Greylisted",
    });
    const smtp = byId(
      await runDoctor(doctorOptions(port), { dns: fakeDns(BASE_DNS), connect: directConnect }),
    ).smtp;
    assert.equal(smtp.status, "warn");
    assert.match(smtp.fix!, /again in a few minutes/);
  });

  test("postmaster unknown: the server judged the mailbox, so HELO and sender passed (ok)", async () => {
    const port = await scriptedSmtp({
      rcpt: "550 5.1.1 <postmaster@example.com>: Recipient address rejected: User unknown",
    });
    const smtp = byId(
      await runDoctor(doctorOptions(port), { dns: fakeDns(BASE_DNS), connect: directConnect }),
    ).smtp;
    assert.equal(smtp.status, "ok");
  });

  test("--mx as an IP: EHLO only", async () => {
    const port = await scriptedSmtp({});
    const report = await runDoctor(doctorOptions(port, { mxTarget: "[127.0.0.1]" }), {
      dns: fakeDns(BASE_DNS),
      connect: directConnect,
    });
    assert.deepEqual(report.mx, { host: "127.0.0.1", address: "127.0.0.1" });
    assert.match(
      byId(report).smtp.message,
      /accepted EHLO mail\.example\.com \(MAIL FROM and RCPT not tried/,
    );
  });
});

describe("names", () => {
  test("a HELO name from the host name or derived: warn; a bare one: fail", async () => {
    const dns = fakeDns({});
    const from = async (o: Partial<DoctorOptions>) =>
      byId(await runDoctor(doctorOptions(25, o), { dns, connect: noConnections })).helo_name;
    assert.equal((await from({ heloNameSource: "hostname" })).status, "warn");
    assert.equal((await from({ heloName: "web-1.localdomain", heloNameSource: "derived" })).status, "warn");
    assert.equal((await from({ heloName: "[192.0.2.1]" })).status, "warn");
    const bare = await from({ heloName: "web-1" });
    assert.equal(bare.status, "fail");
    assert.match(bare.message, /504 5\.5\.2 <web-1>: Helo command rejected/);
  });

  test("the MAIL FROM domain: a null MX or a bare name fails; A records alone are an implicit MX", async () => {
    const dns = fakeDns({
      mx: { "nullmx.example": [{ exchange: "", priority: 0 }] },
      a: { "bare.example": ["192.0.2.10"] },
    });
    const check = async (mailFrom: string) =>
      byId(await runDoctor(doctorOptions(25, { mailFrom }), { dns, connect: noConnections }))
        .mail_from_domain;
    const nullMx = await check("verify@nullmx.example");
    assert.equal(nullMx.status, "fail");
    assert.match(nullMx.message, /null MX/);
    assert.equal((await check("verify@localhost")).status, "fail");
    const implicit = await check("verify@bare.example");
    assert.equal(implicit.status, "ok");
    assert.match(implicit.message, /implicit MX/);
  });
});
