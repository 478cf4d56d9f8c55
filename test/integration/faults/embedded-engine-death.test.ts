// The embedded engine's backend dying (a PANIC, an exit) ends in errors, not in a thread spinning
// for good. PGlite 0.5's protocol loop swallows every exception but its ERROR longjmp; a disk-full
// PANIC (abort) left the server at 100 % CPU with every request timing out and SIGTERM ignored
// (docs/disk-space.md). src/db/pglite.ts marks the instance dead on the first such exception:
// the statement in flight rejects, every later one rejects at once, close() returns. The abort
// itself needs a full disk (test/integration/faults/disk-full.test.ts, root only); here the exit
// path, which any machine can trigger. The scenario runs in a child so a regression is a failed
// test, not a hung run. PGlite only.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { inheritedEnv } from "../../support/child-process.ts";

const skip = process.env.TEST_DATABASE_URL ? "concerns the embedded engine; runs on the PGlite suite" : null;

/** A bound on the child's whole run (PGlite's start included), not a performance figure. */
const CHILD_DEADLINE_MS = 60_000;

test("a backend that exits mid-statement: that statement and every later call reject, nothing spins", async (t) => {
  if (skip) {
    t.skip(skip);
    return;
  }
  const child = spawn(process.execPath, ["--import", "tsx", "test/support/pglite-backend-exit.ts"], {
    env: inheritedEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const killer = setTimeout(() => child.kill("SIGKILL"), CHILD_DEADLINE_MS);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((r) =>
    child.once("exit", (c, s) => r([c, s])),
  );
  clearTimeout(killer);
  assert.equal(signal, null, `the child had to be killed (spinning?): ${out}${err}`);
  assert.equal(code, 0, err);
  const stopped = { error: "EmbeddedDatabaseStoppedError", unavailable: true };
  assert.deepEqual(JSON.parse(out.trim().split("\n").pop()!), {
    copy: stopped,
    query: stopped,
    transaction: stopped,
    closed: { resolved: true },
    // Emscripten's exit() sets process.exitCode; the host's own exit status must not follow it.
    exitCode: 0,
  });
});
