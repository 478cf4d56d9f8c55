// The dashboard build the browser suite runs against: web/dist as `mailprobe serve` serves it.
// Built once when missing or older than its sources (CI builds it in `npm ci` through `prepare`),
// and measured: the JS and CSS the browser downloads, gzipped.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { gzipSync } from "node:zlib";

export const ROOT = new URL("../../../", import.meta.url).pathname;
const DIST = join(ROOT, "web", "dist");
const INDEX = join(DIST, "index.html");
const SOURCES = [join(ROOT, "web", "src"), join(ROOT, "web", "index.html"), join(ROOT, "sdk", "src")];

function newestMtimeMs(path: string): number {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return readdirSync(path, { recursive: true })
    .map((f) => join(path, String(f)))
    .filter((f) => statSync(f).isFile())
    .reduce((m, f) => Math.max(m, statSync(f).mtimeMs), 0);
}

/** Why web/dist must be (re)built, or null when it is up to date. */
function staleness(): string | null {
  if (!existsSync(INDEX)) return "web/dist/index.html is missing";
  const built = statSync(INDEX).mtimeMs;
  const changed = SOURCES.find((s) => newestMtimeMs(s) > built);
  return changed ? `${relative(ROOT, changed)} changed after the last build` : null;
}

let checked = false;

/** Blocks this thread for `ms` (the build check is synchronous, before any test). */
const sleepSync = (ms: number): void => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Two runs at once (two people in one checkout): one builds while the other waits for it (a
 * build empties web/dist first, so two at once would serve each other half a folder).
 */
function withBuildLock<T>(fn: () => T): T {
  const lock = join(
    tmpdir(),
    `mailprobe-web-build-${createHash("sha256").update(ROOT).digest("hex").slice(0, 12)}.lock`,
  );
  const deadline = Date.now() + 240_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock left by a killed run is stale after the build's own timeout.
      if (Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 200_000)
        rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`web build lock ${lock} held for too long`);
      sleepSync(200);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Makes sure web/dist holds a current build: runs `npm run build:web` once when it is missing or
 * stale (MAILPROBE_WEB_NO_BUILD=1 only checks), and fails with what to run when that fails.
 */
export function ensureWebBuild(): void {
  if (checked) return;
  withBuildLock(build);
  checked = true;
}

function build(): void {
  const why = staleness();
  if (why) {
    if (process.env.MAILPROBE_WEB_NO_BUILD === "1")
      throw new Error(`The dashboard is not built (${why}): run \`npm run build:web\` first.`);
    console.log(`# test:web: ${why}; running npm run build:web`);
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const made = spawnSync(npm, ["run", "build:web"], { cwd: ROOT, encoding: "utf8", timeout: 180_000 });
    if (made.status !== 0 || !existsSync(INDEX))
      throw new Error(
        `npm run build:web failed (exit ${String(made.status)}); the browser suite needs web/dist.\n` +
          `${made.stdout ?? ""}\n${made.stderr ?? ""}`,
      );
  }
}

export interface AssetSize {
  file: string;
  bytes: number;
  gzipBytes: number;
  /** Referenced by index.html (downloaded on first view); the others are lazy chunks. */
  initial: boolean;
}

/** Every .js and .css file of web/dist/assets with its size gzipped at level 9 (as the build's .gz twins). */
export function bundleSizes(): AssetSize[] {
  const html = readFileSync(INDEX, "utf8");
  const assets = join(DIST, "assets");
  return readdirSync(assets)
    .filter((f) => /\.(js|css)$/.test(f))
    .sort()
    .map((f) => {
      const data = readFileSync(join(assets, f));
      return {
        file: f,
        bytes: data.length,
        gzipBytes: gzipSync(data, { level: 9 }).length,
        initial: html.includes(`/assets/${f}`),
      };
    });
}
