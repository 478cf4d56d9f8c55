// The real `mailprobe` binary as child processes: data commands without a server (direct mode),
// through a running `serve` (admin API), graceful shutdown, and usage errors.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { testDatabaseUrl } from "../../support/test-db.ts";
import { createTestContext } from "../../support/test-app.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const PG_URL = process.env.TEST_DATABASE_URL;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Generous: a first PGlite start in a new data directory runs initdb (seconds on a slow CI). */
const COMMAND_TIMEOUT_MS = 120_000;

const children = new Set<ChildProcess>();
const dirs: string[] = [];
after(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mailprobe-cli-"));
  dirs.push(dir);
  return dir;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The child's environment: only what the test sets, never the developer's DATABASE_URL & co. */
function cliEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: "warn", HOST: "127.0.0.1", ...vars };
  for (const name of ["DATABASE_URL", "REDIS_URL", "ENCRYPTION_KEY", "JWT_SECRET"]) {
    if (!(name in vars)) delete env[name];
  }
  return env;
}

function start(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, ["bin/mailprobe.js", ...args], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function waitForExit(child: ChildProcess, timeoutMs = COMMAND_TIMEOUT_MS): Promise<Outcome> {
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(`mailprobe did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`),
      );
    }, timeoutMs);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const run = (args: string[], env: NodeJS.ProcessEnv): Promise<Outcome> => waitForExit(start(args, env));

/** A usage error: non-zero exit, a one-line explanation, and no stack trace. */
function assertCleanFailure(out: Outcome, mentions: RegExp): void {
  assert.notEqual(out.code, 0, `exit code should be non-zero; stdout: ${out.stdout}`);
  assert.equal(out.signal, null);
  assert.match(out.stderr, mentions);
  assert.doesNotMatch(out.stderr, /^\s+at /m, `no stack trace:\n${out.stderr}`);
  assert.doesNotMatch(out.stderr, /node_modules|\.ts:\d+/);
}

describe(
  "embedded mode (PGlite data directory)",
  { skip: PG_URL ? "the embedded CLI runs on the PGlite pass only" : false },
  () => {
    test("without a server: users create --json, then credits grant (and an unknown user) open the directory directly", async () => {
      const env = cliEnv({ DATA_DIR: await tempDataDir(), PORT: String(await freePort()) });
      const created = await run(["users", "create", "--credits", "7", "--json"], env);
      assert.equal(created.code, 0, created.stderr);
      // stdout is exactly one JSON document (pipeable); warnings went to stderr.
      const lines = created.stdout.trim().split("\n");
      assert.equal(lines.length, 1, `one line of JSON on stdout, got:\n${created.stdout}`);
      const user = JSON.parse(lines[0]!) as { user_id: string; balance: number; api_key: string };
      assert.deepEqual(Object.keys(user).sort(), ["api_key", "balance", "user_id"]);
      assert.match(user.user_id, UUID);
      assert.equal(user.balance, 7);
      assert.match(user.api_key, /^mpk_[0-9A-Za-z]{40}$/);
      // A data command that creates a database says so (a mistyped DATA_DIR is otherwise silent).
      assert.match(created.stderr, /warning: .* holds no database; creating a new one there/);

      const granted = await run(["credits", "grant", user.user_id, "5", "--reason", "test"], env);
      assert.equal(granted.code, 0, granted.stderr);
      assert.doesNotMatch(granted.stderr, /holds no database/, "an existing database: no warning");
      assert.match(granted.stdout, /\bbalance 12\b/);

      // Same directory (an initialised one, so this costs no second initdb): an unknown user.
      const unknown = await run(
        ["credits", "grant", "00000000-0000-4000-8000-000000000000", "5", "--reason", "x"],
        env,
      );
      assertCleanFailure(unknown, /User not found/);

      // keys create|list|revoke (direct mode): the same domain rules as the API.
      const made = await run(
        ["keys", "create", user.user_id, "--name", "ops", "--purpose", "zapier", "--json"],
        env,
      );
      assert.equal(made.code, 0, made.stderr);
      const key = JSON.parse(made.stdout) as { id: string; key: string; purpose: string; name: string };
      assert.match(key.id, UUID);
      assert.match(key.key, /^mpk_[0-9A-Za-z]{40}$/);
      assert.deepEqual([key.name, key.purpose], ["ops", "zapier"]);
      const revoked = await run(["keys", "revoke", user.user_id, key.id], env);
      assert.equal(revoked.code, 0, revoked.stderr);
      const listed = await run(["keys", "list", user.user_id, "--json"], env);
      assert.equal(listed.code, 0, listed.stderr);
      const keys = JSON.parse(listed.stdout) as Array<{ id: string; is_active: boolean; key?: string }>;
      assert.equal(keys.length, 2);
      assert.equal(keys.find((k) => k.id === key.id)?.is_active, false);
      assert.ok(
        keys.every((k) => !("key" in k)),
        "list never prints plaintext",
      );
      const first = keys.find((k) => k.id !== key.id)!;
      assert.equal(first.is_active, true);
      assertCleanFailure(await run(["keys", "revoke", user.user_id, first.id], env), /last active API key/);
      assertCleanFailure(
        await run(["keys", "create", "00000000-0000-4000-8000-000000000000"], env),
        /User not found/,
      );
    });

    test("with `serve` running: the data commands go through its admin API; SIGTERM stops it cleanly", async () => {
      const dataDir = await tempDataDir();
      const port = await freePort();
      const env = cliEnv({ DATA_DIR: dataDir, PORT: String(port) });

      const server = start(["serve"], env);
      const exited = waitForExit(server);
      const startup = await new Promise<string>((resolve, reject) => {
        let seen = "";
        const onData = (d: Buffer): void => {
          seen += d.toString();
          // The docs line is the last line of the start-up banner.
          if (/API docs at/.test(seen)) {
            server.stdout!.off("data", onData);
            resolve(seen);
          }
        };
        server.stdout!.on("data", onData);
        exited.then(
          (o) => reject(new Error(`serve exited early (${o.code}):\n${o.stdout}\n${o.stderr}`)),
          reject,
        );
      });
      assert.match(startup, new RegExp(`listening on http://127\\.0\\.0\\.1:${port}`));
      assert.match(startup, /users create --credits/, "a fresh install says how to get the first key");
      // …with this server's DATA_DIR, which is not the default: without it the CLI would create
      // and use a second database in ./data.
      assert.ok(
        startup.includes(`DATA_DIR=${dataDir} npx mailprobe users create --credits`),
        `the hint names DATA_DIR:\n${startup}`,
      );
      assert.ok(existsSync(join(dataDir, "admin.json")), "the admin endpoint is published");

      const created = await run(["users", "create", "--credits", "100"], env);
      assert.equal(created.code, 0, created.stderr);
      assert.doesNotMatch(created.stderr, /holds no database/, "through the server: no new database");
      const apiKey = /^api_key: (mpk_\S+)$/m.exec(created.stdout)?.[1];
      const userId = /^user_id: (\S+)$/m.exec(created.stdout)?.[1];
      assert.ok(apiKey && userId, `key and id printed:\n${created.stdout}`);

      const res = await fetch(`http://127.0.0.1:${port}/api/v1/credits/balance`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { user_id: userId, balance: 100 });

      const viaServer = await run(["credits", "grant", userId, "5", "--reason", "while serving"], env);
      assert.equal(viaServer.code, 0, viaServer.stderr);
      assert.match(viaServer.stdout, /\bbalance 105\b/);

      // keys through the admin API: a created key works on the server, a revoked one stops.
      const made = await run(["keys", "create", userId, "--name", "second"], env);
      assert.equal(made.code, 0, made.stderr);
      const secondKey = /^key: (mpk_\S+)$/m.exec(made.stdout)?.[1];
      const secondId = /^id: (\S+)$/m.exec(made.stdout)?.[1];
      assert.ok(secondKey && secondId, made.stdout);
      const balanceWith = (k: string) =>
        fetch(`http://127.0.0.1:${port}/api/v1/credits/balance`, {
          headers: { authorization: `Bearer ${k}` },
        });
      assert.equal((await balanceWith(secondKey)).status, 200);
      const revoked = await run(["keys", "revoke", userId, secondId], env);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.equal((await balanceWith(secondKey)).status, 401);
      const listed = await run(["keys", "list", userId], env);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, new RegExp(`^${secondId}\trevoked\tcustom\t`, "m"));
      const firstId = /^(\S+)\tactive\t/m.exec(listed.stdout)?.[1];
      assert.ok(firstId, listed.stdout);
      assertCleanFailure(await run(["keys", "revoke", userId, firstId], env), /last active API key/);

      server.kill("SIGTERM");
      const stopped = await Promise.race([
        exited,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error("serve did not stop within 15 s of SIGTERM")), 15_000),
        ),
      ]);
      assert.equal(stopped.signal, null);
      assert.equal(stopped.code, 0, stopped.stderr);
      assert.ok(!existsSync(join(dataDir, "admin.json")), "the admin endpoint is withdrawn");
      assert.ok(!existsSync(join(dataDir, "mailprobe.lock")), "the data directory is unlocked");

      // The same directory, now without a server: direct mode again, and the data survived.
      const direct = await run(["credits", "grant", userId, "1", "--reason", "after stop"], env);
      assert.equal(direct.code, 0, direct.stderr);
      assert.match(direct.stdout, /\bbalance 106\b/);
    });
  },
);

describe("usage errors", { skip: PG_URL ? "runs on the PGlite pass only" : false }, () => {
  test("an invalid DNS_SERVERS → non-zero before any database work, names the variable, no stack", async () => {
    const dataDir = join(await tempDataDir(), "never-created");
    const env = cliEnv({
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      DNS_SERVERS: "not-a-host:99999",
    });
    const out = await run(["users", "create", "--credits", "1"], env);
    assertCleanFailure(out, /DNS_SERVERS: "not-a-host:99999" is not an IP address/);
    assert.ok(!existsSync(dataDir), "no data directory was created");
  });

  test("credits grant with a user id that is not a UUID → non-zero, names the argument, no stack", async () => {
    const env = cliEnv({ DATA_DIR: await tempDataDir(), PORT: String(await freePort()) });
    const out = await run(["credits", "grant", "not-a-uuid", "5", "--reason", "x"], env);
    assertCleanFailure(out, /user_id.*UUID/);
  });

  test("credits grant with a non-numeric amount → non-zero", async () => {
    const env = cliEnv({ DATA_DIR: await tempDataDir(), PORT: String(await freePort()) });
    const out = await run(
      ["credits", "grant", "00000000-0000-4000-8000-000000000000", "five", "--reason", "x"],
      env,
    );
    assertCleanFailure(out, /amount/);
  });

  test("keys revoke with a key id that is not a UUID, keys create with an unknown purpose → non-zero, no stack", async () => {
    const env = cliEnv({ DATA_DIR: "/nonexistent-mailprobe-dir" });
    const user = "00000000-0000-4000-8000-000000000000";
    assertCleanFailure(await run(["keys", "revoke", user, "nope"], env), /key_id.*API key id \(UUID\)/);
    assertCleanFailure(
      await run(["keys", "create", user, "--purpose", "admin"], env),
      /purpose.*must be one of/,
    );
  });

  test("users create without --credits → non-zero, names the option", async () => {
    const env = cliEnv({ DATA_DIR: await tempDataDir(), PORT: String(await freePort()) });
    const out = await run(["users", "create"], env);
    assertCleanFailure(out, /--credits/);
  });
});

describe(
  "PostgreSQL (DATABASE_URL): direct mode",
  { skip: PG_URL ? false : "needs the PostgreSQL pass (npm run test:pg)" },
  () => {
    test("users create --json and credits grant open the database directly", async () => {
      // The child works in this file's own schema, the one the test context reads.
      const ctx = await createTestContext();
      try {
        const env = cliEnv({
          DATA_DIR: await tempDataDir(),
          PORT: String(await freePort()),
          DATABASE_URL: testDatabaseUrl(ctx.db)!,
          // Cluster mode generates no key: without one, creating the first API key must fail.
          ENCRYPTION_KEY: "ab".repeat(32),
        });
        const created = await run(["users", "create", "--credits", "3", "--json"], env);
        assert.equal(created.code, 0, created.stderr);
        const user = JSON.parse(created.stdout.trim()) as {
          user_id: string;
          balance: number;
          api_key: string;
        };
        assert.match(user.user_id, UUID);
        assert.equal(user.balance, 3);

        const granted = await run(["credits", "grant", user.user_id, "4", "--reason", "pg"], env);
        assert.equal(granted.code, 0, granted.stderr);
        assert.match(granted.stdout, /\bbalance 7\b/);

        // The printed key is a real credential on that database.
        const res = await ctx.app.inject({
          method: "GET",
          url: "/api/v1/credits/balance",
          headers: ctx.bearer(user.api_key),
        });
        assert.equal(res.statusCode, 200);
        assert.deepEqual(res.json(), { user_id: user.user_id, balance: 7 });
      } finally {
        await ctx.close();
      }
    });

    test("without ENCRYPTION_KEY, users create fails cleanly (no key can be stored for reveal)", async () => {
      const env = cliEnv({
        DATA_DIR: await tempDataDir(),
        PORT: String(await freePort()),
        DATABASE_URL: PG_URL!,
      });
      const out = await run(["users", "create", "--credits", "1", "--json"], env);
      assertCleanFailure(out, /ENCRYPTION_KEY/);
      assert.equal(out.stdout, "");
    });
  },
);
