import assert from "node:assert/strict";
import { test } from "node:test";
import { settleAddress } from "../../../src/verify/classify.ts";
import {
  decideReply,
  sameReply,
  serverEvidenceOf,
  sessionRecipients,
  type ServerEvidence,
} from "../../../src/verify/evidence.ts";
import type { SmtpReply } from "../../../src/verify/smtp/reply-reader.ts";

const r = (code: number, text: string): SmtpReply => ({
  code,
  enhanced: /^\d\.\d+\.\d+/.exec(text)?.[0] ?? null,
  text,
});
const OK = r(250, "2.1.5 Ok");
const UNROUTEABLE = r(550, "Unrouteable address");
const none: ServerEvidence = { acceptedOrdinary: null, control: null, probeRejection: null };

void test("a recognised reply is decided by its rule, whatever the server said otherwise", () => {
  const d = decideReply("a@x.test", r(550, "5.1.1 <a@x.test>: User unknown"), none);
  assert.equal(d.verdict.kind, "mailbox_missing");
  assert.match(d.evidence, /^rule perm_5_1_1: RCPT 550/);
  const blocked = decideReply(
    "a@x.test",
    r(554, "5.7.1 Client host [192.0.2.1] blocked using zen.spamhaus.org"),
    {
      acceptedOrdinary: "session",
      control: "accepted",
      probeRejection: null,
    },
  );
  assert.deepEqual(blocked.verdict, { kind: "unknown", reason: "ip_blocklisted" });
});

void test("an unrecognised rejection: accepted ordinary recipient → missing; control + alike probe → missing", () => {
  assert.equal(
    decideReply("a@x.test", UNROUTEABLE, { ...none, acceptedOrdinary: "host" }).verdict.kind,
    "mailbox_missing",
  );
  const alike: ServerEvidence = {
    acceptedOrdinary: null,
    control: "accepted",
    probeRejection: { address: "zz9@x.test", reply: UNROUTEABLE },
  };
  const d = decideReply("a@x.test", UNROUTEABLE, alike);
  assert.equal(d.verdict.kind, "mailbox_missing");
  assert.match(d.evidence, /^evidence: .*postmaster accepted; probe rejected alike/);
  // A different wording for the probe is no evidence.
  const differs = decideReply("a@x.test", UNROUTEABLE, {
    ...alike,
    probeRejection: { address: "zz9@x.test", reply: r(550, "Rejected") },
  });
  assert.deepEqual(differs.verdict, { kind: "unknown", reason: "unclassified_rejection" });
  // Postmaster refused as well: the server may be refusing us.
  const refused = decideReply("a@x.test", UNROUTEABLE, { ...alike, control: "rejected" });
  assert.deepEqual(refused.verdict, { kind: "unknown", reason: "unclassified_rejection" });
  assert.match(refused.evidence, /^no evidence: .*postmaster rejected too/);
  // 4xx is never decided by evidence.
  assert.equal(decideReply("a@x.test", r(450, "Unrouteable address"), alike).verdict.kind, "unknown");
});

void test("replies compare modulo the address and per-reply ids", () => {
  assert.ok(
    sameReply(
      r(524, "5.2.4 Mailing list expansion problem: <bob@x.test> 7f3a9c21e"),
      "bob@x.test",
      r(524, "5.2.4 Mailing list expansion problem: <q8w7e6r5t4@x.test> 0b1c2d3e4f"),
      "q8w7e6r5t4@x.test",
    ),
  );
  assert.ok(!sameReply(r(550, "Unrouteable address"), "a@x.test", r(551, "Unrouteable address"), "b@x.test"));
});

void test("server evidence: this session's answers first, then what earlier sessions and the host taught", () => {
  const replies = new Map([
    ["postmaster@x.test", OK],
    ["zz9@x.test", UNROUTEABLE],
    ["abuse@x.test", OK],
  ]);
  const e = serverEvidenceOf({
    replies,
    control: "postmaster@x.test",
    probe: "zz9@x.test",
    known: undefined,
    hostAcceptedRecently: false,
  });
  // postmaster and abuse are no evidence of acceptance: configurations exempt them from IP checks.
  assert.deepEqual(e, {
    acceptedOrdinary: null,
    control: "accepted",
    probeRejection: { address: "zz9@x.test", reply: UNROUTEABLE },
  });
  const later = serverEvidenceOf({
    replies: new Map([["bob@x.test", OK]]),
    control: "postmaster@x.test",
    probe: null,
    known: { control: "accepted", probeRejection: e.probeRejection },
    hostAcceptedRecently: false,
  });
  assert.deepEqual(later, {
    acceptedOrdinary: "session",
    control: "accepted",
    probeRejection: e.probeRejection,
  });
  const viaHost = serverEvidenceOf({
    replies: new Map(),
    control: "postmaster@x.test",
    probe: null,
    known: undefined,
    hostAcceptedRecently: true,
  });
  assert.equal(viaHost.acceptedOrdinary, "host");
});

void test("session recipients: control first unless known or asked anyway, then the probe, then the addresses", () => {
  const c = "postmaster@x.test";
  assert.deepEqual(sessionRecipients(["a@x.test"], c, "zz@x.test", false), [c, "zz@x.test", "a@x.test"]);
  assert.deepEqual(sessionRecipients(["a@x.test"], c, null, true), ["a@x.test"]);
  assert.deepEqual(sessionRecipients([c, "a@x.test"], c, null, false), [c, "a@x.test"]);
});

void test("settling an address: its decided reply, else the session's failure with the server's retry hint", () => {
  const provider = { acceptsAllAtRcpt: false };
  const accepted = settleAddress({
    decided: { verdict: { kind: "accepted" }, evidence: "rule accepted: RCPT 250", reply: OK },
    failure: null,
    catchAll: "catchall",
    provider,
  });
  assert.equal(accepted.status, "catchall");
  assert.match(accepted.evidence, /probe accepted/);
  const grey = r(451, "4.7.1 Greylisted, please try again in 120 seconds");
  const unanswered = settleAddress({
    decided: undefined,
    failure: { reason: "greylisted", reply: grey },
    catchAll: "undecided",
    provider,
  });
  assert.deepEqual(
    [unanswered.status, unanswered.unknownReason, unanswered.retryAfterMs],
    ["unknown", "greylisted", 120_000],
  );
  assert.match(unanswered.evidence, /^session: greylisted after 451/);
});
