// The bodies of the operator commands (serve, worker, migrate, users, credits, keys, verify,
// doctor). main.ts holds only the command tree and imports this module when a command runs, so
// `mailprobe --help` and `--version` load nothing but commander.
import type { Logger } from "../observability/logger.ts";
import { serve } from "../app/serve.ts";
import { work } from "../app/work.ts";
import { loadConfig } from "../config/index.ts";
import { assertEgressBindable } from "../config/egress.ts";
import { migrate } from "../db/migrate.ts";
import { openDatabase } from "../db/open.ts";
import { lockDataDir } from "../db/data-dir-lock.ts";
import type { ApiKeyPurpose } from "../keys/purposes.ts";
import { createLogger } from "../observability/logger.ts";
import { openDataAccess } from "./data-access.ts";
import { CliError, warnAboutConfig } from "./cli-support.ts";
import { formatTable, toJson, verifyAddresses } from "./verify-command.ts";
import { doctorJson, formatDoctorReport, runDoctorCommand } from "./doctor-command.ts";

const say = (line: string): void => void process.stdout.write(line + "\n");

// Data commands print their results on stdout (machine-readable with --json); logs go to stderr.
const dataCommandLogger = (): Logger => createLogger("warn", "stderr");

function toCliError(e: unknown): never {
  throw new CliError(e instanceof Error ? e.message : String(e));
}

export async function serveCommand(opts: { worker: boolean }): Promise<void> {
  const config = loadConfig(process.env);
  await assertEgressBindable(config.verify.smtpEgress);
  await serve(config, createLogger(config.logLevel, "stdout", config.logFormat), {
    say,
    withWorker: opts.worker,
  });
}

export async function workerCommand(): Promise<void> {
  const config = loadConfig(process.env);
  await assertEgressBindable(config.verify.smtpEgress);
  await work(config, createLogger(config.logLevel, "stdout", config.logFormat), say);
}

export async function migrateCommand(): Promise<void> {
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
}

export async function usersCreateCommand(opts: {
  credits: number;
  email?: string;
  json?: boolean;
}): Promise<void> {
  const config = loadConfig(process.env);
  const data = await openDataAccess(config, dataCommandLogger());
  try {
    const u = await data.createUser(opts.credits, opts.email ?? null);
    if (opts.json) say(JSON.stringify({ user_id: u.userId, balance: u.balance, api_key: u.apiKey }));
    else {
      say(`user_id: ${u.userId}`);
      say(`balance: ${u.balance}`);
      say(`api_key: ${u.apiKey}`);
      say("(the key is shown once here; list or reveal keys later with GET /api/v1/api-keys?reveal=true)");
    }
  } finally {
    await data.close();
  }
}

export async function creditsGrantCommand(
  userId: string,
  amount: number,
  opts: { reason: string },
): Promise<void> {
  if (amount < 1) throw new CliError("amount must be at least 1");
  const config = loadConfig(process.env);
  const data = await openDataAccess(config, dataCommandLogger());
  try {
    const t = await data.grantCredits(userId, amount, opts.reason);
    say(`granted ${amount} credits to ${userId}: balance ${t.balanceAfter} (transaction ${t.transactionId})`);
  } finally {
    await data.close();
  }
}

export async function keysCreateCommand(
  userId: string,
  opts: { name: string; purpose: ApiKeyPurpose; json?: boolean },
): Promise<void> {
  if (!opts.name.trim()) throw new CliError("--name must not be blank");
  const data = await openDataAccess(loadConfig(process.env), dataCommandLogger());
  try {
    const k = await data.createKey(userId, opts.name.trim(), opts.purpose);
    if (opts.json) say(JSON.stringify(k));
    else for (const f of ["id", "name", "purpose", "key"] as const) say(`${f}: ${k[f]}`);
  } finally {
    await data.close();
  }
}

export async function keysListCommand(userId: string, opts: { json?: boolean }): Promise<void> {
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
}

export async function keysRevokeCommand(userId: string, keyId: string): Promise<void> {
  const data = await openDataAccess(loadConfig(process.env), dataCommandLogger());
  try {
    await data.revokeKey(userId, keyId);
    say(`revoked ${keyId}`);
  } finally {
    await data.close();
  }
}

/** `mailprobe verify ADDRESS…`: the engine on the command line, results on stdout. */
export async function verifyAddressesCommand(addresses: string[], opts: { json?: boolean }): Promise<void> {
  const config = loadConfig(process.env);
  warnAboutConfig(config);
  const results = await verifyAddresses(config, addresses);
  say(opts.json ? results.map((r) => JSON.stringify(toJson(r))).join("\n") : formatTable(results));
}

export async function doctorCommand(opts: { mx?: string; json?: boolean }): Promise<void> {
  const config = loadConfig(process.env);
  const report = await runDoctorCommand(config, { mx: opts.mx ?? null });
  say(opts.json ? JSON.stringify(doctorJson(config, report)) : formatDoctorReport(config, report));
  if (!report.ok) process.exitCode = 1;
}
