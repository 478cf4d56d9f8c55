// `mailprobe serve` as an operator starts it: a port that is already taken is one line and exit 1
// (no stack trace, the data directory released), and the banner names the address it listens on.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { exitOf, inheritedEnv, startMailprobe, type MailprobeChild } from "../../support/child-process.ts";

const dirs: string[] = [];
const children: MailprobeChild[] = [];
after(async () => {
  for (const c of children) if (!c.exited) c.proc.kill("SIGKILL");
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function serveEnv(port: number): Promise<NodeJS.ProcessEnv> {
  const dataDir = await mkdtemp(join(tmpdir(), "mailprobe-start-up-"));
  dirs.push(dataDir);
  const { DATABASE_URL: _db, ...env } = inheritedEnv();
  return { ...env, DATA_DIR: dataDir, HOST: "127.0.0.1", PORT: String(port) };
}

/** A plain listener holding a loopback port, as another program would. */
async function holdPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as { port: number }).port };
}

test("a busy port: one line naming the port and PORT, exit 1, no stack trace", async () => {
  const { server, port } = await holdPort();
  try {
    const proc = spawn(process.execPath, ["bin/mailprobe.js", "serve"], {
      env: await serveEnv(port),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => proc.once("exit", r));
    assert.equal(code, 1, `stdout:\n${stdout}\nstderr:\n${stderr}`);
    assert.equal(stderr, `mailprobe: port ${port} is in use; set PORT\n`);
    assert.doesNotMatch(stdout, /EADDRINUSE|\n\s+at /, "no error object or stack on stdout either");
    assert.doesNotMatch(stdout, /listening on/);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("the port freed, the same data directory starts: the failed start released it", async () => {
  const { server, port } = await holdPort();
  const env = await serveEnv(port);
  const failed = spawn(process.execPath, ["bin/mailprobe.js", "serve"], { env, stdio: "ignore" });
  assert.equal(await new Promise((r) => failed.once("exit", r)), 1);
  await new Promise<void>((r) => server.close(() => r()));

  const child = await startMailprobe("serve", ["serve"], env, "API docs at");
  children.push(child);
  // HOST=127.0.0.1: exactly that address, the one the server answers on.
  assert.match(
    child.output,
    new RegExp(`listening on http://127\\.0\\.0\\.1:${port} \\(ready in \\d+ ms\\)`),
  );
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  assert.equal(res.status, 200);
  child.proc.kill("SIGTERM");
  assert.equal((await exitOf(child)).code, 0);
});
