// The mail-world simulator's provider-wide RCPT quotas per client IP (WorldSpec.throttles): one
// sliding window per (throttle, client IP), shared by every host naming the throttle, answered in
// the provider's words. Raw SMTP over sockets bound to several loopback source addresses, so
// each test is a client IP of its own.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { startMailWorld } from "../support/mail-world/index.ts";
import type { MailWorld, WorldSpec } from "../support/mail-world/index.ts";
import { RawSmtp } from "../support/raw-smtp.ts";

const WINDOW_MS = 2000;
const GMAIL_A = "gmail-smtp-in.l.google.test";
const GMAIL_B = "alt1.gmail-smtp-in.l.google.test";
const YAHOO = "mta5.am0.yahoodns.test";
const OUTLOOK = "outlook-test.olc.protection.outlook.test";
const PLAIN = "mx.plain.test";

const GMAIL_421 = /^4\.7\.0 Try again later, closing connection\. \S+ - gsmtp$/;

const SPEC: WorldSpec = {
  throttles: [
    { name: "gmail", maxRcpts: 5, windowMs: WINDOW_MS, reply: "gmail" },
    { name: "yahoo", maxRcpts: 2, windowMs: 60_000, reply: "yahoo" },
    { name: "outlook", maxRcpts: 2, windowMs: 60_000, reply: "outlook" },
  ],
  domains: [
    {
      name: "gmail.test",
      hosts: [
        { name: GMAIL_A, preference: 5, kind: "google", throttle: "gmail" },
        { name: GMAIL_B, preference: 10, kind: "google", throttle: "gmail" },
      ],
      mailboxes: ["a", "b", "c", "d", "e", "f", "g", "h"],
    },
    // Another customer of the same provider: its RCPTs draw on the same quota.
    {
      name: "workspace.test",
      hosts: [{ name: GMAIL_B, kind: "google", throttle: "gmail" }],
      mailboxes: ["a"],
    },
    {
      name: "yahoo.test",
      hosts: [{ name: YAHOO, kind: "yahoo", throttle: "yahoo" }],
      mailboxes: ["a", "b", "c"],
    },
    {
      name: "outlook.test",
      hosts: [{ name: OUTLOOK, kind: "outlook", throttle: "outlook" }],
      mailboxes: ["a", "b", "c"],
    },
    { name: "plain.test", hosts: [{ name: PLAIN }], mailboxes: ["a"] },
  ],
};

let world: MailWorld;

before(async () => {
  world = await startMailWorld(SPEC);
});

after(async () => {
  await world.close();
});

/** A session from `from` with its transaction open: banner, EHLO and MAIL FROM answered. */
async function transaction(host: string, from: string): Promise<RawSmtp> {
  const client = await RawSmtp.open(world, host, { localAddress: from });
  assert.equal((await client.reply()).code, 220);
  assert.equal((await client.command("EHLO verifier.test")).code, 250);
  assert.equal((await client.command("MAIL FROM:<probe@verifier.test>")).code, 250);
  return client;
}

/** The codes of these RCPTs, one at a time, on a new session from `from`. */
async function rcptCodes(host: string, from: string, recipients: readonly string[]): Promise<number[]> {
  const client = await transaction(host, from);
  const codes: number[] = [];
  for (const r of recipients) codes.push((await client.command(`RCPT TO:<${r}>`)).code);
  client.destroy();
  return codes;
}

// ---------------------------------------------------------------------------------------------

describe("provider-wide RCPT quotas per client IP", () => {
  test("RCPTs to every host of a throttle count together; the one over the quota gets Gmail's 421 and a close", async () => {
    world.resetCounters();
    // An unknown user counts as much as a mailbox: the provider meters the asking.
    assert.deepEqual(await rcptCodes(GMAIL_A, "127.0.0.1", ["a@gmail.test", "zz@gmail.test"]), [250, 550]);
    const client = await transaction(GMAIL_B, "127.0.0.1");
    for (const r of ["b@gmail.test", "c@gmail.test", "a@workspace.test"]) {
      assert.equal((await client.command(`RCPT TO:<${r}>`)).code, 250);
    }
    const refusal = await client.command("RCPT TO:<d@gmail.test>");
    assert.equal(refusal.code, 421);
    assert.match(refusal.text, GMAIL_421);
    await client.waitClosed();
    // The other server of the provider knows: the quota is the provider's, not the host's.
    const other = await transaction(GMAIL_A, "127.0.0.1");
    assert.equal((await other.command("RCPT TO:<d@gmail.test>")).code, 421);
    await other.waitClosed();
    assert.deepEqual(world.throttleCounters("gmail"), {
      accepted: 5,
      refusals: 2,
      maxInWindow: 5,
      byClient: { "127.0.0.1": { accepted: 5, refusals: 2, maxInWindow: 5 } },
    });
  });

  test("resetCounters zeroes the counts but not the window: the client stays refused", async () => {
    world.resetCounters();
    assert.deepEqual(world.throttleCounters("gmail"), {
      accepted: 0,
      refusals: 0,
      maxInWindow: 5,
      byClient: { "127.0.0.1": { accepted: 0, refusals: 0, maxInWindow: 5 } },
    });
    assert.deepEqual(await rcptCodes(GMAIL_A, "127.0.0.1", ["e@gmail.test"]), [421]);
  });

  test("another client IP has a quota of its own; a pipelined write stops at the 421", async () => {
    world.resetCounters();
    const client = await transaction(GMAIL_A, "127.0.0.2");
    client.write(["a", "b", "c", "d", "e", "f", "g"].map((l) => `RCPT TO:<${l}@gmail.test>\r\n`).join(""));
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) codes.push((await client.reply()).code);
    assert.deepEqual(codes, [250, 250, 250, 250, 250, 421]);
    await client.waitClosed();
    await assert.rejects(client.reply(), /connection closed/);
    // The RCPT behind the 421 was never processed, so it is neither counted nor refused.
    assert.deepEqual(world.throttleCounters("gmail").byClient["127.0.0.2"], {
      accepted: 5,
      refusals: 1,
      maxInWindow: 5,
    });
  });

  test("the window slides: each RCPT frees its place windowMs after it got through", async () => {
    const from = "127.0.0.3";
    assert.deepEqual(
      await rcptCodes(GMAIL_A, from, ["a@gmail.test", "b@gmail.test", "c@gmail.test"]),
      [250, 250, 250],
    );
    const firstDone = performance.now();
    await sleep(WINDOW_MS / 2);
    assert.deepEqual(
      await rcptCodes(GMAIL_B, from, ["d@gmail.test", "e@gmail.test", "f@gmail.test"]),
      [250, 250, 421],
    );
    // The first three have left the window, the last two (half a window younger) have not: a
    // fixed window would now admit five again, a sliding one three.
    await sleep(firstDone + WINDOW_MS + 150 - performance.now());
    const codes = await rcptCodes(
      GMAIL_B,
      from,
      ["f", "g", "h", "a"].map((l) => `${l}@gmail.test`),
    );
    assert.deepEqual(codes, [250, 250, 250, 421]);
    assert.deepEqual(world.throttleCounters("gmail").byClient[from], {
      accepted: 8,
      refusals: 2,
      maxInWindow: 5,
    });
  });

  test("Yahoo's [TSS04] names the client IP and closes the connection", async () => {
    const client = await transaction(YAHOO, "127.0.0.4");
    assert.equal((await client.command("RCPT TO:<a@yahoo.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<b@yahoo.test>")).code, 250);
    const { code, text } = await client.command("RCPT TO:<c@yahoo.test>");
    assert.deepEqual(
      { code, text },
      {
        code: 421,
        text:
          "4.7.0 [TSS04] Messages from 127.0.0.4 temporarily deferred due to unexpected volume or user " +
          "complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes",
      },
    );
    await client.waitClosed();
  });

  test("Outlook.com's 451 4.7.650 refuses each RCPT over the quota and keeps the connection", async () => {
    const client = await transaction(OUTLOOK, "127.0.0.5");
    assert.equal((await client.command("RCPT TO:<a@outlook.test>")).code, 250);
    assert.equal((await client.command("RCPT TO:<b@outlook.test>")).code, 250);
    const expected = {
      code: 451,
      text:
        "4.7.650 The mail server [127.0.0.5] has been temporarily rate limited due to IP reputation. " +
        "For e-mail delivery information, see https://aka.ms/postmaster (S775)",
    };
    for (const rcpt of ["c@outlook.test", "a@outlook.test"]) {
      const { code, text } = await client.command(`RCPT TO:<${rcpt}>`);
      assert.deepEqual({ code, text }, expected);
    }
    assert.equal((await client.command("NOOP")).code, 250);
    assert.ok(!client.isClosed);
    assert.equal((await client.command("QUIT")).code, 221);
    client.destroy();
    assert.deepEqual(world.throttleCounters("outlook").byClient["127.0.0.5"], {
      accepted: 2,
      refusals: 2,
      maxInWindow: 2,
    });
  });

  test("a host without a throttle is not metered", async () => {
    const codes = await rcptCodes(
      PLAIN,
      "127.0.0.4",
      Array.from({ length: 10 }, () => "a@plain.test"),
    );
    assert.deepEqual(
      codes,
      Array.from({ length: 10 }, () => 250),
    );
  });

  test("a host naming a throttle the world does not declare is refused at start", async () => {
    await assert.rejects(
      startMailWorld({ domains: [{ name: "x.test", hosts: [{ name: "mx.x.test", throttle: "gmial" }] }] }),
      /host "mx\.x\.test": no throttle "gmial" in WorldSpec\.throttles/,
    );
  });
});
