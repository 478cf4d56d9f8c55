// The engine against a real Postfix (Debian's postfix package, scripts/mta-lab.sh): a virtual
// mailbox domain with smtpd_recipient_limit 20, the stock error limits (soft 10, hard 20),
// reject_non_fqdn_helo_hostname, a check_recipient_access block on one mailbox; listeners that
// require STARTTLS, rate-limit recipients per client, and greylist (postgrey).
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import type { VerificationResult } from "../../src/verify/index.ts";
import { interleave, numbered, type Lab } from "./support/lab.ts";
import { commonScenarios, defineMtaSuite, recipientBlockScenario, type Scenario } from "./support/suite.ts";

/** Log lines of one smtpd listener (by its syslog_name in master.cf). */
const service = (syslogName: string): RegExp => new RegExp(` ${syslogName}/smtpd\\[\\d+\\]: `);
const ofService = (syslogName: string, lines: string[]): string[] =>
  lines.filter((l) => service(syslogName).test(l));
const connectFrom = / connect from \S+\[127\.0\.0\.1\]/;

function scenarios(lab: Lab): Scenario[] {
  const pf = lab.postfix.domain;
  const tls = lab.postfixTls.domain;
  const rate = lab.postfixRate.domain;
  const limit = lab.postfixRate.recipientRateLimit;
  const grey = lab.postfixGrey.domain;
  const delay = lab.postfixGrey.greylistDelaySeconds;
  // The greylisting scenario's first pass (its second pass is what gets scored).
  let firstPass: VerificationResult[] = [];
  const greylisted = (r: VerificationResult): boolean =>
    r.status === "unknown" && r.unknownReason === "greylisted";
  return [
    ...commonScenarios(
      "postfix",
      lab.postfix,
      "550 5.1.1 Recipient address rejected: User unknown in virtual mailbox table",
      "postfix",
    ),
    // access(5): an explicit "550 5.0.0 text" action is sent as is, with the "<address>: Recipient
    // address rejected: " prefix. (A "REJECT text" action would carry 5.7.1, which a reply rule
    // already calls policy; the generic 5.0.0 leaves the decision to the evidence rule.)
    recipientBlockScenario(
      "postfix",
      lab,
      lab.postfix,
      `550 5.0.0 Recipient address rejected: ${lab.recipientBlock.text}`,
    ),
    {
      name: "postfix: STARTTLS-required listener, 40 addresses (530 5.7.0 Must issue a STARTTLS command first)",
      run: ({ engine }) =>
        engine.verifyGroup(tls, interleave(numbered("user", 20, tls), numbered("ghost", 20, tls))),
      check: (_results, lines) => {
        const mine = ofService("postfix/tls-required", lines);
        const sessions = mine.filter((l) => connectFrom.test(l)).length;
        const secured = mine.filter((l) => /TLS connection established from/.test(l)).length;
        assert.ok(sessions > 0, "no session reached the STARTTLS-required listener");
        assert.equal(secured, sessions, "every session to the STARTTLS-required listener uses TLS");
      },
      notes: (_results, lines) => {
        const mine = ofService("postfix/tls-required", lines);
        const secured = mine.filter((l) => /TLS connection established from/.test(l)).length;
        return `${secured.toString()} session(s) with TLS`;
      },
    },
    {
      name: "postfix: non-FQDN HELO (504 5.5.2 Helo command rejected: need fully-qualified hostname) → unknown, never invalid",
      engine: { smtpHeloName: "probe" },
      run: ({ engine }) => engine.verifyGroup(pf, [`alice@${pf}`, `nobody.here@${pf}`, `user01@${pf}`]),
      want: () => () => "unknown",
      notes: (results) =>
        [...new Set(results.map((r) => `${r.status}/${String(r.unknownReason)}`))].join(", "),
    },
    {
      name: `postfix: postgrey (--delay=${delay.toString()}): unknown/greylisted first, right after the delay`,
      // A sender of its own per run: postgrey's triplets are (client /24, sender, recipient).
      engine: { smtpMailFrom: `verify+${Date.now().toString(36)}@lab.test` },
      run: async ({ engine }) => {
        const list = interleave(numbered("user", 5, grey), numbered("ghost", 5, grey));
        firstPass = await engine.verifyGroup(grey, list);
        await sleep((delay + 1) * 1000);
        return engine.verifyGroup(grey, list);
      },
      check: (_results, _lines, { truth }) => {
        const early = firstPass.filter((r) => r.status !== truth(r.email) && !greylisted(r));
        assert.deepEqual(
          early.map((r) => `${r.email}: ${r.status}/${String(r.unknownReason)}`),
          [],
          "first pass",
        );
        assert.ok(firstPass.some(greylisted), "postgrey greylisted nothing on the first pass");
      },
      notes: () => {
        const n = firstPass.filter(greylisted).length;
        const after = firstPass
          .map((r) => (r as { retryAfterMs?: number | null }).retryAfterMs)
          .find((v) => v != null);
        return `first pass: ${n.toString()} greylisted${after == null ? "" : ` (retry after ${after.toString()} ms)`}`;
      },
    },
    {
      name: `postfix: recipient rate limit ${limit.toString()}/min per client (450 4.7.1 Error: too many recipients from 127.0.0.1) → right or unknown/rate_limited`,
      run: ({ engine }) =>
        engine.verifyGroup(rate, interleave(numbered("user", 15, rate), numbered("ghost", 15, rate))),
      // Past the limit every RCPT on every connection gets the 450 for the rest of the minute:
      // nothing more is learnt, nothing may be answered wrongly.
      tolerate: (r) =>
        r.status === "unknown" &&
        (r.unknownReason === "rate_limited" || r.unknownReason === "temporary_failure"),
      check: (_results, lines) => {
        // A per-client rate limit is not a per-connection cap: reconnecting only collects more 450s.
        const empty = ofService("postfix/rate-limited", lines).filter((l) =>
          / disconnect from .* rcpt=0\/\d+/.test(l),
        );
        assert.ok(empty.length <= 1, `sessions that only collected rate-limit refusals: ${empty.join("\n")}`);
      },
      notes: (results) => {
        const unknown = results.filter((r) => r.status === "unknown");
        const reasons = [...new Set(unknown.map((r) => String(r.unknownReason)))].join(",");
        return `${unknown.length.toString()} unknown (${reasons || "-"})`;
      },
    },
  ];
}

await defineMtaSuite({
  title: "Postfix",
  log: (lab) => lab.postfix.log,
  dialect: {
    opened: connectFrom,
    closed: / disconnect from \S+\[127\.0\.0\.1\]/,
    notable:
      /improper command pipelining|too many errors|lost connection|timeout after|SSL_accept|TLS library problem|warning:|disconnect from|reject: /,
  },
  forbidden: [
    { pattern: /improper command pipelining/, what: "improper command pipelining" },
    { pattern: /too many errors/, what: "too many errors" },
  ],
  normalize: (line) =>
    line
      .replace(/^\w{3} [ \d]\d \d\d:\d\d:\d\d \S+ /, "")
      .replace(/\[\d+\]:/, ":")
      .replace(/ (NOQUEUE|[0-9A-F]{6,}): /, " ")
      .replace(/<[^<>@\s]+@/g, "<…@")
      .replace(/; from=<.*$/, "")
      .replace(/; to=<.*$/, "")
      .replace(/exceeded: \d+ from/, "exceeded: N from"),
  scenarios,
});
