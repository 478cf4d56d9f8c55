// Whether dist/ holds a build of the current src/: what bin/mailprobe.js runs and what `npm start`
// (scripts/build.mjs --if-stale) rebuilds. scripts/build.mjs stamps dist/ with the time the build
// started (a file saved during the build counts as newer); a .ts file or tsconfig newer than the
// stamp makes it stale, as make decides. Stat of the ~220 sources: a few ms on each start.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** In dist/, written last by a successful build. */
export const STAMP_FILE = ".built-from-src";

/** @returns {"fresh" | "stale" | "missing"} */
export function distState(root = ROOT) {
  const stamp = statSync(join(root, "dist", STAMP_FILE), { throwIfNoEntry: false });
  if (!stamp) return "missing";
  // A runtime shipped without its sources (a container image) has nothing newer.
  const sources = statSync(join(root, "src"), { throwIfNoEntry: false });
  if (!sources) return "fresh";
  const inputs = readdirSync(join(root, "src"), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name));
  inputs.push(join(root, "tsconfig.json"), join(root, "tsconfig.build.json"));
  for (const file of inputs) {
    const mtime = statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    if (mtime > stamp.mtimeMs) return "stale";
  }
  return "fresh";
}
