#!/usr/bin/env node
// `npm run build`: compiles src/ to dist/ (tsconfig.build.json; imports ending in .ts become .js)
// and stamps it with the time the build started (bin/dist-state.js). `--if-stale` (npm start's
// prestart) builds only when dist/ is missing or older than src/, and leaves a runtime without
// TypeScript (`npm prune --omit=dev`) to bin/mailprobe.js. `--out-dir DIR` builds elsewhere
// (the compiled-runtime test) without touching dist/.
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { ROOT, STAMP_FILE, distState } from "../bin/dist-state.js";

const args = process.argv.slice(2);
const outIndex = args.indexOf("--out-dir");
const outDir = outIndex === -1 ? join(ROOT, "dist") : resolve(args[outIndex + 1] ?? "");
if (outIndex !== -1 && !args[outIndex + 1]) fail("--out-dir needs a directory");

if (args.includes("--if-stale") && distState() === "fresh") process.exit(0);

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
} catch {
  if (args.includes("--if-stale")) process.exit(0);
  fail("TypeScript is not installed (a dev dependency): run `npm ci` first");
}

const started = new Date();
// A clean directory: a module deleted from src/ must not live on in dist/.
rmSync(outDir, { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", outDir], {
  cwd: ROOT,
  stdio: "inherit",
});
if (result.status !== 0)
  fail(`tsc failed (exit ${result.status ?? result.signal}); ${outDir} is not stamped`);
const stamp = join(outDir, STAMP_FILE);
mkdirSync(outDir, { recursive: true });
writeFileSync(stamp, `${started.toISOString()}\n`);
utimesSync(stamp, started, started);

function fail(message) {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}
