// Benchmark of the verification engine on a simulated world where every SMTP reply takes 20 ms.
// Run: npx tsx bench/verify-engine.ts (or through the bench runner: benchVerifyEngine()).
//
// How round trips are counted: one round trip = one 20 ms reply delay of the simulator. The
// minimum for one realtime session is 4: connect+banner, EHLO, one pipelined MAIL+RCPT+RCPT
// (address + catch-all probe), QUIT. The engine answers as soon as the RCPT replies are in and
// lets QUIT finish in the background, so its floor is 3. The simulator's smtp-server also waits
// a fixed 100 ms before every banner (its early-talker check); that pause is not a round trip,
// so it is subtracted before dividing by 20 ms. Its DNS server answers without delay.
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { createEngine, type Engine } from "../src/verify/index.ts";
import { startMailWorld, type MailWorld } from "../test/support/mail-world/index.ts";
import { withinBudget } from "./support/budget.ts";

const LATENCY_MS = 20;
const BANNER_PAUSE_MS = 100;
const RUNS = 50;
const GROUP_SIZE = 200;
const MIN_ROUND_TRIPS = 4;
/** Hard stop for the whole benchmark. */
const BUDGET_MS = 120_000;

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

function summarise(label: string, samples: number[]): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const median = percentile(sorted, 50);
  const p95 = percentile(sorted, 95);
  const rt = (ms: number): string => ((ms - BANNER_PAUSE_MS) / LATENCY_MS).toFixed(1);
  console.log(
    `  ${label.padEnd(34)} median ${median.toFixed(1).padStart(6)} ms (${rt(median)} RT)   ` +
      `p95 ${p95.toFixed(1).padStart(6)} ms (${rt(p95)} RT)   minimum possible ${MIN_ROUND_TRIPS.toString()} RT`,
  );
}

function engineFor(world: MailWorld): Engine {
  return createEngine({
    dnsServers: [`${world.dns.host}:${world.dns.port.toString()}`],
    smtpPort: world.smtpPort,
    dnsTimeoutMs: 1000,
    dnsTries: 1,
    smtpConnectTimeoutMs: 2000,
    smtpGreetingTimeoutMs: 3000,
    smtpCommandTimeoutMs: 3000,
    smtpHeloName: "bench.mailprobe.test",
    smtpMailFrom: "bounce@mailprobe.test",
    smtpAllowPrivateHosts: true,
  });
}

async function timeOne(engine: Engine, address: string): Promise<number> {
  const started = performance.now();
  const result = await engine.verifyOne(address);
  const elapsed = performance.now() - started;
  if (result.status !== "valid") throw new Error(`bench: ${address} came back ${result.status}`);
  return elapsed;
}

async function run(): Promise<void> {
  const mailboxes = Array.from({ length: GROUP_SIZE }, (_, i) => `user${i.toString()}`);
  const world = await startMailWorld({
    latencyMs: LATENCY_MS,
    domains: [
      { name: "realtime.test", hosts: [{ name: "mx.realtime.test" }], mailboxes },
      {
        name: "group.test",
        hosts: [{ name: "mx.group.test" }],
        mailboxes: mailboxes.slice(0, GROUP_SIZE / 2),
      },
    ],
  });
  try {
    console.log(`verify engine on a simulated world, ${LATENCY_MS.toString()} ms per SMTP reply`);
    console.log(`realtime verifyOne, ${RUNS.toString()} runs each:`);

    // Cold: a new engine per call, so DNS, PTR and the catch-all verdict are all unknown and the
    // session carries the catch-all probe RCPT.
    const cold: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const engine = engineFor(world);
      cold.push(await timeOne(engine, `user${i.toString()}@realtime.test`));
      await engine.close();
    }
    summarise("cold (DNS + catch-all caches empty)", cold);

    // Warm: one engine; after the first call DNS facts and the catch-all verdict are cached and
    // the session sends the address's RCPT alone.
    const engine = engineFor(world);
    await timeOne(engine, "user0@realtime.test");
    const warm: number[] = [];
    for (let i = 0; i < RUNS; i++)
      warm.push(await timeOne(engine, `user${(i + 1).toString()}@realtime.test`));
    summarise("warm (caches filled, no probe)", warm);
    await engine.close();

    const groupEngine = engineFor(world);
    world.resetCounters();
    const addresses = mailboxes.map((l) => `${l}@group.test`);
    const started = performance.now();
    const results = await groupEngine.verifyGroup("group.test", addresses);
    const elapsed = performance.now() - started;
    await groupEngine.close();
    const counters = world.counters("mx.group.test");
    const valid = results.filter((r) => r.status === "valid").length;
    const invalid = results.filter((r) => r.status === "invalid").length;
    console.log(`verifyGroup, ${GROUP_SIZE.toString()} same-domain addresses:`);
    console.log(
      `  ${elapsed.toFixed(0)} ms (${((elapsed - BANNER_PAUSE_MS) / LATENCY_MS).toFixed(1)} RT), ` +
        `${counters.connections.toString()} connection(s), RCPTs per session [${counters.rcptPerSession.join(", ")}], ` +
        `${counters.commands.toString()} commands, ${valid.toString()} valid / ${invalid.toString()} invalid`,
    );
  } finally {
    await world.close();
  }
}

/** Prints realtime latency (cold and warm caches) and a 200-address group's cost. */
export async function benchVerifyEngine(): Promise<void> {
  await withinBudget(BUDGET_MS, run);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchVerifyEngine();
}
