// `mailprobe users list|show|deactivate|sign-in-link` as real child processes: embedded without a server
// (direct), embedded through a running `serve` (loopback admin API), and PostgreSQL (direct).
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { after, describe, test } from "node:test";
import { cliEnv, freePort, tempDataDir } from "../../support/child-process.ts";
import { createTestContext } from "../../support/test-app.ts";
import { testDatabaseUrl } from "../../support/test-db.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const PG_URL = process.env.TEST_DATABASE_URL;
const COMMAND_TIMEOUT_MS = 120_000;

const children = new Set<ChildProcess>();
after(() => {
  for (const child of children) child.kill("SIGKILL");
});

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
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

function run(args: string[], env: NodeJS.ProcessEnv): Promise<Outcome> {
  const child = start(args, env);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`mailprobe ${args.join(" ")} did not exit\n${stdout}\n${stderr}`));
    }, COMMAND_TIMEOUT_MS);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function ok(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const out = await run(args, env);
  assert.equal(out.code, 0, `mailprobe ${args.join(" ")}:\n${out.stderr}`);
  return out.stdout;
}

function assertCleanFailure(out: Outcome, mentions: RegExp): void {
  assert.notEqual(out.code, 0, out.stdout);
  assert.match(out.stderr, mentions);
  assert.doesNotMatch(out.stderr, /^\s+at /m, `no stack trace:\n${out.stderr}`);
}

interface UserJson {
  user_id: string;
  email: string | null;
  balance: number;
  is_active: boolean;
  active_keys: number;
  usage: { days: number; verifications: number; credits_charged: number };
}

/**
 * The operator's round: two users, found by part of the email, shown by email and by id, one
 * deactivated by email. Returns the deactivated user's key (for the caller to try against a server).
 */
async function operatorRound(env: NodeJS.ProcessEnv): Promise<{ apiKey: string; userId: string }> {
  const tag = Math.random().toString(36).slice(2, 8);
  const made = [];
  for (const [name, credits] of [
    ["ann", "7"],
    ["bob", "3"],
  ] as const) {
    made.push(
      JSON.parse(
        await ok(
          ["users", "create", "--credits", credits, "--email", `${name}.${tag}@Example.test`, "--json"],
          env,
        ),
      ) as { user_id: string; api_key: string },
    );
  }
  const [ann, bob] = made as [(typeof made)[0], (typeof made)[0]];

  const listed = JSON.parse(await ok(["users", "list", "--email", tag.toUpperCase(), "--json"], env)) as {
    users: UserJson[];
    total: number;
    limit: number;
  };
  assert.equal(listed.total, 2);
  assert.equal(listed.limit, 50);
  // Newest first.
  assert.deepEqual(
    listed.users.map((u) => [u.user_id, u.balance, u.is_active, u.active_keys]),
    [
      [bob.user_id, 3, true, 1],
      [ann.user_id, 7, true, 1],
    ],
  );
  const paged = JSON.parse(
    await ok(["users", "list", "--email", tag, "--limit", "1", "--offset", "1", "--json"], env),
  );
  assert.deepEqual(
    (paged as { users: UserJson[] }).users.map((u) => u.user_id),
    [ann.user_id],
  );
  const table = await ok(["users", "list", "--email", tag], env);
  assert.match(table, /^user_id\temail\tbalance\tstate/m);
  assert.match(table, new RegExp(`^${ann.user_id}\tann\\.${tag}@Example\\.test\t7\tactive\t1\t0\t0$`, "m"));
  assert.match(table, /\(1-2 of 2 users\)/);

  const shown = JSON.parse(
    await ok(["users", "show", `ANN.${tag}@example.test`, "--json"], env),
  ) as UserJson & {
    api_keys: Array<{ is_active: boolean }>;
  };
  assert.equal(shown.user_id, ann.user_id);
  assert.equal(shown.api_keys.length, 1);
  assert.match(await ok(["users", "show", bob.user_id], env), /^balance: 3$/m);

  const deactivated = JSON.parse(
    await ok(["users", "deactivate", `bob.${tag}@example.test`, "--json"], env),
  ) as {
    user: UserJson;
    deactivated_key_ids: string[];
  };
  assert.equal(deactivated.user.user_id, bob.user_id);
  assert.equal(deactivated.user.is_active, false);
  assert.equal(deactivated.deactivated_key_ids.length, 1);
  const after = JSON.parse(await ok(["users", "show", bob.user_id, "--json"], env)) as UserJson & {
    api_keys: Array<{ is_active: boolean }>;
  };
  assert.equal(after.is_active, false);
  assert.deepEqual(
    after.api_keys.map((k) => k.is_active),
    [false],
  );
  assertCleanFailure(await run(["keys", "create", bob.user_id], env), /deactivated/);
  assertCleanFailure(await run(["users", "show", `nobody.${tag}@example.test`], env), /User not found/);
  return { apiKey: bob.api_key, userId: bob.user_id };
}

/**
 * `users sign-in-link`: a link for a user found by email, on the address given (text: the link on
 * the first line), tied to the user's custom key; a user that does not exist is one clean line.
 * Returns the token of a second, unused link (JSON form) for the caller to redeem on a server.
 */
async function signInLinkRound(env: NodeJS.ProcessEnv): Promise<{ token: string; userId: string }> {
  const tag = Math.random().toString(36).slice(2, 8);
  const user = JSON.parse(
    await ok(["users", "create", "--credits", "1", "--email", `lin.${tag}@example.test`, "--json"], env),
  ) as { user_id: string };
  const text = await ok(
    ["users", "sign-in-link", `lin.${tag}@example.test`, "--url", "https://mail.example.com/"],
    env,
  );
  const [first, second] = text.split("\n");
  assert.match(first ?? "", /^https:\/\/mail\.example\.com\/#\/sign-in\?link=mpl_[0-9A-Za-z]{40}$/);
  assert.match(second ?? "", /^one use, until \S+; opens a session of key [0-9a-f-]{36}/);
  const json = JSON.parse(await ok(["users", "sign-in-link", user.user_id, "--json"], env)) as {
    url: string;
    token: string;
    user_id: string;
  };
  assert.equal(json.user_id, user.user_id);
  assert.equal(json.url, `http://localhost:${env.PORT ?? ""}/#/sign-in?link=${json.token}`);
  assertCleanFailure(
    await run(["users", "sign-in-link", `nobody.${tag}@example.test`], env),
    /User not found/,
  );
  return { token: json.token, userId: user.user_id };
}

describe(
  "embedded (PGlite data directory)",
  { skip: PG_URL ? "runs on the PGlite pass only" : false },
  () => {
    test("without a server: list, show and deactivate open the directory directly; usage errors are one line", async () => {
      const env = cliEnv({ DATA_DIR: await tempDataDir("mailprobe-users"), PORT: String(await freePort()) });
      await operatorRound(env);
      await signInLinkRound(env);
      assertCleanFailure(
        await run(["users", "show", "not-a-user"], env),
        /neither a user id \(UUID\) nor an email/,
      );
      assertCleanFailure(await run(["users", "list", "--limit", "101"], env), /between 1 and 100/);
    });

    test("with `serve` running: the commands go through its admin API and the deactivated key stops working", async () => {
      const port = await freePort();
      const env = cliEnv({ DATA_DIR: await tempDataDir("mailprobe-users"), PORT: String(port) });
      const server = start(["serve"], env);
      let seen = "";
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`serve did not start:\n${seen}`)),
          COMMAND_TIMEOUT_MS,
        );
        server.stdout!.on("data", (d: Buffer) => {
          seen += d.toString();
          if (/API docs at/.test(seen)) {
            clearTimeout(timer);
            resolve();
          }
        });
        server.once("exit", (code) => reject(new Error(`serve exited (${code}):\n${seen}`)));
      });
      try {
        const { apiKey } = await operatorRound(env);
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/credits/balance`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        assert.equal(res.status, 401);
        // A link minted through the admin API opens a session on the server, once.
        const link = await signInLinkRound(env);
        const redeem = () =>
          fetch(`http://127.0.0.1:${port}/api/v1/auth/sign-in-links/redeem`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ token: link.token }),
          });
        const first = await redeem();
        assert.equal(first.status, 200);
        assert.equal(((await first.json()) as { user_id: string }).user_id, link.userId);
        assert.equal((await redeem()).status, 401);
      } finally {
        server.kill("SIGTERM");
        await new Promise((r) => server.once("exit", r));
      }
    });
  },
);

describe("PostgreSQL (DATABASE_URL): direct", { skip: PG_URL ? false : "needs the PostgreSQL pass" }, () => {
  test("list, show and deactivate; the deactivated key is refused by the API on that database", async () => {
    const ctx = await createTestContext();
    try {
      const env = cliEnv({
        DATA_DIR: await tempDataDir("mailprobe-users"),
        PORT: String(await freePort()),
        DATABASE_URL: testDatabaseUrl(ctx.db)!,
        ENCRYPTION_KEY: "ab".repeat(32),
      });
      const { apiKey } = await operatorRound(env);
      const res = await ctx.app.inject({
        method: "GET",
        url: "/api/v1/credits/balance",
        headers: ctx.bearer(apiKey),
      });
      assert.equal(res.statusCode, 401);
      const link = await signInLinkRound(env);
      const redeemed = await ctx.app.inject({
        method: "POST",
        url: "/api/v1/auth/sign-in-links/redeem",
        payload: { token: link.token },
      });
      assert.equal(redeemed.statusCode, 200, redeemed.body);
    } finally {
      await ctx.close();
    }
  });
});
