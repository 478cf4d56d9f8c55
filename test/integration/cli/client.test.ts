// `mailprobe client …` against a real `mailprobe serve` (embedded PGlite in a temporary DATA_DIR,
// probing the simulated mail world), and the serve logs: JSON lines when stdout is not a
// terminal, human lines with LOG_FORMAT=pretty.
//
// Runs on the PGlite pass only: the client talks HTTP to a server whose database is its own
// business; the server here is the embedded one (the PostgreSQL pass adds nothing to what the
// client does).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "csv-parse/sync";
import { RESULT_COLUMNS } from "../../../src/files/index.ts";

/** The result columns beside a list with its own "Email" column (README: Downloads). */
const PREFIXED = RESULT_COLUMNS.map((c) => `mailprobe_${c}`);
import {
  exitOf,
  freePort,
  inheritedEnv,
  runCli,
  startMailprobe,
  type MailprobeChild,
} from "../../support/child-process.ts";
import { worldEnv } from "../../support/batch.ts";
import { xlsxOf } from "../../unit/files/helpers.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let world: MailWorld | undefined;
let dir: string | undefined;
let server: MailprobeChild | undefined;
let port = 0;
let apiKey = "";

function serverEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...inheritedEnv(),
    DATA_DIR: dir!,
    HOST: "127.0.0.1",
    PORT: String(port),
    LOG_LEVEL: "info",
    ...worldEnv(world!),
    ...extra,
  };
  for (const name of ["DATABASE_URL", "REDIS_URL", "ENCRYPTION_KEY", "JWT_SECRET", "LOG_FORMAT"])
    if (!(name in extra)) delete env[name];
  return env;
}

function clientEnv(vars: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...inheritedEnv() };
  delete env.MAILPROBE_URL;
  delete env.MAILPROBE_KEY;
  for (const [k, v] of Object.entries(vars)) if (v !== undefined) env[k] = v;
  return env;
}

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

function client(
  args: readonly string[],
  vars?: Record<string, string | undefined>,
  opts: { cwd?: string; onStderr?: (text: string, child: ReturnType<typeof spawn>) => void } = {},
): Promise<Outcome> {
  const env = clientEnv(vars ?? { MAILPROBE_URL: `http://127.0.0.1:${port}`, MAILPROBE_KEY: apiKey });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, "bin/mailprobe.js"), "client", ...args], {
      cwd: opts.cwd ?? ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      opts.onStderr?.(stderr, child);
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`client ${args.join(" ")} did not exit in time\n${stderr}`));
    }, 60_000);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A word for the shell `script` runs the command with. */
const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * `mailprobe client …` on a terminal: util-linux `script` gives it a pseudo-terminal, so stdin
 * is a TTY as when a person runs it. `answer` is typed once the question is on screen.
 */
function clientOnTerminal(args: readonly string[], answer: string): Promise<Outcome & { asked: boolean }> {
  const env = clientEnv({ MAILPROBE_URL: `http://127.0.0.1:${port}`, MAILPROBE_KEY: apiKey });
  const command = [process.execPath, join(ROOT, "bin/mailprobe.js"), "client", ...args].map(shellQuote);
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qec", command.join(" "), "/dev/null"], {
      cwd: ROOT,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    let asked = false;
    child.stdout.on("data", (d: Buffer) => {
      output += d.toString();
      if (!asked && output.includes("[y/N] ")) {
        asked = true;
        child.stdin.write(answer);
      }
    });
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`client ${args.join(" ")} on a terminal did not exit in time\n${output}`));
    }, 60_000);
    child.once("close", (code) => {
      clearTimeout(timer);
      // The terminal's output, both streams, read as text: without carriage returns and
      // readline's cursor moves (ESC [ … letter).
      // eslint-disable-next-line no-control-regex -- the escape character is what is removed
      const text = output.replace(/\r|\u001b\[[0-9;]*[A-Za-z]/g, "");
      resolve({ code, stdout: text, stderr: "", asked });
    });
  });
}

const hasScript = spawnSync("script", ["--version"]).status === 0;

async function stopServer(): Promise<void> {
  if (!server) return;
  server.proc.kill("SIGTERM");
  await exitOf(server);
  server = undefined;
}

describe(
  "mailprobe client against a running server",
  { skip: process.env.TEST_DATABASE_URL ? "runs on the PGlite pass only (see the file's comment)" : false },
  () => {
    before(async () => {
      world = await startMailWorld({
        domains: [
          { name: "ok.test", hosts: [{ name: "mx.ok.test" }], mailboxes: ["alice", "bob"] },
          { name: "catch.test", hosts: [{ name: "mx.catch.test" }], catchAll: true },
          // Greylists for an hour: a task with this address stays open (the Ctrl-C test).
          {
            name: "grey.test",
            hosts: [{ name: "mx.grey.test" }],
            mailboxes: ["gina"],
            greylistSeconds: 3600,
          },
        ],
      });
      dir = await mkdtemp(join(tmpdir(), "mailprobe-client-"));
      port = await freePort();
      const created = JSON.parse(
        await runCli(["users", "create", "--credits", "100", "--json"], serverEnv({ LOG_LEVEL: "warn" })),
      ) as { api_key: string };
      apiKey = created.api_key;
      server = await startMailprobe("serve", ["serve"], serverEnv(), "listening on");
    });

    after(async () => {
      if (server) {
        server.proc.kill("SIGKILL");
        await exitOf(server);
      }
      await world?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    test("credits, verify, upload --wait (results file beside the list), tasks", async () => {
      const credits = await client(["credits"]);
      assert.equal(credits.code, 0, credits.stderr);
      assert.equal(credits.stdout.trim(), "balance: 100");

      const verified = await client(["verify", "alice@ok.test", "nobody@ok.test", "--json"]);
      assert.equal(verified.code, 0, verified.stderr);
      const results = verified.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { email: string; status: string });
      assert.deepEqual(
        results.map((r) => [r.email, r.status]),
        [
          ["alice@ok.test", "valid"],
          ["nobody@ok.test", "invalid"],
        ],
      );
      const table = await client(["verify", "any@catch.test"]);
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, /^email\s+status/);
      assert.match(table.stdout, /any@catch\.test\s+catchall/);

      const list = ["Name,Email", "Alice,alice@ok.test", "Bob,BOB@ok.test", "Nobody,nobody@ok.test"];
      list.push("Any,any@catch.test", "None,-", "Again,alice@ok.test");
      const input = join(dir!, "list.csv");
      await writeFile(input, list.join("\n"));
      const up = await client(["upload", input, "--wait", "--column", "B", "--yes"]);
      assert.equal(up.code, 0, up.stderr);
      const out = join(dir!, "list-results.csv");
      assert.equal(up.stdout.trim(), out, "stdout names the results file");
      assert.match(up.stderr, /uploaded list\.csv: 4 addresses, task [0-9a-f-]{36}/);
      assert.match(up.stderr, /verifying: 4\/4 addresses 100%/, "a final progress line");
      assert.doesNotMatch(up.stderr, /\r/, "no redraws off a terminal");
      // Off a terminal: a line when the counts change, never the same counts twice in a row.
      const counts = up.stderr.split("\n").flatMap((l) => /^verifying: (\d+\/\d+)/.exec(l)?.[1] ?? []);
      assert.ok(counts.length >= 1 && counts.at(-1) === "4/4", up.stderr);
      counts.forEach((c, i) => i === 0 || i === counts.length - 1 || assert.notEqual(c, counts[i - 1]));
      const csv: unknown = parse(await readFile(out), { bom: true });
      const [header, ...rows] = csv as string[][];
      assert.deepEqual(header, ["Name", "Email", ...PREFIXED]);
      assert.equal(rows.length, list.length - 1, "one row per input row");
      const status = header.indexOf("mailprobe_status");
      assert.deepEqual(
        rows.map((r) => [r[0], r[status]]),
        [
          ["Alice", "valid"],
          ["Bob", "valid"],
          ["Nobody", "invalid"],
          ["Any", "catchall"],
          ["None", "skipped"],
          ["Again", "valid"],
        ],
      );
      assert.equal(await readFile(input, "utf8"), list.join("\n"), "the list is untouched");

      const noWait = await client(["upload", input, "--yes"]);
      assert.equal(noWait.code, 0, noWait.stderr);
      const taskId = noWait.stdout.trim();
      assert.match(taskId, UUID, "without --wait: the task id");

      const tasks = await client(["tasks", "--json"]);
      assert.equal(tasks.code, 0, tasks.stderr);
      const listed = JSON.parse(tasks.stdout) as { tasks: Array<{ id: string }> };
      assert.equal(listed.tasks.length, 2);
      assert.equal(listed.tasks[0]!.id, taskId, "newest first");
      const human = await client(["tasks"]);
      assert.match(human.stdout, /^id\s+created_at\s+addresses\s+progress\s+file/);
      assert.match(human.stdout, new RegExp(`${taskId}.*\\blist\\.csv`));

      const after = await client(["credits", "--json"]);
      const balance = (JSON.parse(after.stdout) as { balance: number }).balance;
      assert.ok(balance < 100 && balance >= 100 - 3 - 4 - 4, `charged: ${balance}`);
    });

    test("results files: --wait and download name them as the dashboard does, never replace a file without --force", async () => {
      const input = join(dir!, "names.csv");
      await writeFile(input, "email\nalice@ok.test\n");
      const out = join(dir!, "names-results.csv");
      await writeFile(out, "keep me");
      const before = JSON.parse((await client(["tasks", "--json"])).stdout) as { count: number };
      const refused = await client(["upload", input, "--wait", "--yes"]);
      assert.equal(refused.code, 1);
      assert.equal(refused.stderr, `mailprobe: ${out} already exists; pass --force to replace it\n`);
      const after = JSON.parse((await client(["tasks", "--json"])).stdout) as { count: number };
      assert.equal(after.count, before.count, "refused before uploading: no task");
      const self = await client(["upload", input, "--wait", "--out", input, "--force", "--yes"]);
      assert.match(self.stderr, /would overwrite the list/);

      const forced = await client(["upload", input, "--wait", "--force", "--yes"]);
      assert.equal(forced.code, 0, forced.stderr);
      assert.match(await readFile(out, "utf8"), /alice@ok\.test,valid/);
      assert.equal(await readFile(input, "utf8"), "email\nalice@ok.test\n");

      // `client download` without --out: the server's name (Content-Disposition), in this folder.
      const taskId = (
        JSON.parse((await client(["tasks", "--json"])).stdout) as { tasks: Array<{ id: string }> }
      ).tasks[0]!.id;
      const got = await client(["download", taskId, "--format", "xlsx"], undefined, { cwd: dir! });
      assert.equal(got.code, 0, got.stderr);
      assert.equal(got.stdout.trim(), "names-results.xlsx");
      assert.ok(existsSync(join(dir!, "names-results.xlsx")));
      const twice = await client(["download", taskId, "--format", "xlsx"], undefined, { cwd: dir! });
      assert.equal(twice.code, 1);
      assert.match(twice.stderr, /names-results\.xlsx already exists; pass --force/);
      const replaced = await client(["download", taskId, "--format", "xlsx", "--force"], undefined, {
        cwd: dir!,
      });
      assert.equal(replaced.code, 0, replaced.stderr);
    });

    test("Ctrl-C while waiting: exit 130 with the exact command that downloads the results later", async () => {
      const input = join(dir!, "grey list.csv");
      await writeFile(input, "email\nalice@ok.test\ngina@grey.test\n");
      let interrupted = false;
      const r = await client(["upload", input, "--wait", "--yes"], undefined, {
        onStderr: (text, child) => {
          if (!interrupted && /verifying: 1\/2/.test(text)) {
            interrupted = true;
            child.kill("SIGINT");
          }
        },
      });
      assert.ok(interrupted, r.stderr);
      assert.equal(r.code, 130, r.stderr);
      const out = join(dir!, "grey list-results.csv");
      const command = /download the results later with: (mailprobe client download \S+ --out '[^']+')$/m.exec(
        r.stderr,
      );
      assert.ok(command, r.stderr);
      assert.match(command[1]!, new RegExp(`^mailprobe client download [0-9a-f-]{36} --out '${out}'$`));
      assert.ok(!existsSync(out), "nothing written");
      // The command works as printed (the task is still running: gina is pending).
      const [, taskId] = /download ([0-9a-f-]{36})/.exec(command[1]!)!;
      const later = await client(["download", taskId!, "--out", out]);
      assert.equal(later.code, 0, later.stderr);
      assert.match(await readFile(out, "utf8"), /gina@grey\.test,pending/);
    });

    test("no MAILPROBE_KEY, a wrong key, no server: one line on stderr, exit 1", async () => {
      const url = `http://127.0.0.1:${port}`;
      const noKey = await client(["credits"], { MAILPROBE_URL: url });
      assert.equal(noKey.code, 1);
      assert.match(noKey.stderr, /^mailprobe: MAILPROBE_KEY is not set/);

      const wrong = await client(["credits"], { MAILPROBE_URL: url, MAILPROBE_KEY: "mpk_not-a-real-key" });
      assert.equal(wrong.code, 1);
      assert.match(wrong.stderr, /^mailprobe: UNAUTHORIZED: \S/);
      assert.doesNotMatch(wrong.stderr, /^\s+at /m, "no stack trace");

      const gone = await client(["tasks"], {
        MAILPROBE_URL: `http://127.0.0.1:${await freePort()}`,
        MAILPROBE_KEY: apiKey,
      });
      assert.equal(gone.code, 1);
      assert.match(gone.stderr, /^mailprobe: cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);

      const badUrl = await client(["credits"], { MAILPROBE_URL: "ftp://x", MAILPROBE_KEY: apiKey });
      assert.equal(badUrl.code, 1);
      assert.match(badUrl.stderr, /MAILPROBE_URL must use http: or https:/);
    });

    test("sign-in-link: a link on MAILPROBE_URL that opens a session of the key, once", async () => {
      const url = `http://127.0.0.1:${port}`;
      const printed = await client(["sign-in-link"]);
      assert.equal(printed.code, 0, printed.stderr);
      const link = printed.stdout.trim();
      assert.match(link, new RegExp(`^${url}/#/sign-in\\?link=mpl_[0-9A-Za-z]{40}$`));
      assert.match(printed.stderr, /^mailprobe: one use, until \S+; it opens a session of this key/);
      const token = new URLSearchParams(link.split("?")[1]).get("link");
      const redeem = () =>
        fetch(`${url}/api/v1/auth/sign-in-links/redeem`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ token }),
        });
      const first = await redeem();
      assert.equal(first.status, 200);
      const session = (await first.json()) as { token: string };
      const balance = await fetch(`${url}/api/v1/credits/balance`, {
        headers: { authorization: `Bearer ${session.token}` },
      });
      assert.equal(balance.status, 200);
      assert.equal((await redeem()).status, 401, "used once");
      const json = await client(["sign-in-link", "--json"]);
      assert.equal(json.code, 0, json.stderr);
      const body = JSON.parse(json.stdout) as { url: string; token: string; expires_at: string };
      assert.equal(body.url, `${url}/#/sign-in?link=${body.token}`);
    });

    test("upload prices the list first: --dry-run spends nothing; off a terminal nothing is uploaded without --yes", async () => {
      // 3 distinct addresses (one repeated), one of them a free sandbox address, one row without an address.
      const input = join(dir!, "priced.csv");
      const rows = [
        "alice@ok.test",
        "bob@ok.test",
        "ALICE@ok.test",
        "valid@sandbox.mailprobe.invalid",
        "n/a",
      ];
      await writeFile(input, ["email", ...rows].join("\n"));
      const balanceNow = async () =>
        (JSON.parse((await client(["credits", "--json"])).stdout) as { balance: number }).balance;
      const taskCount = async () =>
        (JSON.parse((await client(["tasks", "--json"])).stdout) as { count: number }).count;
      const balance = await balanceNow();
      const tasks = await taskCount();
      const price = `priced.csv: 3 addresses, 2 credits, balance ${balance} → ${balance - 2} (5 rows: 1 duplicate, 1 without an address, 1 sandbox address free)`;

      const dry = await client(["upload", input, "--dry-run"]);
      assert.equal(dry.code, 0, dry.stderr);
      assert.equal(dry.stdout, `${price}\n`, "the price is the answer, on stdout");
      const json = await client(["upload", input, "--dry-run", "--json"]);
      assert.equal(json.code, 0, json.stderr);
      assert.deepEqual(
        (({ unique_count, credits_required, balance, has_enough_credits }) => ({
          unique_count,
          credits_required,
          balance,
          has_enough_credits,
        }))(JSON.parse(json.stdout) as Record<string, unknown>),
        { unique_count: 3, credits_required: 2, balance, has_enough_credits: true },
      );

      // stdin is /dev/null here: nobody to ask, so no upload without --yes.
      const refused = await client(["upload", input]);
      assert.equal(refused.code, 1);
      assert.equal(refused.stdout, "");
      assert.equal(
        refused.stderr,
        `mailprobe: ${price}\nmailprobe: not uploaded: stdin is not a terminal, so nobody can confirm the price; pass --yes to upload at this price (--dry-run shows it only)\n`,
      );
      assert.equal(await balanceNow(), balance, "the quotes and the refusal spent nothing");
      assert.equal(await taskCount(), tasks, "and created no task");

      const yes = await client(["upload", input, "--yes"]);
      assert.equal(yes.code, 0, yes.stderr);
      assert.match(yes.stdout.trim(), UUID);
      const lines = yes.stderr.split("\n");
      assert.equal(lines[0], `mailprobe: ${price}`, "the price before anything is spent");
      assert.match(lines[1]!, /^mailprobe: uploaded priced\.csv: 3 addresses, task /);
      assert.equal(await balanceNow(), balance - 2, "the price shown is what was reserved");
      assert.equal(await taskCount(), tasks + 1);
    });

    test("a workbook with lists on two sheets: refused naming them and --sheet; --sheet prices and uploads that one", async () => {
      const input = join(dir!, "two lists.xlsx");
      await writeFile(
        input,
        await xlsxOf((wb) => {
          const leads = wb.addWorksheet("Leads");
          leads.addRow(["Email"]);
          leads.addRow(["alice@ok.test"]);
          leads.addRow(["bob@ok.test"]);
          const old = wb.addWorksheet("Old");
          old.addRow(["E-mail"]);
          old.addRow(["carol@ok.test"]);
        }),
      );
      const refused = await client(["upload", input, "--dry-run"]);
      assert.equal(refused.code, 1);
      assert.match(
        refused.stderr,
        /addresses on 2 sheets: "Leads" \(column Email\), "Old" \(column E-mail\)\. Choose one with --sheet \(--sheet Leads\)/,
      );
      const dry = await client(["upload", input, "--sheet", "Old", "--dry-run"]);
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(
        dry.stdout,
        /^two lists\.xlsx \(sheet Old, column E-mail\): 1 address, 1 credit, balance \d+ → \d+\n$/,
      );
      const up = await client(["upload", input, "--sheet", "Old", "--yes", "--json"]);
      assert.equal(up.code, 0, up.stderr);
      assert.equal((JSON.parse(up.stdout) as { email_count: number }).email_count, 1);
    });

    test("a balance short of the price: said with what to do, nothing uploaded, exit 1, --yes or --dry-run alike", async () => {
      const poor = JSON.parse(
        await runCli(["users", "create", "--credits", "1", "--json"], serverEnv({ LOG_LEVEL: "warn" })),
      ) as { api_key: string };
      const vars = { MAILPROBE_URL: `http://127.0.0.1:${port}`, MAILPROBE_KEY: poor.api_key };
      const input = join(dir!, "three.csv");
      await writeFile(input, "email\nalice@ok.test\nbob@ok.test\nany@catch.test\n");
      const price = "three.csv: 3 addresses, 3 credits, balance 1, 2 short";
      const why =
        "mailprobe: not uploaded: 2 credits short (the list needs 3, the balance is 1); ask the server's operator for credits (mailprobe credits grant) or upload a shorter list\n";

      const yes = await client(["upload", input, "--yes", "--wait"], vars);
      assert.equal(yes.code, 1);
      assert.equal(yes.stderr, `mailprobe: ${price}\n${why}`);
      assert.equal(yes.stdout, "");
      const dry = await client(["upload", input, "--dry-run"], vars);
      assert.equal(dry.code, 1, "a dry run that could not be paid says so in its status too");
      assert.equal(dry.stdout, `${price}\n`);
      assert.equal(dry.stderr, why);

      const tasks = JSON.parse((await client(["tasks", "--json"], vars)).stdout) as { count: number };
      assert.equal(tasks.count, 0, "no task");
      assert.equal((await client(["credits"], vars)).stdout.trim(), "balance: 1", "nothing reserved");
    });

    test(
      "on a terminal it asks after the price: no (the default) uploads nothing, y uploads",
      { skip: hasScript ? false : "needs util-linux script for a pseudo-terminal" },
      async () => {
        const input = join(dir!, "asked.csv");
        await writeFile(input, "email\nalice@ok.test\n");
        const before = JSON.parse((await client(["tasks", "--json"])).stdout) as { count: number };

        const no = await clientOnTerminal(["upload", input], "\n");
        assert.ok(no.asked, no.stdout);
        assert.equal(no.code, 1, no.stdout);
        assert.match(
          no.stdout,
          /^mailprobe: asked\.csv: 1 address, 1 credit, balance \d+ → \d+\nUpload asked\.csv and reserve 1 credit\? \[y\/N\] /,
        );
        assert.match(no.stdout, /\nmailprobe: not uploaded\n$/);
        const between = JSON.parse((await client(["tasks", "--json"])).stdout) as { count: number };
        assert.equal(between.count, before.count, "no task");

        const yes = await clientOnTerminal(["upload", input], "y\n");
        assert.equal(yes.code, 0, yes.stdout);
        const [, taskId] = /^([0-9a-f-]{36})$/m.exec(yes.stdout) ?? [];
        assert.ok(taskId, yes.stdout);
        const after = JSON.parse((await client(["tasks", "--json"])).stdout) as {
          tasks: Array<{ id: string }>;
        };
        assert.equal(after.tasks[0]!.id, taskId, "the task it printed");
      },
    );

    test("serve logs: JSON lines off a terminal; LOG_FORMAT=pretty writes human lines", async () => {
      // The server above ran with stdout on a pipe and LOG_FORMAT unset (auto).
      const json = server!.output.split("\n").filter((l) => l.startsWith("{"));
      assert.ok(json.length > 0, `JSON log lines expected:\n${server!.output}`);
      for (const line of json) assert.doesNotThrow(() => JSON.parse(line), line);
      assert.ok(
        !server!.output.includes(apiKey),
        "the API key never reaches the log (redaction holds in JSON)",
      );

      await stopServer();
      server = await startMailprobe("serve", ["serve"], serverEnv({ LOG_FORMAT: "pretty" }), "listening on");
      assert.equal((await client(["credits"])).code, 0);
      // pino-pretty: "[HH:MM:ss.mmm] INFO: message" lines, no JSON.
      const deadline = Date.now() + 5_000;
      while (!/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO/m.test(server.output) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      assert.match(server.output, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO/m, server.output);
      assert.ok(!server.output.split("\n").some((l) => l.startsWith("{")), server.output);
      // A request is one line on a terminal, not Fastify's two multi-line records.
      while (!/GET \/api\/v1\/\S+ 200 \d+ ms/.test(server.output) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const requestLines = server.output.split("\n").filter((l) => /GET \/api\/v1\/\S+ 200 \d+ ms/.test(l));
      assert.ok(requestLines.length > 0, server.output);
      assert.doesNotMatch(server.output, /incoming request|request completed/);
      assert.ok(!server.output.includes(apiKey), "redaction holds in pretty logs");
    });
  },
);
