// The load generator of bench/verify-http.ts, run as its own process so it does not share the
// server's event loop (on a 2-core machine the two still share the CPUs: the figures are for
// "server + load generator on one small box", not for the server alone).
// argv[2]: a JSON CannonJob. Prints one JSON line (Record<target name, CannonResult>) and exits.
//
// Each target gets a discarded warm-up run (JIT, connection pools, caches); then the targets are
// measured in alternating blocks (A B A B …), so a change of background load on the machine
// affects all of them alike and their ratio stays meaningful. A target's blocks are merged with
// autocannon's own aggregation (one latency histogram; autocannon records 2xx latencies only, in
// whole milliseconds).
import autocannon from "autocannon";

export interface CannonTarget {
  name: string;
  url: string;
  method: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
}

export interface CannonJob {
  targets: CannonTarget[];
  connections: number;
  warmupSeconds: number;
  /** Length of one measured block. */
  blockSeconds: number;
  /** Measured blocks per target. */
  rounds: number;
}

export interface CannonResult {
  /** 2xx answers per second of the measured blocks. */
  okPerSecond: number;
  /** All answers (any status) per second. */
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  total: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statuses: Record<string, number>;
  /** Measured seconds (sum of the blocks). */
  seconds: number;
}

/** autocannon's merge of runs made with skipAggregateResult (not in @types/autocannon). */
const aggregate = (results: unknown[], opts: { url: string; connections: number }): autocannon.Result =>
  (
    autocannon as unknown as {
      aggregateResult(
        this: void,
        results: unknown[],
        opts: { url: string; connections: number },
      ): autocannon.Result;
    }
  ).aggregateResult(results, opts);

interface RawRun {
  duration: number;
  statusCodeStats: Record<string, { count: number }>;
}

function fire(target: CannonTarget, connections: number, seconds: number, raw: boolean): Promise<RawRun> {
  return autocannon({
    url: target.url,
    method: target.method,
    ...(target.headers ? { headers: target.headers } : {}),
    ...(target.body !== undefined ? { body: target.body } : {}),
    connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
    skipAggregateResult: raw,
  }) as unknown as Promise<RawRun>;
}

const job = JSON.parse(process.argv[2] ?? "null") as CannonJob | null;
if (!job) throw new Error("usage: cannon.ts '<CannonJob JSON>'");
if (job.warmupSeconds > 0)
  for (const t of job.targets) await fire(t, job.connections, job.warmupSeconds, false);
const runs = new Map<string, RawRun[]>(job.targets.map((t) => [t.name, []]));
for (let round = 0; round < Math.min(job.rounds, 10); round++) {
  for (const t of job.targets)
    runs.get(t.name)!.push(await fire(t, job.connections, Math.min(job.blockSeconds, 30), true));
}
const out: Record<string, CannonResult> = {};
for (const t of job.targets) {
  const list = runs.get(t.name)!;
  // Per-run facts before aggregation (aggregateResult mutates the first run's status counts).
  const seconds = list.reduce((s, r) => s + r.duration, 0);
  const statuses: Record<string, number> = {};
  for (const r of list)
    for (const [code, s] of Object.entries(r.statusCodeStats))
      statuses[code] = (statuses[code] ?? 0) + s.count;
  const total = Object.values(statuses).reduce((a, b) => a + b, 0);
  const r = aggregate(list, { url: t.url, connections: job.connections });
  out[t.name] = {
    okPerSecond: r["2xx"] / seconds,
    requestsPerSecond: total / seconds,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    meanMs: r.latency.average,
    total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statuses,
    seconds,
  };
}
console.log(JSON.stringify(out));
