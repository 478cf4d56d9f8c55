// The engine against a simulated world with every stock behaviour it models switched on:
// Postfix error limits, per-connection recipient caps, STARTTLS offered and required, greylisting
// (generic, with a hint, postgrey's wording), RBLs that exempt postmaster, stock unknown-user
// wordings (Exim, OpenSMTPD, IronPort), plus the classic mix (catch-all, null MX, refused hosts…)
// and the overlays: per-user sender blocks, a recipient whose RCPT gets a 421 or a drop,
// Gmail's per-recipient 450 4.2.1, and tenant domains on one multi-tenant front-end IP.
// Prints accuracy against the world's ground truth, the unknown rate (and how much of it the
// world makes unknowable), real mailboxes called invalid, connections per address and the most
// concurrent sessions any host saw — for a batch run (every domain as one group, 16 at a time)
// and for 60 concurrent single verifications of one domain.
// Run: npm run bench world
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { createEngine, type Engine, type VerificationResult } from "../src/verify/index.ts";
import { generateMixedWorld, startMailWorld, type MailWorld } from "../test/support/mail-world/index.ts";
import { withinBudget } from "./support/budget.ts";

const LATENCY_MS = 20;
const CONCURRENCY = 16;
const PER_HOST = 2;
const BUDGET_MS = 240_000;

const generated = generateMixedWorld({
  seed: 909,
  domains: 160,
  addressesPerDomain: [4, 40],
  latencyMs: LATENCY_MS,
  roleAddressShare: 0.1,
  mix: {
    postfix_error_limits: 8,
    rcpt_per_connection: 4,
    starttls_offer: 6,
    starttls_require: 4,
    greylist_postgrey: 2,
    greylist_hint: 2,
    rbl_except_postmaster: 2,
    block_except_postmaster_silent: 1,
    stock_unknown_user: 8,
    opensmtpd: 3,
    tarpit: 0,
    dns_timeout: 0,
    rate_limit: 0,
  },
});

function engineFor(world: MailWorld): Engine {
  return createEngine({
    dnsServers: [`${world.dns.host}:${world.dns.port.toString()}`],
    smtpPort: world.smtpPort,
    dnsTimeoutMs: 1000,
    dnsTries: 1,
    smtpConnectTimeoutMs: 2000,
    smtpGreetingTimeoutMs: 5000,
    smtpCommandTimeoutMs: 5000,
    smtpHeloName: "bench.mailprobe.test",
    smtpMailFrom: "bounce@mailprobe.test",
    maxSessionsPerHost: PER_HOST,
    smtpAllowPrivateHosts: true,
  });
}

interface Score {
  right: number;
  total: number;
  unknown: number;
  unknowable: number;
  avoidableUnknown: number;
  realCalledInvalid: number;
  /** Addresses the world makes undecidable (a sender block, a server refusing us) called invalid. */
  unknowableCalledInvalid: number;
  wrong: string[];
}

function score(world: MailWorld, results: readonly VerificationResult[]): Score {
  const s: Score = {
    right: 0,
    total: 0,
    unknown: 0,
    unknowable: 0,
    avoidableUnknown: 0,
    realCalledInvalid: 0,
    unknowableCalledInvalid: 0,
    wrong: [],
  };
  for (const r of results) {
    const truth = world.expectation(r.email);
    s.total++;
    if (truth.status === "unknown") s.unknowable++;
    if (r.status === "unknown") {
      s.unknown++;
      if (truth.status !== "unknown") s.avoidableUnknown++;
    }
    if (r.status === "invalid" && (truth.status === "valid" || truth.status === "catchall"))
      s.realCalledInvalid++;
    if (r.status === "invalid" && truth.status === "unknown") s.unknowableCalledInvalid++;
    if (r.status === truth.status) s.right++;
    else if (s.wrong.length < 8)
      s.wrong.push(
        `${r.email}: ${r.status}/${r.unknownReason ?? "-"} expected ${truth.status}/${truth.unknownReason ?? "-"} (${r.evidence})`,
      );
  }
  return s;
}

function hostFigures(world: MailWorld): { connections: number; maxPerHost: number; violations: number } {
  let connections = 0;
  let maxPerHost = 0;
  let violations = 0;
  for (const c of world.allCounters().values()) {
    connections += c.connections;
    maxPerHost = Math.max(maxPerHost, c.maxConcurrent);
    violations += c.violations.length;
  }
  return { connections, maxPerHost, violations };
}

const pct = (n: number, d: number): string => `${((100 * n) / Math.max(1, d)).toFixed(2)} %`;

function printScore(label: string, s: Score, world: MailWorld, ms: number): void {
  const h = hostFigures(world);
  console.log(
    `  ${label}: ${s.right}/${s.total} right (${pct(s.right, s.total)}), unknown ${pct(s.unknown, s.total)} ` +
      `(world makes ${pct(s.unknowable, s.total)} unknowable; ${s.avoidableUnknown} avoidable), ` +
      `real mailboxes called invalid ${s.realCalledInvalid}, undecidable called invalid ${s.unknowableCalledInvalid}\n` +
      `    ${(h.connections / Math.max(1, s.total)).toFixed(3)} connections/address, max concurrent per server IP ${h.maxPerHost}, ` +
      `protocol violations seen by hosts ${h.violations}, ${(ms / 1000).toFixed(1)} s`,
  );
  for (const w of s.wrong) console.log(`    wrong: ${w}`);
}

async function batchRun(world: MailWorld): Promise<void> {
  const byDomain = new Map<string, string[]>();
  for (const a of generated.addresses) {
    const d = a.slice(a.lastIndexOf("@") + 1);
    byDomain.set(d, [...(byDomain.get(d) ?? []), a]);
  }
  world.resetCounters();
  const engine = engineFor(world);
  const queue = [...byDomain];
  const results: VerificationResult[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
        results.push(...(await engine.verifyGroup(next[0], next[1])));
      }
    }),
  );
  const ms = performance.now() - started;
  await engine.close();
  printScore(
    `batch (${byDomain.size} domains, ${CONCURRENCY} groups at a time)`,
    score(world, results),
    world,
    ms,
  );
}

async function realtimeBurst(): Promise<void> {
  const users = Array.from({ length: 30 }, (_, i) => `user${i.toString()}`);
  const world = await startMailWorld({
    latencyMs: LATENCY_MS,
    domains: [
      { name: "burst.test", hosts: [{ name: "mx.burst.test", postfixErrorLimits: true }], mailboxes: users },
    ],
  });
  try {
    const engine = engineFor(world);
    const addresses = Array.from({ length: 60 }, (_, i) =>
      i % 2 === 0 ? `${users[i % 30]!}@burst.test` : `ghost${i.toString()}@burst.test`,
    );
    const started = performance.now();
    const results = await Promise.all(addresses.map((a) => engine.verifyOne(a)));
    const ms = performance.now() - started;
    await engine.close();
    printScore("60 concurrent realtime verifications of one domain", score(world, results), world, ms);
  } finally {
    await world.close();
  }
}

async function run(): Promise<void> {
  console.log(
    `\nengine world: ${generated.addresses.length} addresses, ${generated.spec.domains.length} domains, ` +
      `${LATENCY_MS} ms per reply, ${PER_HOST} sessions per host`,
  );
  const world = await startMailWorld(generated.spec);
  try {
    await batchRun(world);
  } finally {
    await world.close();
  }
  await realtimeBurst();
}

export async function benchEngineWorld(): Promise<void> {
  await withinBudget(BUDGET_MS, run);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchEngineWorld();
}
