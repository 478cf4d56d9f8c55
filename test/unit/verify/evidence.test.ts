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

void test("an unrecognised rejection alike the probe's, from a server that takes our mail → missing", () => {
  const probe = { address: "zz9@x.test", reply: UNROUTEABLE };
  const withControl = decideReply("a@x.test", UNROUTEABLE, {
    ...none,
    control: "accepted",
    probeRejection: probe,
  });
  assert.equal(withControl.verdict.kind, "mailbox_missing");
  assert.match(withControl.evidence, /^evidence: .*postmaster accepted; probe rejected alike/);
  // An ordinary acceptance shows it as well as postmaster does, in this session or recently on this host.
  for (const where of ["session", "host"] as const) {
    const d = decideReply("a@x.test", UNROUTEABLE, {
      ...none,
      acceptedOrdinary: where,
      probeRejection: probe,
    });
    assert.equal(d.verdict.kind, "mailbox_missing", where);
    assert.match(d.evidence, /accepted an ordinary recipient .*; probe rejected alike$/);
  }
  // Evidence never decides a 4xx.
  const grey = decideReply("a@x.test", r(450, "Unrouteable address"), {
    ...none,
    control: "accepted",
    probeRejection: probe,
  });
  assert.equal(grey.verdict.kind, "unknown");
});

void test("an accepted recipient alone is no evidence: a per-user refusal stays unknown", () => {
  // Barracuda answers an unknown user with its cuda_nsu line (smtp-field-manual); a bare "550 Blocked" for one
  // recipient of a server that took another is a refusal of us, not "no such mailbox" (the old rule said missing).
  const probe = {
    address: "zz9@x.test",
    reply: r(550, "cuda_nsu 5.1.1 <zz9@x.test> Recipient address rejected: User unknown"),
  };
  const blocked = decideReply("a@x.test", r(550, "Blocked"), {
    acceptedOrdinary: "session",
    control: "accepted",
    probeRejection: probe,
  });
  assert.deepEqual(blocked.verdict, { kind: "unknown", reason: "unclassified_rejection" });
  assert.match(blocked.evidence, /^no evidence: .*the probe was not rejected alike/);
  // Without a probe rejection to compare with, nothing decides either.
  const noProbe = decideReply("a@x.test", UNROUTEABLE, {
    ...none,
    acceptedOrdinary: "session",
    control: "accepted",
  });
  assert.deepEqual(noProbe.verdict, { kind: "unknown", reason: "unclassified_rejection" });
  assert.match(noProbe.evidence, /^no evidence: .*no rejection of the probe/);
  // Mimecast's personal block list has a rule of its own: recognised, never left to evidence.
  const mimecast = decideReply(
    "a@x.test",
    r(
      550,
      "Envelope blocked - User Entry - https://community.mimecast.com/docs/DOC-1369#550 [gz1Vvz1VN9ikuIVSF81-Wg.au11]",
    ),
    {
      acceptedOrdinary: "session",
      control: "accepted",
      probeRejection: {
        address: "zz9@x.test",
        reply: r(
          550,
          "Invalid Recipient - https://community.mimecast.com/docs/DOC-1369#550 [fTJx9bYQOlq2Dg.uk1]",
        ),
      },
    },
  );
  assert.deepEqual(mimecast.verdict, { kind: "unknown", reason: "recipient_blocks_sender" });
  assert.match(mimecast.evidence, /^rule recipient_blocks_sender: RCPT 550/);
});

void test("probe rejected alike, but nothing shows the server takes our mail → unknown", () => {
  const probe = { address: "zz9@x.test", reply: UNROUTEABLE };
  const refused = decideReply("a@x.test", UNROUTEABLE, {
    ...none,
    control: "rejected",
    probeRejection: probe,
  });
  assert.deepEqual(refused.verdict, { kind: "unknown", reason: "unclassified_rejection" });
  assert.match(refused.evidence, /^no evidence: .*postmaster rejected too/);
  const controlUnknown = decideReply("a@x.test", UNROUTEABLE, { ...none, probeRejection: probe });
  assert.deepEqual(controlUnknown.verdict, { kind: "unknown", reason: "unclassified_rejection" });
  assert.match(controlUnknown.evidence, /nothing shows the server takes our mail/);
});

void test("alike means the same enhanced code too, and ignores per-reply ids", () => {
  const takes: ServerEvidence = { acceptedOrdinary: "session", control: "accepted", probeRejection: null };
  // 5.4.310 and 5.4.316 both vanish from the text as "ids"; the enhanced code still tells them apart.
  const differs = decideReply("a@x.test", r(550, "5.4.310 Unrouteable address"), {
    ...takes,
    probeRejection: { address: "zz9@x.test", reply: r(550, "5.4.316 Unrouteable address") },
  });
  assert.deepEqual(differs.verdict, { kind: "unknown", reason: "unclassified_rejection" });
  assert.match(differs.evidence, /the probe was not rejected alike/);
  // Trace ids differ from reply to reply: still alike.
  const ids = decideReply(
    "a@x.test",
    r(550, "Unrouteable address <a@x.test> [gz1Vvz1VN9ikuIVSF81-Wg.au11]"),
    {
      ...takes,
      probeRejection: {
        address: "q8w7e6r5t4@x.test",
        reply: r(550, "Unrouteable address <q8w7e6r5t4@x.test> [fTJx9bYQOlq2Dg.uk1]"),
      },
    },
  );
  assert.equal(ids.verdict.kind, "mailbox_missing");
});

void test("recognised no-such-user wordings are invalid by their rule, with no probe at all", () => {
  for (const [code, text] of [
    [550, "No Such User Here"],
    [511, "sorry, no mailbox here by that name (#5.1.1 - chkuser)"],
    [
      554,
      "delivery error: dd This user doesn't have a yahoo.com account (a@x.test) [0] - mta1002.mail.ir2.yahoo.com",
    ],
  ] as const) {
    const d = decideReply("a@x.test", r(code, text), none);
    assert.equal(d.verdict.kind, "mailbox_missing", text);
    assert.match(d.evidence, /^rule missing_text: /, text);
  }
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
  assert.ok(
    !sameReply(
      r(550, "5.4.310 Unrouteable address"),
      "a@x.test",
      r(550, "5.4.316 Unrouteable address"),
      "b@x.test",
    ),
  );
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
