import assert from "node:assert/strict";
import { test } from "node:test";
import type { DnsAnswer, DnsPort, MxRecord } from "../../../src/verify/ports.ts";
import { toAnswer } from "../../../src/verify/dns.ts";
import {
  DomainResolver,
  MAX_MX_TARGETS,
  MX_LIMIT_CODE,
  resolveMailHosts,
} from "../../../src/verify/resolve-domain.ts";

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

void test("MX hosts by preference: the first with its addresses, the rest left for later", async () => {
  const calls: string[] = [];
  const dns = fakeDns(
    {
      mx: {
        "acme.test": found([
          { exchange: "mx2.acme.test", priority: 20 },
          { exchange: "MX1.acme.test.", priority: 10 },
        ]),
      },
      a: { "mx1.acme.test": found(["127.0.1.1"]), "mx2.acme.test": found(["127.0.1.2"]) },
    },
    calls,
  );
  assert.deepEqual(await resolveMailHosts("acme.test", dns, fixedRandom), {
    kind: "mail_hosts",
    hasMxRecords: true,
    hosts: [{ name: "mx1.acme.test", preference: 10, addresses: ["127.0.1.1"] }],
    fallbacks: [{ name: "mx2.acme.test", preference: 20 }],
  });
  assert.deepEqual(calls, ["mx acme.test", "a mx1.acme.test"]);
});

void test("targets without an address are skipped until one has one; only the best 10 are considered", async () => {
  const mx = Array.from({ length: 500 }, (_, i) => ({ exchange: `mx${i}.many.test`, priority: i }));
  const a: Record<string, DnsAnswer<string[]>> = {
    "mx0.many.test": { kind: "nodata" },
    "mx1.many.test": { kind: "timeout" },
  };
  for (let i = 2; i < 500; i++) a[`mx${i}.many.test`] = found([`127.0.3.${i % 250}`]);
  const calls: string[] = [];
  const r = await resolveMailHosts(
    "many.test",
    fakeDns({ mx: { "many.test": found(mx) }, a }, calls),
    fixedRandom,
  );
  assert.equal(r.kind, "mail_hosts");
  assert.deepEqual(r.hosts, [{ name: "mx2.many.test", preference: 2, addresses: ["127.0.3.2"] }]);
  assert.deepEqual(
    r.fallbacks.map((t) => t.name),
    Array.from({ length: MAX_MX_TARGETS - 3 }, (_, i) => `mx${i + 3}.many.test`),
  );
  assert.deepEqual(calls, ["mx many.test", "a mx0.many.test", "a mx1.many.test", "a mx2.many.test"]);
});

void test("no address among the 10 considered while more are published: unknown (dns_error), not mail-less", async () => {
  const mx = Array.from({ length: 12 }, (_, i) => ({ exchange: `mx${i}.deep.test`, priority: i }));
  const calls: string[] = [];
  const dns = fakeDns(
    { mx: { "deep.test": found(mx) }, a: { "mx11.deep.test": found(["127.0.3.1"]) } },
    calls,
  );
  assert.deepEqual(await resolveMailHosts("deep.test", dns, fixedRandom), {
    kind: "dns_error",
    hasMxRecords: true,
    code: MX_LIMIT_CODE,
  });
  assert.equal(calls.filter((c) => c.startsWith("a ")).length, MAX_MX_TARGETS);
});

void test("mailHosts looks each fallback up only when asked for the next host, and skips those without an address", async () => {
  const calls: string[] = [];
  const dns = fakeDns(
    {
      mx: {
        "acme.test": found([
          { exchange: "mx1.acme.test", priority: 10 },
          { exchange: "mx2.acme.test", priority: 20 },
          { exchange: "mx3.acme.test", priority: 30 },
          { exchange: "mx4.acme.test", priority: 40 },
        ]),
      },
      a: {
        "mx1.acme.test": found(["127.0.1.1"]),
        "mx2.acme.test": { kind: "nodata" },
        "mx3.acme.test": found(["127.0.1.3"]),
        "mx4.acme.test": found(["127.0.1.4"]),
      },
    },
    calls,
  );
  const resolver = new DomainResolver({ dns, nowMs: () => 0, random: fixedRandom, cacheTtlMs: 1000 });
  const resolution = await resolver.resolve("acme.test");
  assert.equal(resolution.kind, "mail_hosts");
  const hosts = resolver.mailHosts(resolution);
  assert.equal((await hosts.next()).value?.name, "mx1.acme.test");
  assert.deepEqual(calls, ["mx acme.test", "a mx1.acme.test"]);
  assert.deepEqual((await hosts.next()).value, {
    name: "mx3.acme.test",
    preference: 30,
    addresses: ["127.0.1.3"],
  });
  assert.deepEqual(calls.slice(2), ["a mx2.acme.test", "a mx3.acme.test"]);

  // A second session reuses the cached answers; an aborted one ends without looking further.
  const again = resolver.mailHosts(resolution);
  await again.next();
  await again.next();
  assert.equal(calls.length, 4);
  const controller = new AbortController();
  controller.abort();
  const aborted = resolver.mailHosts(resolution, controller.signal);
  await aborted.next();
  assert.equal((await aborted.next()).done, true);
  assert.equal(calls.length, 4);
});

void test("implicit MX: no MX but an A record makes the domain its own mail host (RFC 5321 §5.1)", async () => {
  const dns = fakeDns({ mx: { "a.test": { kind: "nodata" } }, a: { "a.test": found(["127.0.1.9"]) } });
  assert.deepEqual(await resolveMailHosts("a.test", dns, fixedRandom), {
    kind: "mail_hosts",
    hasMxRecords: false,
    hosts: [{ name: "a.test", preference: 0, addresses: ["127.0.1.9"] }],
    fallbacks: [],
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

  assert.deepEqual(await resolver.reverseDns("127.0.1.1"), { status: "passed", reason: null });
  assert.deepEqual(await resolver.reverseDns("127.0.1.1"), { status: "passed", reason: null });
  assert.deepEqual(await resolver.reverseDns("127.0.9.9"), { status: "failed", reason: "no_ptr" });
  assert.equal(calls.filter((c) => c === "ptr 127.0.1.1").length, 1);
});
