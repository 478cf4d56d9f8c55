// `npm run bench`: every benchmark, in order. Each is bounded in time and stops by itself.
// PostgreSQL figures need BENCH_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test);
// the report benchmark seeds 1M rows into a database it creates and drops. Named-only benches run
// when asked for (`npm run bench scale-out`): scale-out starts worker processes for minutes,
// backup writes a 1 GB database, its backup and its restore.
import { benchBackup } from "./backup.ts";
import { benchBatch } from "./batch.ts";
import { benchEngineWorld } from "./engine-world.ts";
import { benchFairness } from "./fairness.ts";
import { benchFiles } from "./files.ts";
import { benchReports } from "./reports.ts";
import { benchScaleOut } from "./scale-out.ts";
import { benchThrottle } from "./throttle.ts";
import { benchUploads } from "./uploads.ts";
import { benchVerifyEngine } from "./verify-engine.ts";
import { benchVerifyHttp } from "./verify-http.ts";

const only = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const benches: Array<[string, () => Promise<void>]> = [
  ["engine", benchVerifyEngine],
  ["world", benchEngineWorld],
  ["verify-http", benchVerifyHttp],
  ["batch", benchBatch],
  ["throttle", benchThrottle],
  ["fairness", benchFairness],
  ["files", benchFiles],
  ["uploads", benchUploads],
  ["reports", benchReports],
];
const namedOnly: Array<[string, () => Promise<void>]> = [
  ["scale-out", benchScaleOut],
  ["backup", benchBackup],
];

const started = performance.now();
for (const [name, bench] of benches) {
  if (only.length === 0 || only.includes(name)) await bench();
}
for (const [name, bench] of namedOnly) {
  if (only.includes(name)) await bench();
}
console.log(
  `\nbench finished in ${((performance.now() - started) / 1000).toFixed(1)} s; peak RSS of this process ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`,
);
