// Spec rule 4, from the command line: `mailprobe users create --credits` and
// `mailprobe credits grant` as real child processes write ledger rows labelled
// metadata.source = "operator", which GET /credits/usage reports under source=operator and the
// per-key report leaves out of its unknown bucket. PGlite: the commands open a DATA_DIR directly,
// then this process opens that directory. PostgreSQL: the commands work in this file's schema.
// (Through a running `serve` the commands call the admin API: reports/operator-grants.test.ts.)
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { openDatabase } from "../../../src/db/open.ts";
import { cliEnv, freePort, tempDataDir } from "../../support/child-process.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";
import { testDatabaseUrl } from "../../support/test-db.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const PG_URL = process.env.TEST_DATABASE_URL;
/** Generous: a first PGlite start in a new data directory runs initdb (seconds on a slow CI). */
const COMMAND_TIMEOUT_MS = 120_000;

/** Runs `mailprobe …args` to its end; its stdout, after asserting exit code 0. */
function mailprobe(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(process.execPath, ["bin/mailprobe.js", ...args], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`mailprobe ${args.join(" ")} did not exit\n${stdout}\n${stderr}`));
    }, COMMAND_TIMEOUT_MS);
    child.once("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`mailprobe ${args.join(" ")} exited ${code}:\n${stderr}`));
    });
  });
}

/** `users create --credits 7` then `credits grant … 5 --reason "spring promo"`. */
async function grantFromTheCommandLine(env: NodeJS.ProcessEnv): Promise<{ userId: string; apiKey: string }> {
  const created = JSON.parse(await mailprobe(["users", "create", "--credits", "7", "--json"], env)) as {
    user_id: string;
    api_key: string;
  };
  const granted = await mailprobe(
    ["credits", "grant", created.user_id, "5", "--reason", "spring promo"],
    env,
  );
  assert.match(granted, /\bbalance 12\b/);
  return { userId: created.user_id, apiKey: created.api_key };
}

/** What the two commands wrote, as the ledger and the reports show it. */
async function assertLabelled(ctx: TestContext, user: { userId: string; apiKey: string }): Promise<void> {
  const { rows } = await ctx.db.query<{ type: string; amount: number; reason: string; metadata: unknown }>(
    `select type, amount::int as amount, reason, metadata from credit_transactions
      where user_id = $1 order by created_at, id`,
    [user.userId],
  );
  assert.deepEqual(rows, [
    { type: "grant", amount: 7, reason: "initial_grant", metadata: { source: "operator" } },
    { type: "grant", amount: 5, reason: "spring promo", metadata: { source: "operator" } },
  ]);

  const now = Date.now();
  const range = `from=${new Date(now - 86_400_000).toISOString()}&to=${new Date(now + 60_000).toISOString()}`;
  const get = async (url: string) => {
    const res = await ctx.app.inject({ method: "GET", url, headers: ctx.bearer(user.apiKey) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<{ totals: unknown; keys: unknown[] }>();
  };
  const totals = (used: number, granted: number) => ({
    used_credits: used,
    granted_credits: granted,
    net_credits: used - granted,
  });
  assert.deepEqual((await get(`/api/v1/credits/usage?${range}&source=operator`)).totals, totals(0, 12));
  assert.deepEqual((await get(`/api/v1/credits/usage?${range}&source=all`)).totals, totals(0, 12));
  assert.deepEqual((await get(`/api/v1/credits/usage?${range}&source=api_key`)).totals, totals(0, 0));
  assert.deepEqual(
    (await get(`/api/v1/credits/usage/api-keys?${range}`)).keys,
    [],
    "no unknown bucket: the operator's grants are not attributed to a missing key",
  );
}

test(
  "embedded (PGlite): users create --credits and credits grant write operator-labelled rows",
  { skip: PG_URL ? "the embedded CLI runs on the PGlite pass only" : false },
  async () => {
    const dataDir = await tempDataDir("mailprobe-grants");
    const user = await grantFromTheCommandLine(cliEnv({ DATA_DIR: dataDir, PORT: String(await freePort()) }));
    // The commands have exited: the directory is free for this process.
    const db = await openDatabase({ databaseUrl: null, dataDir, poolSize: 1 });
    const ctx = await createTestContext({ db });
    try {
      await assertLabelled(ctx, user);
    } finally {
      await ctx.close();
      await db.close();
    }
  },
);

test(
  "PostgreSQL (DATABASE_URL): users create --credits and credits grant write operator-labelled rows",
  { skip: PG_URL ? false : "needs the PostgreSQL pass" },
  async () => {
    const ctx = await createTestContext();
    try {
      const user = await grantFromTheCommandLine(
        cliEnv({
          DATA_DIR: await tempDataDir("mailprobe-grants"),
          PORT: String(await freePort()),
          DATABASE_URL: testDatabaseUrl(ctx.db)!,
          ENCRYPTION_KEY: "ab".repeat(32),
        }),
      );
      await assertLabelled(ctx, user);
    } finally {
      await ctx.close();
    }
  },
);
