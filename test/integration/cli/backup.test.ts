// `mailprobe backup` / `mailprobe restore` as an operator runs them: real `serve` processes on
// real data directories. The embedded engine's round trip runs on the PGlite pass; on the
// PostgreSQL pass the commands refuse, and the pg_dump/pg_restore commands they name are run.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { openPostgres } from "../../../src/db/postgres.ts";
import { runMailprobe } from "../../support/backup-load.ts";
import { exitOf, freePort, inheritedEnv, runCli, startMailprobe } from "../../support/child-process.ts";

const PG_URL = process.env.TEST_DATABASE_URL;

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mailprobe-backup-"));
  dirs.push(dir);
  return dir;
}

/** A child's environment: the data directory and port the test names, nothing of the developer's. */
function envOf(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...inheritedEnv(), LOG_LEVEL: "warn", HOST: "127.0.0.1", ...vars };
  for (const name of ["DATABASE_URL", "REDIS_URL", "ENCRYPTION_KEY", "JWT_SECRET"])
    if (!(name in vars)) delete env[name];
  return env;
}

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command (through sh when `shell`) to its end, whatever its exit status. */
async function runToEnd(args: readonly string[], env: NodeJS.ProcessEnv, shell = false): Promise<Outcome> {
  if (!shell) return runMailprobe(args, env);
  const proc = spawn("sh", ["-c", args.join(" ")], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((r) => proc.once("close", r));
  return { code, stdout, stderr };
}

/** A refusal: exit 1, one line on stderr, no stack trace. */
function assertRefused(out: Outcome, mentions: RegExp): void {
  assert.equal(out.code, 1, `exit 1; stdout: ${out.stdout}\nstderr: ${out.stderr}`);
  assert.match(out.stderr, mentions);
  assert.equal(out.stderr.trim().split("\n").length, 1, `one line:\n${out.stderr}`);
  assert.doesNotMatch(out.stderr, /^\s+at /m);
}

async function getJson<T>(base: string, path: string, bearer: string): Promise<T> {
  const res = await fetch(base + path, { headers: { authorization: `Bearer ${bearer}` } });
  assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
  return (await res.json()) as T;
}

interface Account {
  balance: unknown;
  ledger: { transactions: unknown[] };
  keys: Array<Record<string, unknown>>;
}

/**
 * What a user can see of its account: balance, the whole ledger, and its keys in plaintext
 * (without last_used_at, which these very calls may move on by a minute).
 */
async function accountOf(base: string, key: string): Promise<Account> {
  const { api_keys } = await getJson<{ api_keys: Array<Record<string, unknown>> }>(
    base,
    "/api/v1/api-keys?reveal=true",
    key,
  );
  return {
    balance: await getJson(base, "/api/v1/credits/balance", key),
    ledger: await getJson(base, "/api/v1/credits/transactions?limit=100", key),
    keys: api_keys.map(({ last_used_at: _, ...k }) => k),
  };
}

async function serve(name: string, dataDir: string): Promise<{ base: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = await startMailprobe(
    name,
    ["serve", "--no-worker"],
    envOf({ DATA_DIR: dataDir, PORT: String(port) }),
    "API docs at",
    120_000,
  );
  return {
    base: `http://127.0.0.1:${port}`,
    async stop() {
      child.proc.kill("SIGTERM");
      assert.equal((await exitOf(child)).code, 0, child.output);
    },
  };
}

const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe("embedded engine", { skip: PG_URL ? "the embedded engine runs on the PGlite pass" : false }, () => {
  test("a backup taken while serve runs restores into another directory: same keys, sessions and ledger", async (t) => {
    const source = await tempDir();
    const envA = envOf({ DATA_DIR: source });
    const a = await serve("serve A", source);
    const user = JSON.parse(await runCli(["users", "create", "--credits", "100", "--json"], envA)) as {
      user_id: string;
      api_key: string;
    };
    await runCli(["credits", "grant", user.user_id, "50", "--reason", "top-up"], envA);
    await runCli(["keys", "create", user.user_id, "--name", "second"], envA);
    const session = await fetch(`${a.base}/api/v1/auth/session`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.api_key}` },
    });
    assert.equal(session.status, 200);
    const { token } = (await session.json()) as { token: string };
    const before = await accountOf(a.base, user.api_key);

    // Grants go on while the backup is taken: the copy must be a point in time of the ledger.
    const admin = JSON.parse(await readFile(join(source, "admin.json"), "utf8")) as {
      url: string;
      token: string;
    };
    let backingUp = true;
    let concurrentGrants = 0;
    const writer = (async () => {
      while (backingUp && concurrentGrants < 40) {
        const res = await fetch(`${admin.url}/admin/v1/credits/grant`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-admin-token": admin.token },
          body: JSON.stringify({ user_id: user.user_id, amount: 1, reason: "during backup" }),
        });
        assert.equal(res.status, 201, await res.text());
        concurrentGrants++;
        await delay(20);
      }
    })();
    const file = join(await tempDir(), "mailprobe.backup");
    const said = await runCli(["backup", "--out", file], envA).finally(() => (backingUp = false));
    await writer;
    t.diagnostic(`${said.split("\n")[0]} (${concurrentGrants} grants written meanwhile)`);
    assert.match(said, /from the running server/);
    assert.match(said, /holds encryption\.key and jwt\.secret/);
    assert.equal(await modeOf(file), 0o600, "the backup holds secrets: owner only");
    // Written after the backup: not in it.
    await runCli(["credits", "grant", user.user_id, "7", "--reason", "later"], envA);
    const final = await accountOf(a.base, user.api_key);
    await a.stop();

    const target = join(await tempDir(), "restored");
    const envB = envOf({ DATA_DIR: target });
    const restored = await runCli(["restore", file], envB);
    t.diagnostic(restored.trim());
    const entries = Number(/: 1 users, (\d+) ledger entries/.exec(restored)?.[1]);
    assert.ok(
      entries >= before.ledger.transactions.length && entries < final.ledger.transactions.length,
      `${entries} entries: all those before the backup, not the one after`,
    );
    assert.equal(before.keys.length, 2);
    assert.ok(
      before.keys.every((k) => typeof k.key === "string"),
      "both keys reveal",
    );
    for (const name of ["encryption.key", "jwt.secret"]) {
      assert.equal(await readFile(join(target, name), "utf8"), await readFile(join(source, name), "utf8"));
      assert.equal(await modeOf(join(target, name)), 0o600);
    }

    const b = await serve("serve B", target);
    try {
      // The old key authenticates; the ledger is row for row A's up to the backup (newest first,
      // so the oldest `entries` rows) and the balance is its last balance_after; both keys reveal
      // (the encryption key came along) and the session signed by A is valid (the JWT secret).
      const ledger = final.ledger.transactions.slice(-entries) as Array<{ balance_after: number }>;
      const account = await accountOf(b.base, user.api_key);
      assert.deepEqual(account, {
        balance: { user_id: user.user_id, balance: ledger[0]!.balance_after },
        ledger: { ...final.ledger, transactions: ledger, total: entries },
        keys: before.keys,
      });
      assert.deepEqual(await getJson(b.base, "/api/v1/credits/balance", token), account.balance);
    } finally {
      await b.stop();
    }
  });

  test("without a server backup opens DATA_DIR itself; an existing file needs --force; restore refuses a non-empty DATA_DIR", async (t) => {
    const source = await tempDir();
    const env = envOf({ DATA_DIR: source });
    const user = JSON.parse(await runCli(["users", "create", "--credits", "10", "--json"], env)) as {
      user_id: string;
    };
    await runCli(["credits", "grant", user.user_id, "5", "--reason", "top-up"], env);

    const file = join(await tempDir(), "mailprobe.backup");
    const startedAt = performance.now();
    const said = await runCli(["backup", "--out", file], env);
    const ms = Math.round(performance.now() - startedAt);
    assert.match(said, new RegExp(`from ${source} in \\d+ ms`));
    assert.equal(await modeOf(file), 0o600);
    t.diagnostic(`backup of a small database: ${said.split("\n")[0]} (the whole command: ${ms} ms)`);
    assert.ok(!(await readdir(source)).includes("mailprobe.lock"), "the lock is released");

    const first = await readFile(file);
    assertRefused(await runToEnd(["backup", "--out", file], env), /already exists; pass --force/);
    assert.deepEqual(await readFile(file), first, "refused: the file is untouched");
    await runCli(["credits", "grant", user.user_id, "1", "--reason", "after"], env);
    await runCli(["backup", "--out", file, "--force"], env);
    assert.equal(await modeOf(file), 0o600);
    assert.equal((await readdir(join(file, ".."))).length, 1, "no partial file is left beside it");

    const listing = (await readdir(source)).sort();
    assertRefused(
      await runToEnd(["restore", file], env),
      /is not empty .*restore only into an empty or new directory/,
    );
    assert.deepEqual((await readdir(source)).sort(), listing, "the non-empty directory is untouched");

    const notBackup = join(await tempDir(), "notes.zip");
    await writeFile(notBackup, "hello");
    const empty = await tempDir();
    const envE = envOf({ DATA_DIR: empty });
    assertRefused(await runToEnd(["restore", notBackup], envE), /is not a mailprobe backup/);
    assert.deepEqual(await readdir(empty), [], "a bad file leaves DATA_DIR as it was");

    assert.match(await runCli(["restore", file], envE), /: 1 users, 3 ledger entries/);
    // The latest grant is in the forced backup: 10 + 5 + 1, and one more makes 17.
    assert.match(
      await runCli(["credits", "grant", user.user_id, "1", "--reason", "restored"], envE),
      /balance 17\b/,
    );
  });
});

describe("PostgreSQL (DATABASE_URL)", () => {
  // On the PGlite pass an unreachable URL shows that the refusal needs no connection.
  const url = PG_URL ?? "postgres://nobody@127.0.0.1:1/none";

  test("backup and restore refuse with one line naming pg_dump / pg_restore, and write nothing", async () => {
    const dir = await tempDir();
    const file = join(dir, "db.dump");
    const env = envOf({ DATABASE_URL: url, DATA_DIR: join(dir, "data") });
    const backup = await runToEnd(["backup", "--out", file], env);
    assertRefused(backup, /embedded database only; with DATABASE_URL run: pg_dump --format=custom/);
    assert.ok(backup.stderr.includes(`--file=${file}`), backup.stderr);
    assertRefused(await runToEnd(["restore", file], env), /with DATABASE_URL run: pg_restore /);
    assert.deepEqual(await readdir(dir), [], "no file, no DATA_DIR");
  });

  test(
    "the commands they name copy a mailprobe database into a new one",
    { skip: PG_URL ? false : "needs TEST_DATABASE_URL" },
    async (t) => {
      // Databases of this test's own: other files run meanwhile in schemas of the run's database.
      const admin = openPostgres(PG_URL!, 1);
      const urlOf = (db: string): string =>
        Object.assign(new URL(PG_URL!), { pathname: `/${db}` }).toString();
      const [source, copy] = ["src", "copy"].map((n) => `backup_${n}_${process.pid}_${Date.now()}`) as [
        string,
        string,
      ];
      t.after(async () => {
        for (const db of [source, copy]) await admin.query(`drop database if exists ${db} with (force)`);
        await admin.close();
      });
      for (const db of [source, copy]) await admin.query(`create database ${db}`);
      const dir = await tempDir();
      const file = join(dir, "db.dump");
      const env = (db: string): NodeJS.ProcessEnv =>
        envOf({ DATABASE_URL: urlOf(db), DATA_DIR: join(dir, "data"), ENCRYPTION_KEY: "ab".repeat(32) });
      // A real mailprobe database: migrated, one user with a grant (users create on PostgreSQL).
      const user = JSON.parse(await runCli(["users", "create", "--credits", "9", "--json"], env(source))) as {
        user_id: string;
      };
      await runCli(["credits", "grant", user.user_id, "4", "--reason", "top-up"], env(source));

      const hint = (out: Outcome): string => {
        assert.equal(out.code, 1, out.stderr);
        return /run: (.*)$/.exec(out.stderr.trim())![1]!;
      };
      const dump = await runToEnd(
        [hint(await runToEnd(["backup", "--out", file], env(source)))],
        env(source),
        true,
      );
      assert.equal(dump.code, 0, dump.stderr);
      const restore = await runToEnd([hint(await runToEnd(["restore", file], env(copy)))], env(copy), true);
      assert.equal(restore.code, 0, restore.stderr);

      const ledgerOf = async (db: string): Promise<unknown[]> => {
        const conn = openPostgres(urlOf(db), 1);
        try {
          return (
            await conn.query(
              "select u.id, u.balance, t.amount, t.balance_after, t.type from users u join credit_transactions t on t.user_id = u.id order by t.seq",
            )
          ).rows;
        } finally {
          await conn.close();
        }
      };
      const ledger = await ledgerOf(source);
      assert.equal(ledger.length, 2);
      assert.deepEqual(await ledgerOf(copy), ledger);
      // The restored database serves the CLI: the grant lands on the restored balance (9 + 4 + 1).
      assert.match(
        await runCli(["credits", "grant", user.user_id, "1", "--reason", "x"], env(copy)),
        /balance 14\b/,
      );
    },
  );
});
