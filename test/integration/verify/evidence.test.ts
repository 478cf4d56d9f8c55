// Evidence beats wording: unrecognised permanent rejections decided by what else the same
// server said (the probe rejected alike, and the server taking our mail), and the traps that
// must stay unknown: an RBL that exempts postmaster, a recipient's block of our sender.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Engine } from "../../../src/verify/engine.ts";
import { startMailWorld, type DomainSpec, type MailWorld } from "../../support/mail-world/index.ts";
import { engineFor } from "./helpers.ts";

const EXIM_UNROUTEABLE = { code: 550, text: "Unrouteable address" };
const OPENSMTPD_524 = { code: 524, text: "5.2.4 Mailing list expansion problem: <%a>" };
const QMAIL_ADDRESS_REJECTED = { code: 550, text: "#5.1.0 Address rejected." };
const BARRACUDA_BLOCKED = { code: 550, text: "permanent failure for one or more recipients (%a:blocked)" };
const MIMECAST_INVALID = {
  code: 550,
  text: "Invalid Recipient - https://community.mimecast.com/docs/DOC-1369#550",
};
const SPAMHAUS = {
  code: 554,
  text: "5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org",
};

const domains: DomainSpec[] = [
  {
    name: "exim.test",
    hosts: [{ name: "mx.exim.test", kind: "exim", unknownUserReply: EXIM_UNROUTEABLE }],
    mailboxes: ["bob"],
  },
  {
    name: "opensmtpd.test",
    hosts: [{ name: "mx.opensmtpd.test", kind: "opensmtpd", unknownUserReply: OPENSMTPD_524 }],
    mailboxes: ["bob"],
  },
  {
    name: "qmail.test",
    hosts: [{ name: "mx.qmail.test", kind: "generic", unknownUserReply: QMAIL_ADDRESS_REJECTED }],
    mailboxes: ["bob"],
  },
  {
    name: "rbl.test",
    hosts: [{ name: "mx.rbl.test", blockExceptPostmaster: SPAMHAUS }],
    mailboxes: ["bob"],
  },
  {
    name: "rbl-policy.test",
    hosts: [{ name: "mx.rbl-policy.test", blockExceptPostmaster: { code: 550, text: "5.7.1 Rejected" } }],
    mailboxes: ["bob"],
  },
  {
    name: "nopostmaster.test",
    hosts: [{ name: "mx.nopostmaster.test", unknownUserReply: EXIM_UNROUTEABLE }],
    rejectPostmaster: true,
    mailboxes: ["bob"],
  },
  // carol keeps our sender on her personal block list (Mimecast's "Envelope blocked - User Entry").
  {
    name: "mimecast.test",
    hosts: [{ name: "mx.mimecast.test", unknownUserReply: MIMECAST_INVALID }],
    mailboxes: ["bob", "carol"],
    senderBlockedMailboxes: ["carol"],
  },
  // carol's refusal names no reason, and differs from the unknown user's.
  {
    name: "gateway.test",
    hosts: [{ name: "mx.gateway.test", unknownUserReply: EXIM_UNROUTEABLE }],
    mailboxes: ["bob", "carol"],
    senderBlockedMailboxes: ["carol"],
    senderBlockReply: BARRACUDA_BLOCKED,
  },
  // Two domains on one MX host: what the host accepted for one counts for the other.
  { name: "shared-a.test", hosts: [{ name: "mx.shared.test" }], mailboxes: ["bob"] },
  {
    name: "shared-b.test",
    hosts: [{ name: "mx.shared.test" }],
    rejectPostmaster: true,
    unknownUserReply: EXIM_UNROUTEABLE,
    mailboxes: ["ann"],
  },
];

let world: MailWorld;
let engine: Engine;
before(async () => {
  world = await startMailWorld({ domains });
  engine = engineFor(world);
});
after(async () => {
  await engine.close();
  await world.close();
});

for (const [domain, wording] of [
  ["exim.test", "Exim's 550 Unrouteable address"],
  ["opensmtpd.test", "OpenSMTPD's 524 5.2.4 Mailing list expansion problem"],
  ["qmail.test", "550 #5.1.0 Address rejected"],
] as const) {
  void test(`${wording}: postmaster accepted and the probe rejected alike → invalid`, async () => {
    const fresh = engineFor(world);
    const ghost = await fresh.verifyOne(`ghost@${domain}`);
    await fresh.close();
    assert.equal(ghost.status, "invalid");
    assert.equal(ghost.unknownReason, null);
    assert.match(ghost.evidence, /^evidence: .*postmaster accepted; probe rejected alike/);
  });

  void test(`${wording}: probe rejected alike, an ordinary recipient accepted in the session → invalid`, async () => {
    const [bob, ghost] = await engine.verifyGroup(domain, [`bob@${domain}`, `ghost@${domain}`]);
    assert.equal(bob?.status, "valid");
    assert.equal(ghost?.status, "invalid");
    assert.match(ghost?.evidence ?? "", /accepted an ordinary recipient in this session/);
  });
}

void test("an RBL that exempts postmaster, naming the block: every address stays unknown", async () => {
  const results = await engineFor(world).verifyGroup("rbl.test", ["bob@rbl.test", "ghost@rbl.test"]);
  for (const r of results) {
    assert.equal(r.status, "unknown", r.email);
    assert.equal(r.unknownReason, "ip_blocklisted", r.email);
  }
});

void test("an RBL that exempts postmaster with a 5.7.1 policy code: unknown, never invalid", async () => {
  const results = await engineFor(world).verifyGroup("rbl-policy.test", [
    "bob@rbl-policy.test",
    "ghost@rbl-policy.test",
  ]);
  for (const r of results) {
    assert.equal(r.status, "unknown", r.email);
    assert.equal(r.unknownReason, "policy_rejection", r.email);
  }
});

void test("a recipient's block of our sender, on a server that takes our mail: unknown, never invalid", async () => {
  const e = engineFor(world);
  const [bob, carol, ghost] = await e.verifyGroup("mimecast.test", [
    "bob@mimecast.test",
    "carol@mimecast.test",
    "ghost@mimecast.test",
  ]);
  assert.equal(bob?.status, "valid");
  assert.deepEqual([carol?.status, carol?.unknownReason], ["unknown", "recipient_blocks_sender"]);
  assert.match(carol?.evidence ?? "", /^rule recipient_blocks_sender: /);
  assert.equal(ghost?.status, "invalid");
  // A refusal no rule knows, unlike the probe's: an accepted recipient alone is no evidence.
  const [bob2, carol2] = await e.verifyGroup("gateway.test", ["bob@gateway.test", "carol@gateway.test"]);
  await e.close();
  assert.equal(bob2?.status, "valid");
  assert.deepEqual([carol2?.status, carol2?.unknownReason], ["unknown", "unclassified_rejection"]);
  assert.match(carol2?.evidence ?? "", /^no evidence: .*the probe was not rejected alike/);
});

void test("postmaster rejected too: the server may be refusing us → unknown", async () => {
  const r = await engineFor(world).verifyOne("ghost@nopostmaster.test");
  assert.equal(r.status, "unknown");
  assert.equal(r.unknownReason, "unclassified_rejection");
  assert.match(r.evidence, /postmaster rejected too/);
});

void test("an ordinary recipient accepted earlier on the same MX host is evidence for its other domains", async () => {
  const e = engineFor(world);
  assert.equal((await e.verifyOne("bob@shared-a.test")).status, "valid");
  const ghost = await e.verifyOne("ghost@shared-b.test");
  await e.close();
  assert.equal(ghost.status, "invalid");
  assert.match(ghost.evidence, /recently on this host/);
  // Without that history the same reply decides nothing.
  const cold = engineFor(world);
  const unknown = await cold.verifyOne("ghost@shared-b.test");
  await cold.close();
  assert.equal(unknown.status, "unknown");
});

void test("rule-decided answers name their rule in the evidence", async () => {
  const r = await engine.verifyOne("bob@exim.test");
  assert.equal(r.status, "valid");
  assert.match(r.evidence, /^rule accepted: RCPT 250/);
});
