// The engine against a real Exim (exim4-daemon-light 4.96, unpacked beside Postfix by
// scripts/mta-lab.sh) with Exim's stock RCPT ACL ("require verify = recipient": an unknown local
// part gets "550 Unrouteable address", a reply that names no mailbox), a `deny` on one mailbox,
// and recipients_max 20.
import { commonScenarios, defineMtaSuite, recipientBlockScenario } from "./support/suite.ts";

await defineMtaSuite({
  title: "Exim",
  log: (lab) => lab.exim.log,
  dialect: {
    opened: /SMTP connection from \[127\.0\.0\.1\](:\d+)? \(TCP\/IP connection count/,
    closed: /SMTP connection from .*\[127\.0\.0\.1\].* (closed by|lost)/,
    notable:
      /synchronization error|protocol error|too many|TLS error|lost|closed by|unexpected disconnection|incomplete transaction|rejected|no MAIL/,
  },
  forbidden: [
    // Exim's word for a client that pipelines where it may not.
    { pattern: /synchronization error/, what: "a pipelining (synchronization) error" },
    {
      pattern: /too many (syntax or protocol errors|unrecognized commands|nonmail commands)/,
      what: "too many errors",
    },
  ],
  normalize: (line) =>
    line
      .replace(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d /, "")
      .replace(/\]:\d+/g, "]")
      .replace(/<[^<>@\s]+@/g, "<…@")
      .replace(/ for .*$/, " for …")
      .replace(/ D=\d+s/, ""),
  scenarios: (lab) => [
    ...commonScenarios("exim", lab.exim, "550 Unrouteable address", "exim"),
    // An ACL `deny` with a message and no code: a bare 550, no enhanced code, words no reply
    // rule knows; the random probe gets "550 Unrouteable address".
    recipientBlockScenario("exim", lab, lab.exim, `550 ${lab.recipientBlock.text}`),
  ],
});
