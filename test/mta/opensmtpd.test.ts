// The engine against a real OpenSMTPD (opensmtpd 6.8, unpacked beside Postfix by
// scripts/mta-lab.sh): a virtual domain whose users are a table; a name missing from it gets
// "524 5.2.4 Mailing list expansion problem: <x@domain>" — a reply that names no mailbox.
// OpenSMTPD does not offer PIPELINING; `smtp limit max-rcpt 20` answers the 21st RCPT of a
// transaction "451 4.5.3 Too many recipients: Too many recipients" (451, not 452). A second
// listener offers STARTTLS whose handshake always fails (Debian 12's 6.8.0p2 under OpenSSL 3).
import assert from "node:assert/strict";
import type { Lab } from "./support/lab.ts";
import { commonScenarios, defineMtaSuite, type Scenario } from "./support/suite.ts";

function scenarios(lab: Lab): Scenario[] {
  const tls = lab.opensmtpdTls.domain;
  return [
    ...commonScenarios("opensmtpd", lab.opensmtpd, "524 5.2.4 Mailing list expansion problem"),
    {
      name: "opensmtpd: STARTTLS offered but every handshake fails (TLS alert 80) → answered in plaintext",
      run: ({ engine }) =>
        engine.verifyGroup(tls, [`alice@${tls}`, `nobody.here@${tls}`, `user01@${tls}`, `ghost01@${tls}`]),
      check: (results) => {
        for (const r of results) assert.equal(r.hostName, lab.opensmtpdTls.host, r.email);
      },
      notes: (_results, lines) => {
        const failed = lines.filter((l) => /disconnected reason="io-error: .*SSL/.test(l)).length;
        return `${failed.toString()} failed TLS handshake(s)`;
      },
    },
  ];
}

await defineMtaSuite({
  title: "OpenSMTPD",
  log: (lab) => lab.opensmtpd.log,
  dialect: {
    opened: /smtp connected address=127\.0\.0\.1 /,
    closed: /smtp disconnected /,
    notable: /smtp disconnected|failed-command|tls|SSL|pipelin|too many/i,
  },
  forbidden: [
    // OpenSMTPD's own words (smtp_session.c) for pipelining where it is not offered and for its error limit.
    { pattern: /Pipelining not supported/i, what: "pipelining where it is not offered" },
    { pattern: /Too many consecutive errors/i, what: "too many errors" },
  ],
  normalize: (line) =>
    line
      .replace(/^[0-9a-f]{16} /, "")
      .replace(/<[^<>@\s]+@/g, "<…@")
      .replace(/ address=\S+ host=\S+/, ""),
  scenarios,
});
