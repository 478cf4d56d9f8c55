// `mailprobe verify --file`: the real binary as a child process against the simulated mail world.
// A list file goes in, a results file comes out with the download's columns (RESULT_COLUMNS from
// the code), one row per input row in input order; progress on stderr, redrawn on a terminal
// (a pseudo-terminal from util-linux `script`), plain lines otherwise. No database involved, so
// it runs the same on the PGlite and the PostgreSQL pass.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { link, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "csv-parse/sync";
import { SKIPPED_STATUS as DOWNLOAD_SKIPPED_STATUS } from "../../../src/tasks/export-task.ts";
import { parseListFile, RESULT_COLUMNS, TXT_RESULT_COLUMNS } from "../../../src/files/index.ts";

/** The result columns beside a list with its own "Email" column (README: Downloads). */
const PREFIXED = RESULT_COLUMNS.map((c) => `mailprobe_${c}`);
import { SKIPPED_STATUS } from "../../../src/cli/verify-file.ts";
import { inheritedEnv } from "../../support/child-process.ts";
import { readXlsxBook, ValueType, xlsxOf } from "../../unit/files/helpers.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const SCRIPT = "/usr/bin/script";

let world: MailWorld;
let dir: string;

before(async () => {
  world = await startMailWorld({
    latencyMs: 5,
    domains: [
      { name: "ok.test", hosts: [{ name: "mx.ok.test" }], mailboxes: ["alice", "bob"] },
      { name: "catch.test", hosts: [{ name: "mx.catch.test" }], catchAll: true },
      { name: "other.test", hosts: [{ name: "mx.other.test", kind: "exim" }], mailboxes: ["carol"] },
    ],
  });
  dir = await mkdtemp(join(tmpdir(), "mailprobe-verify-file-"));
});

after(async () => {
  await world?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

let extraEnv: Record<string, string> = {};
const env = (): NodeJS.ProcessEnv => ({
  ...inheritedEnv(),
  LOG_LEVEL: "warn",
  ...worldEnv(world),
  ...extraEnv,
});

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: readonly string[], timeoutMs = 60_000): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: env(), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${args.join(" ")} did not exit within ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const mailprobe = (args: readonly string[]): Promise<Outcome> =>
  run(process.execPath, ["bin/mailprobe.js", ...args]);

async function readCsv(path: string): Promise<string[][]> {
  const table: unknown = parse(await readFile(path), { bom: true, relax_column_count: false });
  return table as string[][];
}

// Several domains, a header row, extra columns, a duplicate (other case), a bad-syntax address,
// a row without an address, a second address column.
const LIST = [
  "Name,Email,Company,Backup",
  "Alice,alice@ok.test,Acme,x@catch.test",
  "Nobody,nobody@ok.test,Acme,",
  "Any,any@catch.test,Foo,y@catch.test",
  "Bad,bad..dots@ok.test,Foo,",
  "Dup,ALICE@ok.test,Acme,",
  "None,not an address,Foo,",
  "Carol,carol@other.test,Bar,",
].join("\r\n");

const EXPECTED: Array<[string, string]> = [
  ["alice@ok.test", "valid"],
  ["nobody@ok.test", "invalid"],
  ["any@catch.test", "catchall"],
  ["bad..dots@ok.test", "invalid_syntax"],
  ["alice@ok.test", "valid"],
  ["", SKIPPED_STATUS],
  ["carol@other.test", "valid"],
];

describe("mailprobe verify --file", () => {
  test("csv in, csv out: the download's header, one row per input row in order, expected statuses", async () => {
    assert.equal(SKIPPED_STATUS, DOWNLOAD_SKIPPED_STATUS, "the CLI marks address-less rows as downloads do");
    const input = join(dir, "list.csv");
    const out = join(dir, "results.csv");
    await writeFile(input, LIST);
    const r = await mailprobe(["verify", "--file", input, "--out", out]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), out, "stdout names the results file");
    // 5 distinct addresses: the duplicate is verified once; the cell without "@" is no address.
    assert.match(r.stderr, /7 rows, 5 distinct addresses \(email column: Email\)/);
    assert.doesNotMatch(r.stderr, /\r/, "stderr is not a terminal: no redraws");
    assert.match(r.stderr, /verifying: 5\/5 addresses 100%/);

    const [header, ...rows] = await readCsv(out);
    assert.deepEqual(header, ["Name", "Email", "Company", "Backup", ...PREFIXED]);
    assert.equal(rows.length, EXPECTED.length);
    const col = (name: string): number => header.indexOf(`mailprobe_${name}`);
    rows.forEach((row, i) => {
      assert.equal(row.length, header.length);
      assert.deepEqual(row.slice(0, 4), LIST.split("\r\n")[i + 1]!.split(","), `row ${i} keeps its cells`);
      assert.deepEqual([row[col("email")], row[col("status")]], EXPECTED[i], `row ${i}`);
    });
    assert.equal(rows[4]![col("email")], "alice@ok.test", "the duplicate row repeats the result");
    assert.equal(rows[2]![col("is_catchall")], "true");
  });

  test("--column by letter, xlsx out (read back with the upload parser); a txt list; txt out", async () => {
    const input = join(dir, "backup.csv");
    await writeFile(input, LIST);
    const xlsx = join(dir, "backup-results.xlsx");
    const r = await mailprobe(["verify", "-f", input, "--column", "D", "-o", xlsx]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /email column: Backup/);
    const back = await parseListFile({ filename: "r.xlsx", data: await readFile(xlsx), maxEmails: 100 });
    assert.ok(back.ok, JSON.stringify(!back.ok && back.problem));
    assert.deepEqual(back.list.header, ["Name", "Email", "Company", "Backup", ...PREFIXED]);
    assert.equal(back.list.rows.length, 7);
    const status = back.list.header.indexOf("mailprobe_status");
    assert.deepEqual(
      back.list.rows.map((row) => row[status]),
      [
        "catchall",
        SKIPPED_STATUS,
        "catchall",
        SKIPPED_STATUS,
        SKIPPED_STATUS,
        SKIPPED_STATUS,
        SKIPPED_STATUS,
      ],
    );

    // A txt list: no header; the default output is csv next to it, column_1 then the results.
    const txt = join(dir, "plain.txt");
    await writeFile(txt, "bob@ok.test\nnobody@other.test\nBOB@ok.test\n");
    const t = await mailprobe(["verify", "--file", txt]);
    assert.equal(t.code, 0, t.stderr);
    const defaultOut = join(dir, "plain-results.csv");
    assert.equal(t.stdout.trim(), defaultOut);
    const [h, ...rows] = await readCsv(defaultOut);
    assert.deepEqual(h, ["column_1", ...RESULT_COLUMNS]);
    assert.deepEqual(
      rows.map((row) => [row[0], row[h.indexOf("status")]]),
      [
        ["bob@ok.test", "valid"],
        ["nobody@other.test", "invalid"],
        ["BOB@ok.test", "valid"],
      ],
    );

    // txt out: `email,status` lines, no header, as the txt download.
    const txtOut = join(dir, "plain-out.txt");
    const u = await mailprobe(["verify", "--file", txt, "--out", txtOut]);
    assert.equal(u.code, 0, u.stderr);
    assert.deepEqual(TXT_RESULT_COLUMNS, ["email", "status"]);
    assert.equal(
      await readFile(txtOut, "utf8"),
      "bob@ok.test,valid\nnobody@other.test,invalid\nBOB@ok.test,valid\n",
    );
  });

  test("refusals: the upload parser's message, the input never overwritten, usage errors", async () => {
    const input = join(dir, "self.csv");
    await writeFile(input, LIST);
    const self = await mailprobe(["verify", "--file", input, "--out", input]);
    assert.equal(self.code, 1);
    assert.match(self.stderr, /would overwrite the list/);
    assert.equal(await readFile(input, "utf8"), LIST);

    const noColumn = await mailprobe(["verify", "--file", input, "--column", "Phone"]);
    assert.equal(noColumn.code, 1);
    assert.match(noColumn.stderr, /^mailprobe: .*self\.csv: .*Phone/m);
    assert.doesNotMatch(noColumn.stderr, /^\s+at /m, "no stack trace");
    assert.ok(!existsSync(join(dir, "self-results.csv")), "nothing written on a refusal");

    const both = await mailprobe(["verify", "a@ok.test", "--file", input]);
    assert.equal(both.code, 1);
    assert.match(both.stderr, /addresses or --file, not both/);
  });

  test("a workbook with a list on two sheets: refused naming them; --sheet chooses; xlsx out is the workbook", async () => {
    const book = join(dir, "two lists.xlsx");
    await writeFile(
      book,
      await xlsxOf((wb) => {
        const a = wb.addWorksheet("Leads");
        a.addRow(["Email", "Score"]);
        a.addRow(["Bob@OK.test", 7]);
        const b = wb.addWorksheet("Old");
        b.addRow(["Email"]);
        b.addRow(["nobody@other.test"]);
      }),
    );
    const refused = await mailprobe(["verify", "--file", book]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /addresses on 2 sheets: "Leads" \(column Email\), "Old" \(column Email\)\. Choose one with --sheet \(--sheet Leads\)/,
    );
    const out = join(dir, "two lists-results.xlsx");
    const chosen = await mailprobe(["verify", "--file", book, "--sheet", "Leads", "--out", out]);
    assert.equal(chosen.code, 0, chosen.stderr);
    assert.match(chosen.stderr, /sheet Leads, email column: Email/);
    const sheets = readXlsxBook(await readFile(out));
    assert.deepEqual(
      sheets.map((s) => s.name),
      ["Leads", "Old"],
    );
    const row = sheets[0]!.rows[1]!;
    assert.deepEqual(
      row.slice(0, 2).map((c) => c?.value),
      ["Bob@OK.test", 7],
    );
    assert.equal(row[1]?.type, ValueType.Number, "the score stays a number");
    assert.deepEqual(
      row.slice(2, 4).map((c) => c?.value),
      ["bob@ok.test", "valid"],
    );
  });

  test("--out: never the list (by a symbolic link, a linked folder, a hard link), an existing file only with --force", async () => {
    const sub = join(dir, "safety");
    await mkdir(sub);
    const input = join(sub, "list.csv");
    await writeFile(input, LIST);
    await symlink(input, join(sub, "alias.csv"));
    await symlink(sub, join(dir, "safety-link"));
    await link(input, join(sub, "hard.csv"));
    for (const out of [
      join(sub, "alias.csv"),
      join(dir, "safety-link", "list.csv"),
      join(sub, "hard.csv"),
      join(sub, ".", "list.csv"),
    ]) {
      const r = await mailprobe(["verify", "--file", input, "--out", out, "--force"]);
      assert.equal(r.code, 1, out);
      assert.match(r.stderr, /^mailprobe: the results file would overwrite the list/m, out);
    }
    assert.equal(await readFile(input, "utf8"), LIST, "the list is untouched");

    // The default name, then again: refused (nothing verified), then replaced with --force.
    const first = await mailprobe(["verify", "--file", input]);
    assert.equal(first.code, 0, first.stderr);
    const out = join(sub, "list-results.csv");
    assert.equal(first.stdout.trim(), out);
    await writeFile(out, "mine\r\n");
    const again = await mailprobe(["verify", "--file", input]);
    assert.equal(again.code, 1);
    assert.equal(again.stderr, `mailprobe: ${out} already exists; pass --force to replace it\n`);
    assert.equal(await readFile(out, "utf8"), "mine\r\n");
    const forced = await mailprobe(["verify", "--file", input, "--force"]);
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((await readCsv(out)).length, 8);
    const folder = await mailprobe(["verify", "--file", input, "--out", sub]);
    assert.match(folder.stderr, /is a directory/);
  });

  test("a list with phone numbers: every line comes back as written, then the result columns; one short HELO warning", async () => {
    const lines = [
      "Name,Phone,email",
      "Ann,+1 555 6330,alice@ok.test",
      "Ben,+44 (0)20 7946 0958,bob@ok.test",
      "Cid,-42,carol@other.test",
      "Dee,=SUM(A1),any@catch.test",
    ];
    const input = join(dir, "phones.csv");
    await writeFile(input, lines.map((l) => `${l}\r\n`).join(""));
    // A HELO name receivers refuse: the warning is one short line, once.
    extraEnv = { SMTP_HELO_NAME: "web-1" };
    let r: Outcome;
    try {
      r = await mailprobe(["verify", "--file", input]);
    } finally {
      extraEnv = {};
    }
    assert.equal(r.code, 0, r.stderr);
    const warnings = r.stderr.split("\n").filter((l) => l.includes("warning"));
    assert.deepEqual(warnings, [
      'mailprobe: warning: SMTP_HELO_NAME "web-1" is not fully qualified; receivers may refuse it (see: mailprobe doctor)',
    ]);
    const text = (await readFile(join(dir, "phones-results.csv"), "utf8")).slice(1);
    const back = text.slice(0, -2).split("\r\n");
    assert.deepEqual(
      back.map((l) => l.split(",").slice(0, 3).join(",")),
      [...lines.slice(0, 4), "Dee,'=SUM(A1),any@catch.test"],
    );
    assert.ok(back[0]!.endsWith(PREFIXED.join(",")), back[0]);
  });

  test("on a pseudo-terminal: one line redrawn with \\r, ending at 100 %", async () => {
    const input = join(dir, "tty.csv");
    // 40 addresses over 3 domains, so the run lasts several redraws.
    const lines = ["email"];
    for (let i = 0; i < 20; i++)
      lines.push(`user${i}@ok.test`, i % 2 ? `u${i}@catch.test` : `u${i}@other.test`);
    await writeFile(input, lines.join("\n"));
    const out = join(dir, "tty-results.csv");
    const quote = (s: string): string => `'${s.replace(/'/g, "'\\''")}'`;
    const cmd = [process.execPath, "bin/mailprobe.js", "verify", "--file", input, "--out", out]
      .map(quote)
      .join(" ");
    const r = await run(SCRIPT, ["-qefc", cmd, "/dev/null"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    // The pty turns "\n" into "\r\n"; a redraw is a "\r" that starts a bar line.
    const redraws = r.stdout.match(/\rverifying \[[#-]+\] \d+\/40 addresses/g) ?? [];
    assert.ok(redraws.length >= 2, `redraws: ${JSON.stringify(r.stdout)}`);
    assert.match(r.stdout, /\rverifying \[#+\] 40\/40 addresses 100% [\d.]+\/s in \d+:\d\d/);
    assert.doesNotMatch(r.stdout, /verifying: /, "no plain progress lines on a terminal");
    const [, ...rows] = await readCsv(out);
    assert.equal(rows.length, 40);
  });
});

describe("mailprobe --version and --help", () => {
  test("--version prints package.json's version; --help lists every command", async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string };
    const version = await mailprobe(["--version"]);
    assert.equal(version.code, 0, version.stderr);
    assert.equal(version.stdout.trim(), pkg.version);

    const help = await mailprobe(["--help"]);
    assert.equal(help.code, 0, help.stderr);
    for (const command of [
      "serve",
      "worker",
      "migrate",
      "users",
      "credits",
      "keys",
      "verify",
      "doctor",
      "client",
    ])
      assert.match(help.stdout, new RegExp(`^  ${command}\\b`, "m"), `--help lists ${command}`);

    const remote = await mailprobe(["client", "--help"]);
    for (const command of ["verify", "upload", "download", "tasks", "credits"])
      assert.match(remote.stdout, new RegExp(`^  ${command}\\b`, "m"), `client --help lists ${command}`);
    const verify = await mailprobe(["verify", "--help"]);
    for (const option of ["--file", "--column", "--out", "--format", "--json"])
      assert.match(verify.stdout, new RegExp(option.replace(/-/g, "\\-")));
  });
});
