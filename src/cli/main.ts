import { Command, InvalidArgumentError } from "commander";
import type { Logger } from "../observability/logger.ts";
import { serve } from "../app/serve.ts";
import { work } from "../app/work.ts";
import { ConfigError, loadConfig, type Config } from "../config/index.ts";
import { migrate } from "../db/migrate.ts";
import { openDatabase } from "../db/open.ts";
import { lockDataDir } from "../db/data-dir-lock.ts";
import { API_KEY_PURPOSES, type ApiKeyPurpose } from "../keys/service.ts";
import { isUuid } from "../lib/ids.ts";
import { createLogger } from "../observability/logger.ts";
import { CliError, openDataAccess } from "./data-access.ts";
import { formatTable, toJson, verifyAddresses } from "./verify-command.ts";
import { doctorJson, formatDoctorReport, runDoctorCommand } from "./doctor-command.ts";

const say = (line: string): void => void process.stdout.write(line + "\n");

// The data commands print their result on stdout (`--json` is meant to be piped), so their own
// warnings (e.g. "generated an encryption key") must go to stderr, not into that output.
// Data commands print their results on stdout (machine-readable with --json); logs go to stderr.
const dataCommandLogger = (): Logger => createLogger("warn", "stderr");

// Commands that probe mail servers say on stderr what the server logs at start (e.g. a HELO name
// receivers refuse), without disturbing --json on stdout.
function warnAboutConfig(config: Readonly<Config>): void {
  for (const w of config.warnings) process.stderr.write(`mailprobe: warning: ${w.message}\n`);
}

function positiveInt(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("must be a non-negative integer");
  return Number(value);
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

function purposeArg(value: string): ApiKeyPurpose {
  const purpose = API_KEY_PURPOSES.find((p) => p === value);
  if (!purpose) throw new InvalidArgumentError(`must be one of ${API_KEY_PURPOSES.join(", ")}`);
  return purpose;
}

function buildProgram(): Command {
  const program = new Command("mailprobe")
    .description("Self-hostable email verification service")
    .showHelpAfterError()
    .exitOverride();

  program
    .command("serve")
    .description("run the HTTP API and, unless --no-worker, the batch workers")
    .option("--no-worker", "do not run batch workers in this process")
    .action(async (opts: { worker: boolean }) => {
      const config = loadConfig(process.env);
      await serve(config, createLogger(config.logLevel), { say, withWorker: opts.worker });
    });

  program
    .command("worker")
    .description("run only the batch worker pool and webhook dispatcher")
    .action(async () => {
      const config = loadConfig(process.env);
      await work(config, createLogger(config.logLevel), say);
    });

  program
    .command("migrate")
    .description("apply pending database migrations and exit")
    .action(async () => {
      const config = loadConfig(process.env);
      const release = config.databaseUrl ? null : await lockDataDir(config.dataDir).catch(toCliError);
      const db = await openDatabase({
        databaseUrl: config.databaseUrl,
        dataDir: config.dataDir,
        poolSize: 2,
      });
      try {
        const applied = await migrate(db);
        say(applied.length ? `applied migrations: ${applied.join(", ")}` : "database is up to date");
      } finally {
        await db.close();
        await release?.();
      }
    });

  const users = program.command("users").description("manage users");
  users
    .command("create")
    .description("create a user; prints its id and a first API key (shown once)")
    .requiredOption("--credits <n>", "opening credit balance", positiveInt)
    .option("--email <email>", "contact email (unique)")
    .option("--json", "print JSON")
    .action(async (opts: { credits: number; email?: string; json?: boolean }) => {
      const config = loadConfig(process.env);
      const data = await openDataAccess(config, dataCommandLogger());
      try {
        const u = await data.createUser(opts.credits, opts.email ?? null);
        if (opts.json) say(JSON.stringify({ user_id: u.userId, balance: u.balance, api_key: u.apiKey }));
        else {
          say(`user_id: ${u.userId}`);
          say(`balance: ${u.balance}`);
          say(`api_key: ${u.apiKey}`);
          say(
            "(the key is shown once here; list or reveal keys later with GET /api/v1/api-keys?reveal=true)",
          );
        }
      } finally {
        await data.close();
      }
    });

  const credits = program.command("credits").description("manage credits");
  credits
    .command("grant")
    .description("grant credits to a user (writes a grant transaction)")
    .argument("<user_id>", "user id (UUID)", uuidArg)
    .argument("<amount>", "credits to add", positiveInt)
    .requiredOption("--reason <reason>", "reason recorded on the transaction")
    .action(async (userId: string, amount: number, opts: { reason: string }) => {
      if (amount < 1) throw new CliError("amount must be at least 1");
      const config = loadConfig(process.env);
      const data = await openDataAccess(config, dataCommandLogger());
      try {
        const t = await data.grantCredits(userId, amount, opts.reason);
        say(
          `granted ${amount} credits to ${userId}: balance ${t.balanceAfter} (transaction ${t.transactionId})`,
        );
      } finally {
        await data.close();
      }
    });

  const keys = program.command("keys").description("manage a user's API keys (operators)");
  keys
    .command("create")
    .description("create an API key for a user; prints it once")
    .argument("<user_id>", "user id (UUID)", uuidArg)
    .option("--name <name>", "key name", "cli")
    .option("--purpose <purpose>", `one of ${API_KEY_PURPOSES.join(", ")}`, purposeArg, "custom")
    .option("--json", "print JSON")
    .action(async (userId: string, opts: { name: string; purpose: ApiKeyPurpose; json?: boolean }) => {
      if (!opts.name.trim()) throw new CliError("--name must not be blank");
      const data = await openDataAccess(loadConfig(process.env), dataCommandLogger());
      try {
        const k = await data.createKey(userId, opts.name.trim(), opts.purpose);
        if (opts.json) say(JSON.stringify(k));
        else for (const f of ["id", "name", "purpose", "key"] as const) say(`${f}: ${k[f]}`);
      } finally {
        await data.close();
      }
    });
  keys
    .command("list")
    .description("list a user's API keys (never their plaintext)")
    .argument("<user_id>", "user id (UUID)", uuidArg)
    .option("--json", "print JSON")
    .action(async (userId: string, opts: { json?: boolean }) => {
      const data = await openDataAccess(loadConfig(process.env), dataCommandLogger());
      try {
        const list = await data.listKeys(userId);
        if (opts.json) say(JSON.stringify(list));
        else
          for (const k of list)
            say([k.id, k.is_active ? "active" : "revoked", k.purpose, k.prefix, k.name].join("\t"));
      } finally {
        await data.close();
      }
    });
  keys
    .command("revoke")
    .description("deactivate one of a user's API keys (its sessions end too; the last active key is kept)")
    .argument("<user_id>", "user id (UUID)", uuidArg)
    .argument("<key_id>", "API key id (UUID)", keyIdArg)
    .action(async (userId: string, keyId: string) => {
      const data = await openDataAccess(loadConfig(process.env), dataCommandLogger());
      try {
        await data.revokeKey(userId, keyId);
        say(`revoked ${keyId}`);
      } finally {
        await data.close();
      }
    });

  program
    .command("verify")
    .description("verify addresses locally with the engine (no server, no credits) and print the results")
    .argument("<address...>", "addresses to verify")
    .option("--json", "print JSON lines")
    .action(async (addresses: string[], opts: { json?: boolean }) => {
      const config = loadConfig(process.env);
      warnAboutConfig(config);
      const results = await verifyAddresses(config, addresses);
      say(opts.json ? results.map((r) => JSON.stringify(toJson(r))).join("\n") : formatTable(results));
    });

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
    .action(async (opts: { mx?: string; json?: boolean }) => {
      const config = loadConfig(process.env);
      const report = await runDoctorCommand(config, { mx: opts.mx ?? null });
      say(opts.json ? JSON.stringify(doctorJson(config, report)) : formatDoctorReport(config, report));
      if (!report.ok) process.exitCode = 1;
    });

  return program;
}

function toCliError(e: unknown): never {
  throw new CliError(e instanceof Error ? e.message : String(e));
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (e) {
    const err = e as { code?: string; exitCode?: number; message?: string; name?: string };
    if (typeof err.code === "string" && err.code.startsWith("commander.")) {
      process.exitCode = err.exitCode ?? 1;
      return;
    }
    if (
      e instanceof ConfigError ||
      e instanceof CliError ||
      err.name === "AppError" ||
      err.name === "DataDirBusyError"
    ) {
      process.stderr.write(`mailprobe: ${err.message}\n`);
      process.exitCode = 1;
      return;
    }
    throw e;
  }
}
