#!/usr/bin/env node
// Runs the compiled JavaScript in dist/: `npm ci` builds it (prepare), `npm start` rebuilds it when
// src/ changed, and nothing else is needed at run time, so `npm prune --omit=dev` keeps a working
// service. In a checkout whose dist/ is missing or older than src/ (while developing; the tests'
// child processes) it runs the TypeScript sources through tsx, a dev dependency.
import { distState } from "./dist-state.js";

// package.json's engines, said once in words: on an older Node the sources fail somewhere deep
// (or, worse, mostly work), which tells the operator nothing about the fix.
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 13)) {
  process.stderr.write(
    `mailprobe: needs Node.js 22.13 or newer (this is ${process.versions.node}); install Node 22 LTS or newer\n`,
  );
  process.exit(1);
}

const state = distState();
const tsx = state === "fresh" ? null : await import("tsx/esm/api").catch(notInstalled);
let main;
if (tsx) {
  tsx.register();
  ({ main } = await import("../src/cli/main.ts"));
} else if (state === "missing") {
  process.stderr.write(
    "mailprobe: dist/ is missing and tsx is not installed: run `npm run build` (before `npm prune --omit=dev`)\n",
  );
  process.exit(1);
} else {
  if (state === "stale") {
    process.stderr.write("mailprobe: warning: dist/ is older than src/; `npm run build` compiles it again\n");
  }
  ({ main } = await import("../dist/cli/main.js"));
}
await main(process.argv);

/** A runtime without dev dependencies: no tsx to run the sources with. */
function notInstalled(error) {
  if (error?.code === "ERR_MODULE_NOT_FOUND") return null;
  throw error;
}
