// The runtime `npm prune --omit=dev` leaves: dist/ and the production dependencies only, no
// sources, no tsx, TypeScript or Vite. Assembled in a temporary directory (the package manifest,
// bin/, a compiled dist/, the production packages of package-lock.json linked in), it must serve:
// /healthz, the CLI's admin path, a realtime verification, an upload parsed on a worker thread
// (the compiled thread entry), the dashboard's files and the migrations resolved from dist/.
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, test } from "node:test";
import { distState } from "../../../bin/dist-state.js";
import { freePort } from "../../support/child-process.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const DEV_ONLY = ["tsx", "typescript", "vite", "eslint", "playwright-core", "smtp-server", "dns2"];

const runtime = mkdtempSync(join(tmpdir(), "mailprobe-runtime-"));
const children = new Set<ChildProcess>();
after(() => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(runtime, { recursive: true, force: true });
});

/**
 * The packages `npm prune --omit=dev` keeps: package-lock.json's top-level entries not marked dev,
 * each with where it lives (a workspace package, such as the SDK, at its link's target).
 */
function productionPackages(): Array<{ path: string; target: string }> {
  const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, { dev?: boolean; link?: boolean; resolved?: string }>;
  };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) && !entry.dev)
    .map(([path, entry]) => ({ path, target: join(ROOT, entry.link ? (entry.resolved ?? path) : path) }))
    .filter(({ target }) => existsSync(target));
}

function assembleRuntime(): void {
  // CI's `npm ci` has built dist/ (prepare); a checkout being edited compiles a copy instead.
  if (distState(ROOT) === "fresh") cpSync(join(ROOT, "dist"), join(runtime, "dist"), { recursive: true });
  else {
    const built = spawnSync(process.execPath, ["scripts/build.mjs", "--out-dir", join(runtime, "dist")], {
      cwd: ROOT,
      encoding: "utf8",
    });
    assert.equal(built.status, 0, `build: ${built.stdout}${built.stderr}`);
  }
  cpSync(join(ROOT, "package.json"), join(runtime, "package.json"));
  for (const file of ["mailprobe.js", "dist-state.js"]) {
    cpSync(join(ROOT, "bin", file), join(runtime, "bin", file));
  }
  symlinkSync(join(ROOT, "migrations"), join(runtime, "migrations"));
  if (existsSync(join(ROOT, "web/dist"))) {
    mkdirSync(join(runtime, "web"));
    symlinkSync(join(ROOT, "web/dist"), join(runtime, "web/dist"));
  }
  for (const { path, target } of productionPackages()) {
    mkdirSync(dirname(join(runtime, path)), { recursive: true });
    symlinkSync(target, join(runtime, path));
  }
}

function mailprobe(args: string[], env: NodeJS.ProcessEnv): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, [join(runtime, "bin/mailprobe.js"), ...args], {
    cwd: runtime,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  return Object.assign(child, { output: () => output });
}

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((r) => (child.exitCode !== null ? r(child.exitCode) : child.once("exit", r)));

void test("the compiled runtime, without dev dependencies, serves, verifies and parses uploads", async () => {
  assembleRuntime();
  for (const name of DEV_ONLY) {
    assert.ok(!existsSync(join(runtime, "node_modules", name)), `${name} is a dev dependency`);
  }
  assert.ok(!existsSync(join(runtime, "src")));

  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: join(runtime, "data"),
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
  };
  const base = `http://127.0.0.1:${port}`;
  const serve = mailprobe(["serve"], env);
  // A new data directory runs PGlite's initdb first: seconds on a busy machine.
  const deadline = Date.now() + 90_000;
  for (;;) {
    assert.equal(serve.exitCode, null, `serve exited: ${serve.output()}`);
    assert.ok(Date.now() < deadline, `no /healthz within 90 s: ${serve.output()}`);
    const healthy = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (healthy) break;
    await delay(50);
  }

  const create = mailprobe(["users", "create", "--credits", "5", "--json"], env);
  assert.equal(await exitOf(create), 0, create.output());
  const { api_key: key } = JSON.parse(create.output().trim().split("\n")[0]!) as { api_key: string };
  const auth = { authorization: `Bearer ${key}` };

  // The compiled CLI's client imports the SDK (@mailprobe/client) at run time.
  const credits = mailprobe(["client", "credits"], { ...env, MAILPROBE_URL: base, MAILPROBE_KEY: key });
  assert.equal(await exitOf(credits), 0, credits.output());
  assert.equal(credits.output(), "balance: 5\n");

  const verified = await fetch(`${base}/api/v1/verify`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ email: "valid@sandbox.mailprobe.invalid" }),
  });
  assert.equal(verified.status, 200);
  assert.equal(((await verified.json()) as { status: string }).status, "valid");

  const form = new FormData();
  const csv = "name,email\nAda,valid@sandbox.mailprobe.invalid\nBob,invalid@sandbox.mailprobe.invalid\n";
  form.append("file", new Blob([csv], { type: "text/csv" }), "list.csv");
  const upload = await fetch(`${base}/api/v1/tasks/batch/upload/quote`, {
    method: "POST",
    headers: auth,
    body: form,
  });
  const quote = (await upload.json()) as { filename: string; email_count: number; sandbox_count: number };
  assert.equal(upload.status, 200, JSON.stringify(quote));
  assert.deepEqual([quote.filename, quote.email_count, quote.sandbox_count], ["list.csv", 2, 2]);

  const page = await fetch(`${base}/`);
  assert.equal(page.status, existsSync(join(runtime, "web/dist")) ? 200 : 503);

  serve.kill("SIGTERM");
  assert.equal(await exitOf(serve), 0, serve.output());
  assert.doesNotMatch(serve.output(), /warning: dist|tsx/);
});
