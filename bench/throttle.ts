// A provider's RCPT quota per client IP, as Gmail, Yahoo and Outlook.com keep one across all their
// mail servers: a 10,000-address task in which every Google server shares one throttle of 150
// RCPTs per client IP per 10 s (an hour compressed 360×), answered beyond it with Gmail's
// "421 4.7.0 Try again later, closing connection." and a close. VERIFY_RETRY_DELAYS is
// compressed 100× to 3, 6, 12 s as in batch.ts's retry world, the unreachable schedule to 0.3,
// 1.2 s; one in-process worker role (WORKER_CONCURRENCY 16, SMTP_MAX_CONNECTIONS_PER_HOST 2), on
// PGlite and (with BENCH_DATABASE_URL) PostgreSQL, each run on a world of its own (a provider's
// window outlives a task, so a shared world would start the second run throttled).
//
// The world: generateMixedWorld with NO_HOLDUPS_MIX (nothing else holds a domain back) on a seed
// no other bench or test uses, 300 domains of 30-37 addresses, the first 10,000 addresses. Its
// Google-hosted domains are kept on Google, in list order, until about THROTTLED_TARGET addresses
// (the provider's size in the real measurement this world reproduces); the later ones move to a
// Postfix server of their own (same mailboxes, so the same truth), so the provider's share stays
// what was measured.
//
// The quota bound: the provider's addresses ÷ its allowed rate (maxRcpts per windowMs). A
// verifier that answers every one of them needs at least that long, and longer for the RCPTs it
// spends on controls (postmaster@, a random catch-all probe); the first window's burst could
// shave one window off. Wall ÷ bound near 1 with no unknown among them is the goal (the engine
// learns the provider's pace from its first refusal: docs/pacing.md, with the figures before it).
// Run: npm run bench throttle (--pglite-only / --postgres-only pick one engine).
import { createWorkerRole } from "../src/app/worker-role.ts";
import type { Database } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { waitForTaskFinished, worldEnv } from "../test/support/batch.ts";
import {
  createExpectation,
  generateMixedWorld,
  NO_HOLDUPS_MIX,
  startMailWorld,
  type DomainSpec,
  type MailWorld,
  type ThrottleSpec,
  type WorldSpec,
} from "../test/support/mail-world/index.ts";
import { createTestContext } from "../test/support/test-app.ts";
import { benchEngines } from "./support/bench-engines.ts";

const LATENCY_MS = 20;
const CONCURRENCY = 16;
const PER_HOST = 2;
const SEED = 4871;
const THROTTLED_TARGET = 870;
const RETRY_DELAYS_S = [3, 6, 12];
const QUOTA: ThrottleSpec = { name: "gmail", maxRcpts: 150, windowMs: 10_000, reply: "gmail" };

const generated = generateMixedWorld({
  seed: SEED,
  domains: 300,
  addressesPerDomain: [30, 37],
  latencyMs: LATENCY_MS,
  mix: { ...NO_HOLDUPS_MIX },
});
const addresses = generated.addresses.slice(0, 10_000);

const domainOf = (address: string): string => address.slice(address.lastIndexOf("@") + 1);

function countByDomain(list: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const a of list) counts.set(domainOf(a), (counts.get(domainOf(a)) ?? 0) + 1);
  return counts;
}

const isGoogleHosted = (d: DomainSpec): boolean =>
  (d.dns ?? "mx") === "mx" && (d.hosts ?? []).some((h) => h.kind === "google");

/** The first Google domains in list order, while each brings the total closer to THROTTLED_TARGET. */
function throttledDomains(): Set<string> {
  const counts = countByDomain(addresses);
  const chosen = new Set<string>();
  let total = 0;
  for (const d of generated.spec.domains.filter(isGoogleHosted)) {
    const n = counts.get(d.name) ?? 0;
    if (total + n / 2 > THROTTLED_TARGET) break;
    if (n > 0) chosen.add(d.name);
    total += n;
  }
  return chosen;
}

/** The world: the chosen Google domains on throttled Google hosts, Google's others on their own. */
function worldSpec(throttled: ReadonlySet<string>): WorldSpec {
  const domains = generated.spec.domains.map((d): DomainSpec => {
    if (!isGoogleHosted(d)) return d;
    if (!throttled.has(d.name)) return { ...d, hosts: [{ name: `mx1.${d.name}`, kind: "postfix" }] };
    return { ...d, hosts: (d.hosts ?? []).map((h) => ({ ...h, throttle: QUOTA.name })) };
  });
  return { ...generated.spec, domains, throttles: [QUOTA] };
}

interface Row {
  email: string;
  status: string;
  unknown_reason: string | null;
  /** Seconds after the task was created. */
  at: number;
}

/** Posts the task, runs one worker role until it finishes, returns each job's final result. */
async function runTask(db: Database, world: MailWorld): Promise<{ wallMs: number; rows: Row[] }> {
  await migrate(db);
  const ctx = await createTestContext({
    db,
    env: worldEnv(world, {
      WORKER_CONCURRENCY: String(CONCURRENCY),
      SMTP_MAX_CONNECTIONS_PER_HOST: String(PER_HOST),
      SMTP_CONNECT_TIMEOUT_MS: "5000",
      SMTP_GREETING_TIMEOUT_MS: "10000",
      SMTP_COMMAND_TIMEOUT_MS: "10000",
      VERIFY_RETRY_DELAYS: RETRY_DELAYS_S.join(","),
      VERIFY_UNREACHABLE_RETRY_DELAYS: "0.3,1.2",
    }),
  });
  try {
    const user = await ctx.createUser(addresses.length);
    const started = performance.now();
    const taskId = await ctx.createTask(user, addresses);
    const role = createWorkerRole(ctx.services);
    role.start();
    try {
      await waitForTaskFinished(db, taskId, 900_000);
    } finally {
      await role.stop(5_000);
    }
    const wallMs = performance.now() - started;
    const { rows } = await db.query<Row>(
      `select j.email_address as email, v.status, v.unknown_reason,
              extract(epoch from v.created_at - t.created_at)::float8 as at
         from email_jobs j join email_verifications v on v.id = j.email_id join tasks t on t.id = j.task_id
        where j.task_id = $1`,
      [taskId],
    );
    return { wallMs, rows };
  } finally {
    await ctx.close();
  }
}

/** "a 3, b 1": how often each value occurs, most frequent first. */
function tally(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  const sorted = [...counts].sort((a, b) => b[1] - a[1]);
  return sorted.map(([v, n]) => `${v} ${n.toString()}`).join(", ") || "none";
}

function maxSessionsPerServerIp(world: MailWorld): number {
  let max = 0;
  for (const c of world.allCounters().values()) max = Math.max(max, c.maxConcurrent);
  return max;
}

interface Run {
  label: string;
  world: MailWorld;
  spec: WorldSpec;
  throttled: ReadonlySet<string>;
  wallMs: number;
  rows: Row[];
}

function report({ label, world, spec, throttled, wallMs, rows }: Run): void {
  const expect = createExpectation(spec);
  const mine = rows.filter((r) => throttled.has(domainOf(r.email)));
  const unknown = mine.filter((r) => r.status === "unknown");
  const answerable = unknown.filter((r) => expect(r.email).status !== "unknown");
  const right = rows.filter((r) => r.status === expect(r.email).status).length;
  const quota = world.throttleCounters(QUOTA.name);
  const asked = quota.accepted + quota.refusals;
  const boundS = mine.length / (QUOTA.maxRcpts / (QUOTA.windowMs / 1000));
  const lastS = Math.max(0, ...mine.map((r) => r.at));
  console.log(
    `  ${label.padEnd(9)} wall ${(wallMs / 1000).toFixed(1)} s   accuracy ${right}/${rows.length} ` +
      `(${((100 * right) / rows.length).toFixed(2)} %)   max sessions per server IP ${maxSessionsPerServerIp(world)}\n` +
      `            the provider's ${mine.length} addresses: ${unknown.length} unknown (${answerable.length} answerable; ` +
      `${tally(unknown.map((r) => r.unknown_reason ?? "-"))}), the last final at ${lastS.toFixed(1)} s\n` +
      `            its RCPTs: ${quota.accepted} accepted, ${quota.refusals} refused (${((100 * quota.refusals) / Math.max(1, asked)).toFixed(1)} % of ${asked}), ` +
      `most in one window ${quota.maxInWindow}\n` +
      `            quota bound ${boundS.toFixed(1)} s (${mine.length} addresses at ${QUOTA.maxRcpts} per ${QUOTA.windowMs / 1000} s)   ` +
      `wall/bound ${(wallMs / 1000 / boundS).toFixed(2)}`,
  );
}

export async function benchThrottle(): Promise<void> {
  const throttled = throttledDomains();
  const spec = worldSpec(throttled);
  const n = addresses.filter((a) => throttled.has(domainOf(a))).length;
  console.log(
    `\nthrottle: ${addresses.length.toLocaleString("en")} addresses, ${generated.spec.domains.length} domains, ` +
      `${throttled.size} of them on Google (${n} addresses) sharing one quota of ${QUOTA.maxRcpts} RCPTs ` +
      `per client IP per ${QUOTA.windowMs / 1000} s, then Gmail's 421; VERIFY_RETRY_DELAYS ${RETRY_DELAYS_S.join(",")} s`,
  );
  for (const [label, open] of benchEngines()) {
    const world = await startMailWorld(spec);
    try {
      const { db, done } = await open();
      try {
        const { wallMs, rows } = await runTask(db, world);
        report({ label, world, spec, throttled, wallMs, rows });
      } finally {
        await done();
      }
    } finally {
      await world.close();
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchThrottle();
