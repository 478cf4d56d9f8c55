import assert from "node:assert/strict";
import { test } from "node:test";
import { classifyMailbox, type MailboxEvidence } from "../../../src/verify/classify.ts";
import { decideCatchAll } from "../../../src/verify/verify-domain.ts";
import { PROVIDER_TRAITS } from "../../../src/verify/providers.ts";

const base: MailboxEvidence = {
  verdict: { kind: "accepted" },
  sessionFailure: null,
  catchAll: "not_catchall",
  provider: PROVIDER_TRAITS.postfix,
};
const run = (e: Partial<MailboxEvidence>) => classifyMailbox({ ...base, ...e });

void test("accepted on a domain that rejects unknown users → valid", () => {
  assert.deepEqual(run({}), {
    status: "valid",
    unknownReason: null,
    isCatchall: false,
    needsPhysicalVerify: false,
  });
  assert.equal(run({ catchAll: "undecided" }).status, "valid");
});

void test("accepted on a catch-all domain → catchall; physical verification only for accept-all providers", () => {
  assert.deepEqual(run({ catchAll: "catchall" }), {
    status: "catchall",
    unknownReason: null,
    isCatchall: true,
    needsPhysicalVerify: false,
  });
  assert.deepEqual(run({ catchAll: "catchall", provider: PROVIDER_TRAITS.microsoft365 }), {
    status: "catchall",
    unknownReason: null,
    isCatchall: true,
    needsPhysicalVerify: true,
  });
});

void test("accept-all provider without negative evidence → catchall + needs_physical_verify; with it → valid", () => {
  assert.deepEqual(run({ catchAll: "undecided", provider: PROVIDER_TRAITS.yahoo }), {
    status: "catchall",
    unknownReason: null,
    isCatchall: true,
    needsPhysicalVerify: true,
  });
  assert.deepEqual(run({ catchAll: "not_catchall", provider: PROVIDER_TRAITS.microsoft365 }), {
    status: "valid",
    unknownReason: null,
    isCatchall: false,
    needsPhysicalVerify: false,
  });
});

void test("missing and disabled → invalid; full → valid (the mailbox exists)", () => {
  assert.equal(run({ verdict: { kind: "mailbox_missing" } }).status, "invalid");
  assert.equal(run({ verdict: { kind: "mailbox_disabled" } }).status, "invalid");
  assert.equal(run({ verdict: { kind: "mailbox_full" } }).status, "valid");
  assert.equal(run({ verdict: { kind: "mailbox_missing" }, catchAll: "catchall" }).status, "invalid");
});

void test("unknown verdicts and unanswered addresses keep their reason", () => {
  assert.deepEqual(run({ verdict: { kind: "unknown", reason: "greylisted" } }), {
    status: "unknown",
    unknownReason: "greylisted",
    isCatchall: false,
    needsPhysicalVerify: false,
  });
  assert.equal(
    run({ verdict: null, sessionFailure: "connection_dropped" }).unknownReason,
    "connection_dropped",
  );
});

void test("catch-all decision: only a 2xx to the probe makes a catch-all; a missing answer anywhere proves the opposite", () => {
  assert.equal(decideCatchAll({ kind: "accepted" }, []), "catchall");
  assert.equal(decideCatchAll({ kind: "mailbox_missing" }, []), "not_catchall");
  assert.equal(
    decideCatchAll({ kind: "unknown", reason: "greylisted" }, [{ kind: "accepted" }]),
    "undecided",
  );
  assert.equal(
    decideCatchAll(undefined, [{ kind: "accepted" }, { kind: "mailbox_missing" }]),
    "not_catchall",
  );
  assert.equal(decideCatchAll(undefined, [{ kind: "accepted" }]), "undecided");
});
