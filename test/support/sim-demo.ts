// `npm run sim`: starts a small mail world covering every simulated behaviour, prints how to
// point mailprobe at it and what each sample address should verify as, then runs until
// SIGINT/SIGTERM (or `--seconds N`). `--dns-port N` and `--smtp-port N` choose its ports.

import { STOCK_REPLIES, startMailWorld } from "./mail-world/index.ts";
import type { MailWorld, WorldSpec } from "./mail-world/index.ts";

const SPAMHAUS =
  "5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/127.0.0.1";

const DEMO: WorldSpec = {
  latencyMs: 20,
  domains: [
    {
      name: "acme.test",
      hosts: [
        { name: "mx1.acme.test", preference: 10, kind: "postfix" },
        { name: "mx2.acme.test", preference: 20, kind: "postfix" },
      ],
      mailboxes: ["alice", "bob.smith"],
      fullMailboxes: ["carol"],
      disabledMailboxes: ["dave"],
    },
    {
      name: "gsuite-co.test",
      hosts: [{ name: "aspmx.l.google.com", preference: 1, kind: "google" }],
      mailboxes: ["erin"],
    },
    {
      name: "contoso.test",
      hosts: [{ name: "contoso-test.mail.protection.outlook.com", preference: 0, kind: "microsoft365" }],
      mailboxes: ["frank"],
    },
    { name: "catchall.test", hosts: [{ name: "mx.catchall.test", kind: "exim" }], catchAll: true },
    {
      name: "greylist.test",
      hosts: [{ name: "mx.greylist.test" }],
      mailboxes: ["gina"],
      greylistSeconds: 60,
    },
    {
      name: "backup.test",
      hosts: [
        { name: "mx1.backup.test", preference: 10, refuseConnections: true },
        { name: "mx2.backup.test", preference: 20 },
      ],
      mailboxes: ["hank"],
    },
    { name: "refused.test", hosts: [{ name: "mx.refused.test", refuseConnections: true }] },
    { name: "listed.test", hosts: [{ name: "mx.listed.test", connectReply: { code: 554, text: SPAMHAUS } }] },
    {
      name: "rcpt-listed.test",
      hosts: [
        {
          name: "rcpt-listed-test.mail.protection.outlook.com",
          kind: "microsoft365",
          rcptReply: { code: 550, text: "5.7.606 Access denied, banned sending IP [127.0.0.1]" },
        },
      ],
    },
    { name: "dropper.test", hosts: [{ name: "mx.dropper.test", dropAfterBanner: true }] },
    // Holds its banner longer than SMTP_GREETING_TIMEOUT_MS's default (15 s), so a service started
    // with its defaults times out as the "expected" column says.
    { name: "tarpit.test", hosts: [{ name: "mx.tarpit.test", bannerDelayMs: 20_000 }] },
    {
      name: "strict.test",
      hosts: [
        { name: "mx.strict.test", kind: "proofpoint", maxRcptPerMessage: 3, rateLimitAfterConnections: 20 },
      ],
      mailboxes: ["ivy", "jack", "kim", "leo"],
    },
    { name: "bare.test", dns: "a_only", hosts: [{ name: "bare.test", kind: "generic" }], mailboxes: ["mia"] },
    { name: "nomail.test", dns: "null_mx" },
    { name: "ghost.test", dns: "nxdomain" },
    { name: "parked.test", dns: "no_records" },
    { name: "broken-dns.test", dns: "servfail" },
    { name: "slow-dns.test", dns: "timeout" },
    { name: "dangling.test", hosts: [{ name: "mx.dangling.test", hasAddress: false }] },
    // Stock behaviours of real mail software.
    {
      name: "limits.test",
      hosts: [{ name: "mx.limits.test", postfixErrorLimits: true }],
      mailboxes: ["nora"],
    },
    {
      name: "tls-only.test",
      hosts: [{ name: "mx.tls-only.test", startTls: "require" }],
      mailboxes: ["olga"],
    },
    {
      name: "postgrey.test",
      hosts: [{ name: "mx.postgrey.test" }],
      mailboxes: ["pete"],
      greylistSeconds: 300,
      greylistStyle: "postgrey",
    },
    {
      name: "rbl-trap.test",
      hosts: [{ name: "mx.rbl-trap.test", blockExceptPostmaster: STOCK_REPLIES.spamhausBlock }],
      mailboxes: ["quinn"],
    },
    { name: "openbsd.test", hosts: [{ name: "mail.openbsd.test", kind: "opensmtpd" }], mailboxes: ["rita"] },
    {
      name: "exchange-onprem.test",
      hosts: [{ name: "exchange.exchange-onprem.test", kind: "exchange", startTls: "offer" }],
      mailboxes: ["sam"],
    },
  ],
};

const SAMPLES = [
  "alice@acme.test",
  "bob.smith@acme.test",
  "carol@acme.test",
  "dave@acme.test",
  "nobody@acme.test",
  "erin@gsuite-co.test",
  "nobody@gsuite-co.test",
  "frank@contoso.test",
  "nobody@contoso.test",
  "anything@catchall.test",
  "gina@greylist.test",
  "hank@backup.test",
  "x@refused.test",
  "x@listed.test",
  "x@rcpt-listed.test",
  "x@dropper.test",
  "x@tarpit.test",
  "ivy@strict.test",
  "mia@bare.test",
  "x@nomail.test",
  "x@ghost.test",
  "x@parked.test",
  "x@broken-dns.test",
  "x@slow-dns.test",
  "x@dangling.test",
  "nora@limits.test",
  "olga@tls-only.test",
  "pete@postgrey.test",
  "postmaster@postgrey.test",
  "quinn@rbl-trap.test",
  "postmaster@rbl-trap.test",
  "rita@openbsd.test",
  "nobody@openbsd.test",
  "nobody@exchange-onprem.test",
];

/** The number after `flag`, or undefined without the flag; throws when it is not one in [min, max]. */
function numberOption(argv: readonly string[], flag: string, min: number, max: number): number | undefined {
  const at = argv.indexOf(flag);
  if (at < 0) return undefined;
  const value = Number(argv[at + 1]);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new Error(`${flag} needs a whole number from ${String(min)} to ${String(max)}`);
  return value;
}

function table(rows: readonly string[][]): string {
  const widths = rows[0]?.map((_, col) => Math.max(...rows.map((r) => (r[col] ?? "").length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, col) => cell.padEnd(widths[col] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function describe(world: MailWorld): string {
  const dns = `${world.dns.host}:${world.dns.port.toString()}`;
  const hosts = [...world.allCounters().keys()].map((name) => [name, world.addressOf(name)]);
  const samples = SAMPLES.map((address) => {
    const e = world.expectation(address);
    return [address, e.status, e.unknownReason ?? ""];
  });
  return [
    "mail-world simulator is running (all replies delayed by 20 ms)",
    `  DNS  ${dns} (UDP and TCP)`,
    `  SMTP port ${world.smtpPort.toString()}, one loopback address per host`,
    "",
    "Point mailprobe at it:",
    `  DNS_SERVERS=${dns} SMTP_PORT=${world.smtpPort.toString()} SMTP_ALLOW_PRIVATE_HOSTS=true npm start`,
    "",
    table([["host", "address"], ...hosts]),
    "",
    table([["address", "expected", "unknown reason"], ...samples]),
    "",
    "Ctrl-C to stop.",
  ].join("\n");
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const seconds = numberOption(argv, "--seconds", 1, 86_400);
  // Chosen ports keep a service's DNS_SERVERS and SMTP_PORT the same from one run to the next;
  // without them the system picks free ones.
  const world = await startMailWorld(DEMO, {
    dnsPort: numberOption(argv, "--dns-port", 1, 65_535),
    smtpPort: numberOption(argv, "--smtp-port", 1, 65_535),
  });
  console.log(describe(world));
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
    if (seconds !== undefined) setTimeout(resolve, seconds * 1000).unref();
  });
  await world.close();
  console.log("mail-world stopped");
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
