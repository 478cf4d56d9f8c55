// Fairness between tasks: does a small task wait for a big one queued before it, and what does
// letting it through cost the big one? One in-process worker pool (WORKER_CONCURRENCY 16,
// SMTP_MAX_CONNECTIONS_PER_HOST 2: the defaults), 20 ms per SMTP reply, on PGlite and (with
// BENCH_DATABASE_URL) PostgreSQL, a fresh database for every run.
//
// The world: task A, ~9,400 addresses over 280 generated domains of 30–37 addresses
// (NO_HOLDUPS_MIX: no retry waits, so a run measures the scheduling, not the retry schedule), and
// task B, 400 addresses at 10 domains of its own (40 each, ordinary mailboxes), on mail hosts no
// domain of A uses: B never waits for a host slot A holds, only for the worker pool. B comes in
// two shapes: each domain on a server IP of its own (B alone is one session's time, about as long
// as one of A's sessions), and the ten domains as tenants of two provider IPs (B alone is five
// rounds of sessions at the per-IP limit, the shape of a small company list at hosted mail). Runs:
//   A alone; then per shape: B alone;
//   A, then B from another user one second after A's list is queued;
//   the same with B from A's own user (two tasks of one user).
// No scheduler that lets running sessions finish can start B before A's sessions free their
// places: B waits for ten of A's sixteen to end, most of one of A's sessions. Where B alone is one
// such session, that wait alone is most of B's time again (the first shape's ratio shows this
// floor); where B alone is longer, the ratio shows what is left.
// A task's time is its finished_at − created_at (tasks table). Printed: B behind A / B alone
// (target ≤ 1.5×: the small task is not starved), A with B / A alone (target ≤ 1.10×: fairness
// costs the big task little), and the same-user small-task ratio (target ≤ 1.5×). The ratios
// are printed with PASS/over and never fail the run: timing is for reading, not asserting.
//
// `npx tsx bench/fairness.ts [--small] [--pglite-only | --postgres-only]`, or
// `npm run bench fairness`. `--small` shrinks A to ~1,000 addresses (30 domains) for a smoke test.
// Bounded: every run has a deadline; a task not finished by it is printed as such.
import { setTimeout as delay } from "node:timers/promises";
import { createWorkerRole } from "../src/app/worker-role.ts";
import type { Database } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { waitForTaskFinished, worldEnv } from "../test/support/batch.ts";
import {
  generateMixedWorld,
  NO_HOLDUPS_MIX,
  startMailWorld,
  type DomainSpec,
  type MailWorld,
} from "../test/support/mail-world/index.ts";
import { createTestContext } from "../test/support/test-app.ts";
import { benchEngines } from "./support/bench-engines.ts";

const LATENCY_MS = 20;
const CONCURRENCY = 16;
const PER_HOST = 2;
const SMALL_RUN = process.argv.includes("--small");
const BIG_DOMAINS = SMALL_RUN ? 30 : 280;
const SMALL_DOMAINS = 10;
const SMALL_PER_DOMAIN = 40;
/** Unknown local parts among a small-task domain's addresses. */
const SMALL_DEAD_PER_DOMAIN = 4;
const SMALL_AFTER_MS = 1_000;
const RUN_DEADLINE_MS = SMALL_RUN ? 90_000 : 180_000;
const SMALL_TARGET = 1.5;
const BIG_TARGET = 1.1;

const generated = generateMixedWorld({
  seed: 2026,
  domains: BIG_DOMAINS,
  addressesPerDomain: [30, 37],
  latencyMs: LATENCY_MS,
  mix: NO_HOLDUPS_MIX,
});
const bigList = generated.addresses;

type SmallShape = "own" | "provider";

/**
 * B's domains. Their mail hosts are B's own: a host shared with A's domains would make B wait
 * for the per-host politeness slots, which no scheduler may give away, and blur what is measured.
 * "own": a host per domain; "provider": the ten domains as tenants of two hosts (five each). A
 * few dead addresses per domain, as in any real list, stay under the error budget (9 rejections
 * a connection), so each domain is still one session.
 */
function smallTaskDomains(shape: SmallShape): { domains: DomainSpec[]; addresses: string[] } {
  const domains: DomainSpec[] = [];
  const addresses: string[] = [];
  const providers = [{ name: "mx1.b-provider.test" }, { name: "mx2.b-provider.test" }];
  for (let d = 1; d <= SMALL_DOMAINS; d++) {
    const name = `b-${shape}${d.toString()}.test`;
    const live = SMALL_PER_DOMAIN - SMALL_DEAD_PER_DOMAIN;
    const mailboxes = Array.from({ length: live }, (_, i) => `staff${(i + 1).toString()}`);
    const dead = Array.from({ length: SMALL_DEAD_PER_DOMAIN }, (_, i) => `former${(i + 1).toString()}`);
    // One host spec object shared by several domains is one server (one IP) in the simulator.
    const host = shape === "own" ? { name: `mx.${name}`, kind: "postfix" as const } : providers[d % 2]!;
    domains.push({ name, hosts: [host], mailboxes });
    addresses.push(...[...mailboxes, ...dead].map((local) => `${local}@${name}`));
  }
  return { domains, addresses };
}

const smallWorlds = { own: smallTaskDomains("own"), provider: smallTaskDomains("provider") };
const spec = {
  ...generated.spec,
  domains: [...generated.spec.domains, ...smallWorlds.own.domains, ...smallWorlds.provider.domains],
};

type Scenario =
  | { big: false; small: SmallShape }
  | { big: true; small: null }
  | { big: true; small: SmallShape; sameUser: boolean };

interface Figures {
  /** finished_at − created_at in seconds; null: not finished by the run's deadline. */
  bigS: number | null;
  smallS: number | null;
  /** How many of A's addresses were final when B finished (both tasks only). */
  bigDoneWhenSmallFinished: number | null;
}

async function run(db: Database, world: MailWorld, scenario: Scenario): Promise<Figures> {
  await migrate(db);
  const ctx = await createTestContext({
    db,
    env: worldEnv(world, {
      WORKER_CONCURRENCY: String(CONCURRENCY),
      SMTP_MAX_CONNECTIONS_PER_HOST: String(PER_HOST),
      SMTP_CONNECT_TIMEOUT_MS: "5000",
      SMTP_GREETING_TIMEOUT_MS: "10000",
      SMTP_COMMAND_TIMEOUT_MS: "10000",
    }),
  });
  const smallList = scenario.small === null ? [] : smallWorlds[scenario.small].addresses;
  const credits = bigList.length + smallList.length;
  const userA = await ctx.createUser(credits);
  const userB = "sameUser" in scenario && scenario.sameUser ? userA : await ctx.createUser(credits);
  // Running before the first POST, so every run's tasks meet a pool that is already polling.
  const role = createWorkerRole(ctx.services);
  role.start();
  const deadline = Date.now() + RUN_DEADLINE_MS;
  let bigId: string | null = null;
  let smallId: string | null = null;
  try {
    if (scenario.big) bigId = await ctx.createTask(userA, bigList);
    // Counted from A's 201, not its request: B must find A's whole list queued ahead of it.
    if (scenario.big && scenario.small !== null) await delay(SMALL_AFTER_MS);
    if (scenario.small !== null) smallId = await ctx.createTask(userB, smallList);
    const ids = [bigId, smallId].filter((id): id is string => id !== null);
    // A task that misses the deadline is printed as not finished; the other may still have finished.
    const waits = await Promise.allSettled(
      ids.map((id) => waitForTaskFinished(db, id, Math.max(0, deadline - Date.now()))),
    );
    for (const w of waits) if (w.status === "rejected") console.log(`            ${String(w.reason)}`);
  } finally {
    await role.stop(5_000);
  }
  const seconds = async (id: string | null): Promise<number | null> => {
    if (id === null) return null;
    const { rows } = await db.query<{ s: number | null }>(
      "select extract(epoch from finished_at - created_at)::float8 as s from tasks where id = $1",
      [id],
    );
    return rows[0]?.s ?? null;
  };
  let bigDone: number | null = null;
  if (bigId !== null && smallId !== null) {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from email_verifications v, tasks b
        where v.task_id = $1 and b.id = $2 and b.finished_at is not null and v.created_at <= b.finished_at`,
      [bigId, smallId],
    );
    bigDone = rows[0]?.n ?? null;
  }
  const figures = {
    bigS: await seconds(bigId),
    smallS: await seconds(smallId),
    bigDoneWhenSmallFinished: bigDone,
  };
  await ctx.close();
  return figures;
}

const secs = (s: number | null): string =>
  s === null ? `> ${(RUN_DEADLINE_MS / 1000).toFixed(0)} s` : `${s.toFixed(2)} s`;

/** "6.02× (target ≤ 1.5×: over)"; a missing figure (a run past its deadline) counts as over. */
function verdict(after: number | null, before: number | null, target: number): string {
  if (after === null || before === null)
    return `?× (target ≤ ${target.toFixed(2)}×: over, a run missed its deadline)`;
  const ratio = after / before;
  return `${ratio.toFixed(2)}× (target ≤ ${target.toFixed(2)}×: ${ratio <= target ? "PASS" : "over"})`;
}

export async function benchFairness(): Promise<void> {
  const bigDomains = new Set(bigList.map((a) => a.slice(a.indexOf("@") + 1))).size;
  console.log(
    `\nfairness: task A ${bigList.length.toLocaleString("en-US")} addresses at ${bigDomains.toString()} domains, ` +
      `task B ${(SMALL_DOMAINS * SMALL_PER_DOMAIN).toString()} addresses at ${SMALL_DOMAINS.toString()} domains and hosts A does not use ` +
      `(own: an IP per domain; provider: two IPs), posted ${(SMALL_AFTER_MS / 1000).toString()} s after A's list is queued; ` +
      `${LATENCY_MS.toString()} ms per reply, ${CONCURRENCY.toString()} sessions, ${PER_HOST.toString()} per server IP${SMALL_RUN ? " (--small)" : ""}\n` +
      `  a task's time is finished_at − created_at; B behind A / B alone: is the small task starved? ` +
      `A with B / A alone: what does B cost A? Another user's B, then B as a second task of A's user.`,
  );
  const world = await startMailWorld(spec);
  try {
    for (const [label, open] of benchEngines()) {
      const once = async (scenario: Scenario): Promise<Figures> => {
        const { db, done } = await open();
        try {
          return await run(db, world, scenario);
        } finally {
          await done();
        }
      };
      // A alone first: B alone is the denominator of the ratio this bench is about, so it should
      // not be the run that pays for a cold process (JIT, first connections).
      const bigAlone = await once({ big: true, small: null });
      for (const shape of ["own", "provider"] as const) {
        const smallAlone = await once({ big: false, small: shape });
        const twoUsers = await once({ big: true, small: shape, sameUser: false });
        const oneUser = await once({ big: true, small: shape, sameUser: true });
        const progress = (f: Figures): string =>
          f.bigDoneWhenSmallFinished === null
            ? ""
            : `   (A had ${f.bigDoneWhenSmallFinished.toLocaleString("en-US")} of ${bigList.length.toLocaleString("en-US")} final when B finished)`;
        console.log(
          `  ${label.padEnd(9)} B (${shape}) alone ${secs(smallAlone.smallS)}, behind A ${secs(twoUsers.smallS)}: ` +
            `${verdict(twoUsers.smallS, smallAlone.smallS, SMALL_TARGET)}${progress(twoUsers)}\n` +
            `            A alone ${secs(bigAlone.bigS)}, A with B ${secs(twoUsers.bigS)}: ` +
            `${verdict(twoUsers.bigS, bigAlone.bigS, BIG_TARGET)}\n` +
            `            same user: B behind A ${secs(oneUser.smallS)}: ` +
            `${verdict(oneUser.smallS, smallAlone.smallS, SMALL_TARGET)}${progress(oneUser)}; ` +
            `A with B ${secs(oneUser.bigS)}: ${verdict(oneUser.bigS, bigAlone.bigS, BIG_TARGET)}`,
        );
      }
    }
  } finally {
    await world.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchFairness();
