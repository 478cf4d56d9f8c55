// Builds the published package: dist/esm (ES modules, for `import`) and dist/cjs (CommonJS, for
// `require`), each with its own declarations, from the same sources. Two tsc runs rather than a
// bundler: the output stays file-for-file readable and openapi-fetch (which ships both formats
// itself) stays an external dependency. dist/ is emptied first, so a file the sources no longer
// produce cannot be packed by accident.
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const sdk = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

rmSync(join(sdk, "dist"), { recursive: true, force: true });
for (const project of ["tsconfig.json", "tsconfig.cjs.json"]) {
  const run = spawnSync(process.execPath, [tsc, "-p", join(sdk, project)], { stdio: "inherit" });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
// sdk/ is "type": "module"; this marker makes Node (and TypeScript) read dist/cjs/*.js and its
// .d.ts files as CommonJS.
mkdirSync(join(sdk, "dist", "cjs"), { recursive: true });
writeFileSync(join(sdk, "dist", "cjs", "package.json"), `${JSON.stringify({ type: "commonjs" })}\n`);
