// Real `mailprobe` processes for the suites that must see the service as an operator runs it
// (restarts, SIGKILL, memory of the server itself): a free loopback port, a sub-command started
// and awaited until its start line, and a one-shot CLI call.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** This process's environment minus what must not leak into a child mailprobe. */
export function inheritedEnv(): NodeJS.ProcessEnv {
  // NODE_TEST_CONTEXT would make the child talk the test runner's protocol on stdout; the test
  // database belongs to this process, a child gets its own DATABASE_URL or DATA_DIR.
  const { NODE_TEST_CONTEXT: _ctx, TEST_DATABASE_URL: _t, ...inherited } = process.env;
  return inherited;
}

/**
 * The environment of a CLI child: this process's, quiet, on loopback, with `vars`; the database
 * and secret settings it does not set are removed, so it uses its own DATA_DIR or DATABASE_URL.
 */
export function cliEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...inheritedEnv(), LOG_LEVEL: "warn", HOST: "127.0.0.1", ...vars };
  for (const name of ["DATABASE_URL", "REDIS_URL", "ENCRYPTION_KEY", "JWT_SECRET", "ADMIN_TOKEN"])
    if (!(name in vars)) delete env[name];
  return env;
}

/**
 * A new temporary directory named after `prefix`, removed when the test file's process exits
 * (after its children: a `serve` started on it may outlive the test that made it).
 */
export async function tempDataDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `${prefix}-`));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface MailprobeChild {
  name: string;
  proc: ChildProcess;
  /** stdout and stderr as they came. */
  output: string;
  exited: { code: number | null; signal: NodeJS.Signals | null } | null;
}

/** Starts `bin/mailprobe.js ...args` and resolves once `ready` appears in its output. */
export async function startMailprobe(
  name: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  ready: string,
  timeoutMs = 60_000,
): Promise<MailprobeChild> {
  const proc = spawn(process.execPath, ["bin/mailprobe.js", ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const child: MailprobeChild = { name, proc, output: "", exited: null };
  proc.stdout.on("data", (d: Buffer) => (child.output += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (child.output += d.toString()));
  proc.once("exit", (code, signal) => (child.exited = { code, signal }));
  const deadline = Date.now() + timeoutMs;
  while (!child.output.includes(ready)) {
    if (child.exited)
      throw new Error(`${name} exited at start ${JSON.stringify(child.exited)}: ${child.output}`);
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`${name} did not print "${ready}" within ${timeoutMs} ms: ${child.output}`);
    }
    await delay(50);
  }
  return child;
}

/** Resolves with the exit of `child` (at once when it has already exited). */
export function exitOf(child: MailprobeChild): Promise<NonNullable<MailprobeChild["exited"]>> {
  return new Promise((r) =>
    child.exited ? r(child.exited) : child.proc.once("exit", (code, signal) => r({ code, signal })),
  );
}

/** Runs a one-shot CLI command; fails the test on a non-zero exit. Resolves with its stdout. */
export async function runCli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
  const proc = spawn(process.execPath, ["bin/mailprobe.js", ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((r) => proc.once("exit", r));
  assert.equal(code, 0, `mailprobe ${args.join(" ")}: ${err}`);
  return out;
}
