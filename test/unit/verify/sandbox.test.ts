// Sandbox addresses (docs/api.md): fixed answers under sandbox.mailprobe.invalid, with no
// DNS and no SMTP, through verifyOne, verifyGroup and resolveDomain; plus the pure table.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createEngine } from "../../../src/verify/engine.ts";
import type { ConnectPort, DnsPort, HostGate } from "../../../src/verify/ports.ts";
import {
  isSandboxAddress,
  SANDBOX_DOMAIN,
  SANDBOX_MAILBOXES,
  sandboxResult,
} from "../../../src/verify/sandbox.ts";
import type { VerificationResult } from "../../../src/verify/types.ts";

const at = new Date("2026-01-02T03:04:05Z");
const clock = { now: () => at };

/** Ports that count every use: a sandbox answer must leave all three at zero. */
function countingPorts() {
  const calls = { dns: 0, connect: 0, gate: 0 };
  const dns: DnsPort = {
    mx: async () => (calls.dns++, { kind: "nxdomain" }),
    addresses: async () => (calls.dns++, { kind: "nxdomain" }),
    reverse: async () => (calls.dns++, { kind: "nxdomain" }),
  };
  const connect: ConnectPort = {
    connect: () => {
      calls.connect++;
      throw new Error("SMTP must not be reached");
    },
  };
  const hostGate: HostGate = {
    acquire: async () => {
      calls.gate++;
      return () => undefined;
    },
  };
  return { calls, ports: { dns, connect, hostGate, clock } };
}

const fieldsOf = (r: VerificationResult) => ({
  status: r.status,
  unknownReason: r.unknownReason,
  isRoleBased: r.isRoleBased,
  isDisposable: r.isDisposable,
  isCatchall: r.isCatchall,
  needsPhysicalVerify: r.needsPhysicalVerify,
  hasMxRecords: r.hasMxRecords,
  hasReverseDns: r.hasReverseDns,
  hostName: r.hostName,
  serverType: r.serverType,
});

const smtp = {
  hasMxRecords: true,
  hasReverseDns: true,
  hostName: "mx.sandbox.mailprobe.invalid",
  serverType: "sandbox",
};
const plain = {
  unknownReason: null,
  isRoleBased: false,
  isDisposable: false,
  isCatchall: false,
  needsPhysicalVerify: false,
};

/** The README's sandbox table, as the engine must answer it. */
const EXPECTED: Record<string, ReturnType<typeof fieldsOf>> = {
  valid: { ...plain, ...smtp, status: "valid" },
  invalid: { ...plain, ...smtp, status: "invalid" },
  catchall: { ...plain, ...smtp, status: "catchall", isCatchall: true },
  physical: { ...plain, ...smtp, status: "catchall", isCatchall: true, needsPhysicalVerify: true },
  disposable: {
    ...plain,
    status: "disposable_domain",
    isDisposable: true,
    hasMxRecords: false,
    hasReverseDns: false,
    hostName: "",
    serverType: "unknown",
  },
  info: { ...plain, ...smtp, status: "valid", isRoleBased: true },
  "unknown-greylisted": { ...plain, ...smtp, status: "unknown", unknownReason: "greylisted" },
  "unknown-timeout": { ...plain, ...smtp, status: "unknown", unknownReason: "smtp_timeout" },
  timeout: { ...plain, ...smtp, status: "unknown", unknownReason: "timeout_smtp" },
};

void test("the expected table covers exactly the documented mailboxes", () => {
  assert.deepEqual(Object.keys(EXPECTED).sort(), Object.keys(SANDBOX_MAILBOXES).sort());
});

void test("verifyOne: every sandbox mailbox gets its fixed answer, with no DNS, SMTP or host slot", async () => {
  const { calls, ports } = countingPorts();
  const engine = createEngine({}, ports);
  for (const [local, expected] of Object.entries(EXPECTED)) {
    const r = await engine.verifyOne(`${local}@${SANDBOX_DOMAIN}`);
    assert.deepEqual(fieldsOf(r), expected, local);
    assert.equal(r.email, `${local}@${SANDBOX_DOMAIN}`);
    assert.equal(r.domainName, SANDBOX_DOMAIN);
    assert.deepEqual(r.validatedAt, at);
    assert.match(r.evidence, /^sandbox: /);
    assert.equal(r.retryAfterMs, null);
  }
  assert.deepEqual(calls, { dns: 0, connect: 0, gate: 0 });
  await engine.close();
});

void test("case, +tag and unlisted local parts: canonical form, same answer, unlisted is invalid", async () => {
  const { calls, ports } = countingPorts();
  const engine = createEngine({}, ports);
  const upper = await engine.verifyOne("  Valid@SANDBOX.MailProbe.Invalid ");
  assert.equal(upper.email, "valid@sandbox.mailprobe.invalid");
  assert.equal(upper.status, "valid");
  const tagged = await engine.verifyOne(`unknown-greylisted+row-17@${SANDBOX_DOMAIN}`);
  assert.equal(tagged.email, `unknown-greylisted+row-17@${SANDBOX_DOMAIN}`);
  assert.equal(tagged.unknownReason, "greylisted");
  const unlisted = await engine.verifyOne(`jane.doe@${SANDBOX_DOMAIN}`);
  assert.deepEqual(fieldsOf(unlisted), EXPECTED.invalid);
  assert.equal(unlisted.evidence, "sandbox: 550 5.1.1 no such sandbox mailbox");
  // A role name that is not a sandbox mailbox: invalid, still flagged as a role account.
  const admin = await engine.verifyOne(`admin@${SANDBOX_DOMAIN}`);
  assert.equal(admin.status, "invalid");
  assert.equal(admin.isRoleBased, true);
  // Inherited names of a plain object are not mailboxes.
  assert.equal((await engine.verifyOne(`constructor@${SANDBOX_DOMAIN}`)).status, "invalid");
  assert.equal((await engine.verifyOne(`__proto__@${SANDBOX_DOMAIN}`)).status, "invalid");
  assert.deepEqual(calls, { dns: 0, connect: 0, gate: 0 });
  await engine.close();
});

void test("bad syntax under the sandbox domain is invalid_syntax, like anywhere", async () => {
  const { calls, ports } = countingPorts();
  const engine = createEngine({}, ports);
  const r = await engine.verifyOne(`invalid..syntax@${SANDBOX_DOMAIN}`);
  assert.equal(r.status, "invalid_syntax");
  assert.equal(isSandboxAddress(r.email), true);
  assert.deepEqual(calls, { dns: 0, connect: 0, gate: 0 });
  await engine.close();
});

void test("verifyGroup: sandbox addresses answered in place, other domains still verified, in order", async () => {
  const { calls, ports } = countingPorts();
  const engine = createEngine({}, ports);
  const results = await engine.verifyGroup(SANDBOX_DOMAIN, [
    `valid@${SANDBOX_DOMAIN}`,
    `timeout@${SANDBOX_DOMAIN}`,
    "not an address",
    `VALID@${SANDBOX_DOMAIN}`,
    `catchall@${SANDBOX_DOMAIN}`,
  ]);
  assert.deepEqual(
    results.map((r) => [r.email, r.status, r.unknownReason]),
    [
      [`valid@${SANDBOX_DOMAIN}`, "valid", null],
      [`timeout@${SANDBOX_DOMAIN}`, "unknown", "timeout_smtp"],
      ["not an address", "invalid_syntax", null],
      [`valid@${SANDBOX_DOMAIN}`, "valid", null],
      [`catchall@${SANDBOX_DOMAIN}`, "catchall", null],
    ],
  );
  assert.deepEqual(calls, { dns: 0, connect: 0, gate: 0 });
  // A stray real domain in the group is still resolved (the counters work).
  const mixed = await engine.verifyGroup(SANDBOX_DOMAIN, [`invalid@${SANDBOX_DOMAIN}`, "a@gone.test"]);
  assert.deepEqual(
    mixed.map((r) => r.status),
    ["invalid", "invalid"],
  );
  assert.equal(calls.dns, 1);
  assert.equal(calls.connect, 0);
  await engine.close();
});

void test("resolveDomain of the sandbox domain names its host without DNS", async () => {
  const { calls, ports } = countingPorts();
  const engine = createEngine({}, ports);
  assert.deepEqual(await engine.resolveDomain("Sandbox.Mailprobe.Invalid"), {
    kind: "mail_hosts",
    hasMxRecords: true,
    hosts: [{ name: "mx.sandbox.mailprobe.invalid", preference: 10, addresses: [] }],
    fallbacks: [],
  });
  assert.equal(calls.dns, 0);
  await engine.close();
});

void test("isSandboxAddress: the exact domain after the last @, any case; not subdomains or look-alikes", () => {
  assert.equal(isSandboxAddress(`valid@${SANDBOX_DOMAIN}`), true);
  assert.equal(isSandboxAddress("x@SANDBOX.MAILPROBE.INVALID"), true);
  assert.equal(isSandboxAddress(`a..b@${SANDBOX_DOMAIN}`), true);
  assert.equal(isSandboxAddress(`a@b@${SANDBOX_DOMAIN}`), true);
  assert.equal(isSandboxAddress(`valid@x.${SANDBOX_DOMAIN}`), false);
  assert.equal(isSandboxAddress(`valid@${SANDBOX_DOMAIN}.example.com`), false);
  assert.equal(isSandboxAddress(`${SANDBOX_DOMAIN}@example.com`), false);
  assert.equal(isSandboxAddress(SANDBOX_DOMAIN), false);
});

void test("sandboxResult is deterministic: same input, same answer but the timestamp", () => {
  const a = sandboxResult(`catchall@${SANDBOX_DOMAIN}`, at);
  const b = sandboxResult(`catchall@${SANDBOX_DOMAIN}`, new Date(at.getTime() + 1000));
  assert.deepEqual({ ...a, validatedAt: null }, { ...b, validatedAt: null });
});
