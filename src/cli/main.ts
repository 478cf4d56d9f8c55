// The command tree of `mailprobe`. Only commander is imported up front: every action loads its
// module (`await import(...)`) when it runs, so `--help` and `--version` stay fast (README:
// "Command-line tool"). Keep it that way: no static import of anything but commander, node: built-ins
// and dependency-free modules here.
import { readFileSync } from "node:fs";
import { Command, InvalidArgumentError } from "commander";
import { MAX_GRANT_CREDITS } from "../credits/limits.ts";
import { API_KEY_PURPOSES, type ApiKeyPurpose } from "../keys/purposes.ts";
import { isUuid } from "../lib/ids.ts";
import { FILE_FORMATS, type FileFormat } from "./cli-support.ts";

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version?: string;
  };
  return pkg.version ?? "0.0.0";
}

function positiveInt(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("must be a non-negative integer");
  return Number(value);
}

/** A credit amount: what one grant or an opening balance may be (MAX_GRANT_CREDITS). */
function creditAmount(value: string): number {
  const n = positiveInt(value);
  if (n > MAX_GRANT_CREDITS)
    throw new InvalidArgumentError(`must be at most ${MAX_GRANT_CREDITS.toLocaleString("en-US")}`);
  return n;
}

function pageSize(value: string): number {
  const n = positiveInt(value);
  if (n < 1 || n > 100) throw new InvalidArgumentError("must be between 1 and 100");
  return n;
}

function atLeastOne(value: string): number {
  const n = positiveInt(value);
  if (n < 1) throw new InvalidArgumentError("must be at least 1");
  return n;
}

// Checked here so a typo is a usage error, not a database error (invalid input syntax for uuid)
// surfacing as a stack trace.
function uuidArg(value: string): string {
  if (!isUuid(value)) throw new InvalidArgumentError("must be a user id (UUID)");
  return value;
}

function keyIdArg(value: string): string {
  if (!isUuid(value)) throw new InvalidArgumentError("must be an API key id (UUID)");
  return value;
}

/** The dashboard's address for a sign-in link: http(s), without query or fragment. */
function originArg(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError("must be an address such as https://mailprobe.example.com");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new InvalidArgumentError("must be an http or https address");
  return url.origin + url.pathname.replace(/\/+$/, "");
}

function taskIdArg(value: string): string {
  if (!isUuid(value)) throw new InvalidArgumentError("must be a task id (UUID)");
  return value;
}

function purposeArg(value: string): ApiKeyPurpose {
  const purpose = API_KEY_PURPOSES.find((p) => p === value);
  if (!purpose) throw new InvalidArgumentError(`must be one of ${API_KEY_PURPOSES.join(", ")}`);
  return purpose;
}

function formatArg(value: string): FileFormat {
  const format = FILE_FORMATS.find((f) => f === value.toLowerCase());
  if (!format) throw new InvalidArgumentError(`must be one of ${FILE_FORMATS.join(", ")}`);
  return format;
}

/** A usage mistake found in an action (not by commander): printed like any CliError. */
class UsageError extends Error {
  override name = "CliError";
}

const commands = () => import("./commands.ts");
const usersCommands = () => import("./users-command.ts");
const client = () => import("./client.ts");

const COLUMN_HELP =
  "the email column (csv/xlsx): a header name, a column letter (E) or a 1-based number; default: the column named like Email, else the one holding addresses";
const SHEET_HELP =
  "xlsx: the sheet holding the list; default: the sheet whose email column says Email, else the one sheet with addresses (two such sheets are refused, naming them)";

function buildProgram(): Command {
  const program = new Command("mailprobe")
    .description("Self-hostable email verification service")
    .version(packageVersion(), "-V, --version", "print the version")
    .showHelpAfterError()
    .exitOverride();

  program
    .command("serve")
    .description("run the HTTP API and, unless --no-worker, the batch workers")
    .option("--no-worker", "do not run batch workers in this process")
    .action(async (opts: { worker: boolean }) => (await commands()).serveCommand(opts));

  program
    .command("worker")
    .description("run only the batch worker pool and webhook dispatcher")
    .action(async () => (await commands()).workerCommand());

  program
    .command("migrate")
    .description("apply pending database migrations and exit")
    .action(async () => (await commands()).migrateCommand());

  program
    .command("backup")
    .description(
      "copy the embedded database and DATA_DIR's secrets to one file (also while serve runs); PostgreSQL: pg_dump",
    )
    .requiredOption("-o, --out <file>", "the backup file to write (mode 0600: it holds secrets)")
    .option("--force", "replace an existing file")
    .action(async (opts: { out: string; force?: boolean }) =>
      (await import("./backup-command.ts")).backupCommand(opts),
    );

  program
    .command("restore")
    .description("restore a backup into an empty or new DATA_DIR (never over data); PostgreSQL: pg_restore")
    .argument("<file>", "a file written by mailprobe backup")
    .action(async (file: string) => (await import("./backup-command.ts")).restoreCommand(file));

  const users = program.command("users").description("manage users");
  users
    .command("create")
    .description("create a user; prints its id and a first API key (shown once)")
    .requiredOption("--credits <n>", "opening credit balance", creditAmount)
    .option("--email <email>", "contact email (unique)")
    .option("--json", "print JSON")
    .action(async (opts: { credits: number; email?: string; json?: boolean }) =>
      (await commands()).usersCreateCommand(opts),
    );
  users
    .command("list")
    .description("list users, newest first, with balance, keys and 30-day usage (one page)")
    .option("--email <text>", "only users whose email contains this (case-insensitive)")
    .option("--limit <n>", "users per page (1-100)", pageSize, 50)
    .option("--offset <n>", "users to skip", positiveInt, 0)
    .option("--json", "print JSON")
    .action(async (opts: { email?: string; limit: number; offset: number; json?: boolean }) =>
      (await usersCommands()).usersListCommand(opts),
    );
  users
    .command("show")
    .description("one user (by id or exact email): balance, usage, state and API keys")
    .argument("<user>", "user id (UUID) or email")
    .option("--json", "print JSON")
    .action(async (who: string, opts: { json?: boolean }) =>
      (await usersCommands()).usersShowCommand(who, opts),
    );
  users
    .command("deactivate")
    .description(
      "deactivate a user (by id or exact email): every API key and session of theirs stops working",
    )
    .argument("<user>", "user id (UUID) or email")
    .option("--json", "print JSON")
    .action(async (who: string, opts: { json?: boolean }) =>
      (await usersCommands()).usersDeactivateCommand(who, opts),
    );

  users
    .command("sign-in-link")
    .description(
      "a one-time dashboard sign-in link for a user (by id or exact email): 15 minutes, one use, tied to a custom key",
    )
    .argument("<user>", "user id (UUID) or email")
    .option("--key <key_id>", "the key to tie it to (default: the user's newest active custom key)", keyIdArg)
    .option(
      "--url <origin>",
      "the dashboard's address as the user reaches it (default: http://localhost:PORT)",
      originArg,
    )
    .option("--json", "print JSON")
    .action(async (who: string, opts: { key?: string; url?: string; json?: boolean }) =>
      (await usersCommands()).usersSignInLinkCommand(who, opts),
    );

  const credits = program.command("credits").description("manage credits");
  credits
    .command("grant")
    .description("grant credits to a user (writes a grant transaction)")
    .argument("<user_id>", "user id (UUID)", uuidArg)
    .argument("<amount>", "credits to add", creditAmount)
    .requiredOption("--reason <reason>", "reason recorded on the transaction")
    .action(async (userId: string, amount: number, opts: { reason: string }) =>
      (await commands()).creditsGrantCommand(userId, amount, opts),
    );

  const keys = program.command("keys").description("manage a user's API keys (operators)");
  keys
    .command("create")
    .description("create an API key for a user; prints it once")
    .argument("<user_id>", "user id (UUID)", uuidArg)
    .option("--name <name>", "key name", "cli")
    .option("--purpose <purpose>", `one of ${API_KEY_PURPOSES.join(", ")}`, purposeArg, "custom")
    .option("--json", "print JSON")
    .action(async (userId: string, opts: { name: string; purpose: ApiKeyPurpose; json?: boolean }) =>
      (await commands()).keysCreateCommand(userId, opts),
    );
  keys
    .command("list")
    .description("list a user's API keys (never their plaintext)")
    .argument("<user_id>", "user id (UUID)", uuidArg)
    .option("--json", "print JSON")
    .action(async (userId: string, opts: { json?: boolean }) =>
      (await commands()).keysListCommand(userId, opts),
    );
  keys
    .command("revoke")
    .description("deactivate one of a user's API keys (its sessions end too; the last active key is kept)")
    .argument("<user_id>", "user id (UUID)", uuidArg)
    .argument("<key_id>", "API key id (UUID)", keyIdArg)
    .action(async (userId: string, keyId: string) => (await commands()).keysRevokeCommand(userId, keyId));

  program
    .command("verify")
    .description(
      "verify addresses, or a list file with --file, locally with the engine (no server, no credits)",
    )
    .argument("[address...]", "addresses to verify")
    .option("--json", "addresses: print JSON lines")
    .option("-f, --file <list>", "a .csv, .txt or .xlsx list to verify (at most 100,000 addresses)")
    .option("-c, --column <column>", COLUMN_HELP)
    .option("--sheet <name>", SHEET_HELP)
    .option("-o, --out <file>", "results file (default: <list>-results.<format> next to the list)")
    .option(
      "--format <format>",
      "results format: csv, txt or xlsx (default: from --out, else csv)",
      formatArg,
    )
    .option("--force", "replace an existing results file (never the list itself)")
    .option(
      "--no-escape-formulas",
      "csv/txt: keep cells a spreadsheet would evaluate as they are (machine use)",
    )
    .action(
      async (
        addresses: string[],
        opts: {
          json?: boolean;
          file?: string;
          column?: string;
          sheet?: string;
          out?: string;
          format?: FileFormat;
          force?: boolean;
          escapeFormulas: boolean;
        },
      ) => {
        if (opts.file !== undefined) {
          if (addresses.length > 0) throw new UsageError("give addresses or --file, not both");
          const { verifyFileCommand } = await import("./verify-file.ts");
          await verifyFileCommand({ ...opts, file: opts.file });
          return;
        }
        if (addresses.length === 0) throw new UsageError("give one or more addresses, or --file");
        for (const flag of ["column", "sheet", "out", "format", "force"] as const) {
          if (opts[flag] !== undefined) throw new UsageError(`--${flag} applies to --file only`);
        }
        await (await commands()).verifyAddressesCommand(addresses, opts);
      },
    );

  program
    .command("doctor")
    .description(
      "check this machine's set-up for probing: DNS, HELO name, outbound port 25, FCrDNS, MAIL FROM domain (no database needed)",
    )
    .option(
      "--mx <host|domain>",
      "an IP, a mail host, or a domain (its best MX) to probe; default: the MAIL FROM domain's MX",
    )
    .option("--json", "print one JSON document")
    .action(async (opts: { mx?: string; json?: boolean }) => (await commands()).doctorCommand(opts));

  const remote = program
    .command("client")
    .description("talk to a running mailprobe server (MAILPROBE_URL, MAILPROBE_KEY)");
  remote
    .command("verify")
    .description("verify addresses in realtime on the server (billed as POST /api/v1/verify)")
    .argument("<address...>", "addresses to verify")
    .option("--json", "print the server's JSON, one line per address")
    .action(async (addresses: string[], opts: { json?: boolean }) =>
      (await client()).clientVerify(addresses, opts),
    );
  remote
    .command("upload")
    .description(
      "upload a list file as a batch task, after showing its price (the server's quote) and asking; with --wait, follow it and download the results",
    )
    .argument("<file>", "a .csv, .txt or .xlsx list")
    .option("-c, --column <column>", COLUMN_HELP)
    .option("--sheet <name>", SHEET_HELP)
    .option("-y, --yes", "upload at the price shown without asking (needed when stdin is not a terminal)")
    .option("--dry-run", "print the price (addresses, credits, balance after) and upload nothing")
    .option("-w, --wait", "wait for the task to finish (progress on stderr), then download the results")
    .option(
      "-o, --out <file>",
      "with --wait: results file (default: <list>-results.<format> next to the list)",
    )
    .option("--format <format>", "with --wait: csv, txt or xlsx (default: from --out, else csv)", formatArg)
    .option("--force", "with --wait: replace an existing results file (never the list itself)")
    .option("--timeout <minutes>", "with --wait: give up waiting after this long", atLeastOne, 120)
    .option(
      "--json",
      "print the server's JSON answer (the upload; with --wait, the finished task; with --dry-run, the price)",
    )
    .action(
      async (
        file: string,
        opts: {
          column?: string;
          sheet?: string;
          wait?: boolean;
          out?: string;
          format?: FileFormat;
          timeout: number;
          json?: boolean;
          force?: boolean;
          yes?: boolean;
          dryRun?: boolean;
        },
      ) => (await client()).clientUpload(file, opts),
    );
  remote
    .command("download")
    .description("download a task's results")
    .argument("<task_id>", "task id (UUID)", taskIdArg)
    .option(
      "-o, --out <file>",
      "results file (default: the server's file name, <list>-results.<format>, in this directory)",
    )
    .option("--format <format>", "csv, txt or xlsx (default: from --out, else csv)", formatArg)
    .option("--force", "replace an existing results file (never the list itself)")
    .action(async (taskId: string, opts: { out?: string; format?: FileFormat; force?: boolean }) =>
      (await client()).clientDownload(taskId, opts),
    );
  remote
    .command("tasks")
    .description("list your batch tasks, newest first")
    .option("--limit <n>", "how many (1-100)", atLeastOne, 10)
    .option("--json", "print the server's JSON")
    .action(async (opts: { limit: number; json?: boolean }) => (await client()).clientTasks(opts));
  remote
    .command("sign-in-link")
    .description(
      "print a one-time link that signs this key into the dashboard (15 minutes, one use; a custom key)",
    )
    .option("--json", "print the server's JSON with the link")
    .action(async (opts: { json?: boolean }) => (await client()).clientSignInLink(opts));
  remote
    .command("credits")
    .description("show your credit balance")
    .option("--json", "print the server's JSON")
    .action(async (opts: { json?: boolean }) => (await client()).clientCredits(opts));

  return program;
}

/** Errors that are the user's to fix: one line on stderr, exit 1, no stack trace. */
const EXPECTED_ERRORS = new Set([
  "ConfigError",
  "CliError",
  "AppError",
  "DataDirBusyError",
  "ClientError",
  "ListenError",
]);

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (e) {
    const err = e as { code?: string; exitCode?: number; message?: string; name?: string };
    if (typeof err.code === "string" && err.code.startsWith("commander.")) {
      process.exitCode = err.exitCode ?? 1;
      return;
    }
    if (typeof err.name === "string" && EXPECTED_ERRORS.has(err.name)) {
      process.stderr.write(`mailprobe: ${err.message}\n`);
      process.exitCode = typeof err.exitCode === "number" ? err.exitCode : 1;
      return;
    }
    throw e;
  }
}
