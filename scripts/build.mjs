#!/usr/bin/env node
// `npm run build`: compiles src/ to dist/ (tsconfig.build.json; imports ending in .ts become .js)
// and stamps it with the time the build started (bin/dist-state.js). `--if-stale` (npm start's
// prestart) builds only when dist/ is missing or older than src/, and leaves a runtime without
// TypeScript (`npm prune --omit=dev`) to bin/mailprobe.js. `--out-dir DIR` builds elsewhere
// (the compiled-runtime test) without touching dist/.
//
// The CLI's client imports the SDK (@mailprobe/client, the workspace package in sdk/) by name, so
// tsc needs its declarations and the runtime its JavaScript, both in sdk/dist. `npm ci` builds it
// first (prepare: `npm run build:sdk`); this script builds it too, before src/, whenever sdk/dist is
// missing or older than the SDK's sources, so `npm run build` and `npm start` work on their own
// (after `npm run generate:sdk`, say).
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { ROOT, STAMP_FILE, distState } from "../bin/dist-state.js";

const args = process.argv.slice(2);
const outIndex = args.indexOf("--out-dir");
const outDir = outIndex === -1 ? join(ROOT, "dist") : resolve(args[outIndex + 1] ?? "");
if (outIndex !== -1 && !args[outIndex + 1]) fail("--out-dir needs a directory");

const ifStale = args.includes("--if-stale");
const sdkFresh = sdkState() === "fresh";
const distFresh = ifStale && distState() === "fresh";
if (sdkFresh && distFresh) process.exit(0);

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
} catch {
  if (ifStale) process.exit(0);
  fail("TypeScript is not installed (a dev dependency): run `npm ci` first");
}

if (!sdkFresh) {
  const sdk = spawnSync(process.execPath, [join(ROOT, "sdk", "scripts", "build.mjs")], { stdio: "inherit" });
  if (sdk.status !== 0)
    fail(`the SDK's build failed (exit ${sdk.status ?? sdk.signal}); run \`npm run build:sdk\``);
}
if (distFresh) process.exit(0);

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

/**
 * Whether sdk/dist holds a build of the SDK's current sources: its last file written
 * (dist/cjs/package.json, by sdk/scripts/build.mjs) newer than every source and tsconfig. "fresh"
 * where the SDK has no sources (a runtime that carries only its dist/).
 * @returns {"fresh" | "stale" | "missing"}
 */
function sdkState() {
  const sdk = join(ROOT, "sdk");
  const sources = statSync(join(sdk, "src"), { throwIfNoEntry: false });
  if (!sources) return "fresh";
  const built = statSync(join(sdk, "dist", "cjs", "package.json"), { throwIfNoEntry: false });
  if (!built) return "missing";
  const inputs = readdirSync(join(sdk, "src"), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name));
  inputs.push(join(sdk, "package.json"), join(sdk, "tsconfig.json"), join(sdk, "tsconfig.cjs.json"));
  const newer = inputs.some(
    (file) => (statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0) > built.mtimeMs,
  );
  return newer ? "stale" : "fresh";
}

function fail(message) {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}
