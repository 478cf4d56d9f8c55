import assert from "node:assert/strict";
import { test } from "node:test";
import type { DnsAnswer, DnsPort, MxRecord } from "../../../src/verify/dns.ts";
import { toAnswer } from "../../../src/verify/dns.ts";
import { DomainResolver, resolveMailHosts } from "../../../src/verify/resolve-domain.ts";

type Zone = {
  mx?: Record<string, DnsAnswer<MxRecord[]>>;
  a?: Record<string, DnsAnswer<string[]>>;
  ptr?: Record<string, DnsAnswer<string[]>>;
};

function fakeDns(zone: Zone, calls: string[] = []): DnsPort {
  return {
    mx: async (d) => (calls.push(`mx ${d}`), zone.mx?.[d] ?? { kind: "nxdomain" }),
    addresses: async (h) => (calls.push(`a ${h}`), zone.a?.[h] ?? { kind: "nxdomain" }),
    reverse: async (ip) => (calls.push(`ptr ${ip}`), zone.ptr?.[ip] ?? { kind: "nxdomain" }),
  };
}
const found = <T>(records: T): DnsAnswer<T> => ({ kind: "found", records });
const fixedRandom = (): number => 0.5;

void test("MX hosts by preference, each with its addresses", async () => {
  const dns = fakeDns({
    mx: {
      "acme.test": found([
        { exchange: "mx2.acme.test", priority: 20 },
        { exchange: "MX1.acme.test.", priority: 10 },
      ]),
    },
    a: { "mx1.acme.test": found(["127.0.1.1"]), "mx2.acme.test": found(["127.0.1.2"]) },
  });
  assert.deepEqual(await resolveMailHosts("acme.test", dns, fixedRandom), {
    kind: "mail_hosts",
    hasMxRecords: true,
    hosts: [
      { name: "mx1.acme.test", preference: 10, addresses: ["127.0.1.1"] },
      { name: "mx2.acme.test", preference: 20, addresses: ["127.0.1.2"] },
    ],
  });
});

void test("implicit MX: no MX but an A record makes the domain its own mail host (RFC 5321 §5.1)", async () => {
  const dns = fakeDns({ mx: { "a.test": { kind: "nodata" } }, a: { "a.test": found(["127.0.1.9"]) } });
  assert.deepEqual(await resolveMailHosts("a.test", dns, fixedRandom), {
    kind: "mail_hosts",
    hasMxRecords: false,
    hosts: [{ name: "a.test", preference: 0, addresses: ["127.0.1.9"] }],
  });
});

void test("no mail: null MX, NXDOMAIN, no records, MX hosts without addresses", async () => {
  const dns = fakeDns({
    mx: {
      "null.test": found([{ exchange: "", priority: 0 }]),
      "dot.test": found([{ exchange: ".", priority: 0 }]),
      "empty.test": { kind: "nodata" },
      "noaddr.test": found([{ exchange: "mx.noaddr.test", priority: 10 }]),
    },
    a: { "empty.test": { kind: "nodata" }, "mx.noaddr.test": { kind: "nodata" } },
  });
  assert.deepEqual(await resolveMailHosts("null.test", dns, fixedRandom), {
    kind: "no_mail",
    hasMxRecords: false,
    cause: "null_mx",
  });
  assert.deepEqual(await resolveMailHosts("dot.test", dns, fixedRandom), {
    kind: "no_mail",
    hasMxRecords: false,
    cause: "null_mx",
  });
  assert.deepEqual(await resolveMailHosts("gone.test", dns, fixedRandom), {
    kind: "no_mail",
    hasMxRecords: false,
    cause: "nxdomain",
  });
  assert.deepEqual(await resolveMailHosts("empty.test", dns, fixedRandom), {
    kind: "no_mail",
    hasMxRecords: false,
    cause: "no_records",
  });
  assert.deepEqual(await resolveMailHosts("noaddr.test", dns, fixedRandom), {
    kind: "no_mail",
    hasMxRecords: true,
    cause: "no_host_address",
  });
});

void test("a null MX beside real MX records is ignored", async () => {
  const dns = fakeDns({
    mx: {
      "mixed.test": found([
        { exchange: "", priority: 0 },
        { exchange: "mx.mixed.test", priority: 10 },
      ]),
    },
    a: { "mx.mixed.test": found(["127.0.1.3"]) },
  });
  const r = await resolveMailHosts("mixed.test", dns, fixedRandom);
  assert.equal(r.kind, "mail_hosts");
});

void test("failures: SERVFAIL → dns_error, timeouts → dns_timeout, also for MX host addresses", async () => {
  const dns = fakeDns({
    mx: {
      "sf.test": { kind: "error", code: "ESERVFAIL" },
      "to.test": { kind: "timeout" },
      "hostto.test": found([{ exchange: "mx.hostto.test", priority: 10 }]),
    },
    a: { "mx.hostto.test": { kind: "timeout" } },
  });
  assert.deepEqual(await resolveMailHosts("sf.test", dns, fixedRandom), {
    kind: "dns_error",
    hasMxRecords: false,
    code: "ESERVFAIL",
  });
  assert.deepEqual(await resolveMailHosts("to.test", dns, fixedRandom), {
    kind: "dns_timeout",
    hasMxRecords: false,
  });
  assert.deepEqual(await resolveMailHosts("hostto.test", dns, fixedRandom), {
    kind: "dns_timeout",
    hasMxRecords: true,
  });
});

void test("c-ares error codes map to outcomes", () => {
  assert.deepEqual(toAnswer({ code: "ENODATA" }), { kind: "nodata" });
  assert.deepEqual(toAnswer({ code: "ENOTFOUND" }), { kind: "nxdomain" });
  assert.deepEqual(toAnswer({ code: "ETIMEOUT" }), { kind: "timeout" });
  assert.deepEqual(toAnswer({ code: "ESERVFAIL" }), { kind: "error", code: "ESERVFAIL" });
  assert.deepEqual(toAnswer(new Error("x")), { kind: "error", code: "EUNKNOWN" });
});

void test("the cache answers repeats until the TTL passes; failures are not cached; lookups are shared", async () => {
  const calls: string[] = [];
  let now = 0;
  const dns = fakeDns(
    {
      mx: {
        "acme.test": found([{ exchange: "mx.acme.test", priority: 10 }]),
        "sf.test": { kind: "error", code: "ESERVFAIL" },
      },
      a: { "mx.acme.test": found(["127.0.1.1"]) },
      ptr: { "127.0.1.1": found(["mx.acme.test"]) },
    },
    calls,
  );
  const resolver = new DomainResolver({ dns, nowMs: () => now, random: fixedRandom, cacheTtlMs: 1000 });
  await Promise.all([resolver.resolve("acme.test"), resolver.resolve("acme.test")]);
  await resolver.resolve("acme.test");
  assert.deepEqual(calls, ["mx acme.test", "a mx.acme.test"]);
  now = 1001;
  await resolver.resolve("acme.test");
  assert.equal(calls.filter((c) => c === "mx acme.test").length, 2);

  await resolver.resolve("sf.test");
  await resolver.resolve("sf.test");
  assert.equal(calls.filter((c) => c === "mx sf.test").length, 2);

  assert.equal(await resolver.hasReverseDns("127.0.1.1"), true);
  assert.equal(await resolver.hasReverseDns("127.0.1.1"), true);
  assert.equal(await resolver.hasReverseDns("127.0.9.9"), false);
  assert.equal(calls.filter((c) => c === "ptr 127.0.1.1").length, 1);
});
