// `mailprobe client …` against a real `mailprobe serve` (embedded PGlite in a temporary DATA_DIR,
// probing the simulated mail world), and the serve logs: JSON lines when stdout is not a
// terminal, human lines with LOG_FORMAT=pretty.
//
// Runs on the PGlite pass only: the client talks HTTP to a server whose database is its own
// business; the server here is the embedded one (the PostgreSQL pass adds nothing to what the
// client does).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
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
      const up = await client(["upload", input, "--wait", "--column", "B"]);
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

      const noWait = await client(["upload", input]);
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
      const refused = await client(["upload", input, "--wait"]);
      assert.equal(refused.code, 1);
      assert.equal(refused.stderr, `mailprobe: ${out} already exists; pass --force to replace it\n`);
      const after = JSON.parse((await client(["tasks", "--json"])).stdout) as { count: number };
      assert.equal(after.count, before.count, "refused before uploading: no task");
      const self = await client(["upload", input, "--wait", "--out", input, "--force"]);
      assert.match(self.stderr, /would overwrite the list/);

      const forced = await client(["upload", input, "--wait", "--force"]);
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
      const r = await client(["upload", input, "--wait"], undefined, {
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
