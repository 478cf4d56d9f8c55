// `mailprobe backup` and `mailprobe restore`: the embedded engine's data directory to one file
// and back (the file's layout: backup-archive.ts). PostgreSQL has its own tools for this.
import { readFileSync } from "node:fs";
import { readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import type { AdminEndpoint } from "../app/admin-endpoint.ts";
import { loadConfig, type Config } from "../config/index.ts";
import { LOCK_FILE, lockDataDir } from "../db/data-dir-lock.ts";
import { makeDataDirPrivate } from "../db/data-dir-privacy.ts";
import { embeddedDatabaseDir } from "../db/open.ts";
import { stoppedDataDirTar } from "../db/base-backup-tar.ts";
import { openPglite } from "../db/pglite.ts";
import { backupArchive, openBackupArchive, SECRET_FILES, type CheckedBackup } from "./backup-archive.ts";
import { checkOutPath, CliError, shellWord, writeFileAtomically } from "./cli-support.ts";
import { serverOwning } from "./data-access.ts";

const say = (line: string): void => void process.stdout.write(line + "\n");
const warn = (line: string): void => void process.stderr.write(`mailprobe: warning: ${line}\n`);

/** One line: what to run instead on PostgreSQL (README: "Backup and restore"). */
function refuseOnPostgres(config: Readonly<Config>, what: "backup" | "restore", file: string): void {
  if (config.databaseUrl === null) return;
  const f = shellWord(file);
  throw new CliError(
    what === "backup"
      ? `backup copies the embedded database only; with DATABASE_URL run: pg_dump --format=custom --no-owner --file=${f} "$DATABASE_URL"`
      : `restore fills the embedded database only; with DATABASE_URL run: pg_restore --no-owner --exit-on-error --dbname="$DATABASE_URL" ${f}`,
  );
}

function packageVersion(): string {
  const url = new URL("../../package.json", import.meta.url);
  return (JSON.parse(readFileSync(url, "utf8")) as { version?: string }).version ?? "0.0.0";
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** `mailprobe backup --out FILE`: through the running server, else from DATA_DIR directly. */
export async function backupCommand(opts: { out: string; force?: boolean }): Promise<void> {
  const config = loadConfig(process.env);
  refuseOnPostgres(config, "backup", opts.out);
  await checkOutPath(null, opts.out, opts.force === true);
  const startedAt = performance.now();
  const server = await serverOwning(config.dataDir);
  const createdAt = new Date();
  const secrets = new Map<string, Buffer>();
  for (const name of SECRET_FILES) {
    const bytes = await readSecret(join(config.dataDir, name));
    if (bytes) secrets.set(name, bytes);
    else warn(`${join(config.dataDir, name)} does not exist; the backup holds no ${name}`);
  }
  const database = server ? await backupFromServer(server) : await copyStoppedDirectory(config.dataDir);
  const archive = backupArchive({ database, secrets, createdAt, mailprobeVersion: packageVersion() });
  await writeFileAtomically(opts.out, archive.zip, opts.force === true, 0o600).catch((e: unknown) => {
    if (!server || e instanceof CliError) throw e;
    // The server ended the stream early: it stopped, or the copy failed (its log says why).
    const why = e instanceof Error ? e.message : String(e);
    throw new CliError(
      `backup through the running server failed: the server stopped sending it (${why}); see its log`,
    );
  });
  const size = (await stat(opts.out)).size;
  say(
    `backup written to ${opts.out}: ${mb(size)} (database ${mb(archive.databaseBytes())} uncompressed), ` +
      `${server ? "from the running server" : `from ${config.dataDir}`} in ${Math.round(performance.now() - startedAt)} ms`,
  );
  if (secrets.size > 0)
    say(
      `it holds ${[...secrets.keys()].join(" and ")} of ${config.dataDir}: keep it as private as that directory`,
    );
}

/** A secrets file of DATA_DIR, or null when there is none. */
async function readSecret(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    throw new CliError(`cannot read ${path} (${code}); run backup as the user the server runs as`);
  }
}

/** The server's online backup, streamed as it reads its data directory (no copy in memory). */
async function backupFromServer(server: AdminEndpoint): Promise<Readable> {
  const res = await fetch(`${server.url}/admin/v1/backup`, {
    method: "POST",
    headers: { "x-admin-token": server.token },
  });
  if (!res.ok || !res.body) {
    const text = await res.text();
    let message = `server answered ${res.status}`;
    try {
      message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
    } catch {
      // not the JSON error envelope: keep the status
    }
    throw new CliError(`backup through the running server failed: ${message}`);
  }
  return Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
}

/**
 * No server runs: DATA_DIR's lock (no server can start meanwhile) is held while the directory
 * is copied as it lies, all of its WAL with it: a directory a server left by crashing then
 * recovers on the restore's first open, as it would have on the server's next start.
 */
async function copyStoppedDirectory(dataDir: string): Promise<Readable> {
  const path = embeddedDatabaseDir(dataDir);
  if (!(await stat(path).catch(() => null))?.isDirectory())
    throw new CliError(`${dataDir} holds no database (no ${path}); set DATA_DIR to the server's directory`);
  const release = await lockDataDir(dataDir);
  const tar = stoppedDataDirTar(path);
  tar.once("close", () => void release());
  return tar;
}

/** `mailprobe restore FILE`: into an empty (or new) DATA_DIR, never over anything. */
export async function restoreCommand(file: string): Promise<void> {
  const config = loadConfig(process.env);
  refuseOnPostgres(config, "restore", file);
  const startedAt = performance.now();
  // The whole file is read and checked before DATA_DIR is touched.
  const backup = await openBackupArchive(file);
  try {
    await restoreInto(config.dataDir, backup, file, startedAt);
  } finally {
    backup.close();
  }
}

async function restoreInto(
  dir: string,
  backup: CheckedBackup,
  file: string,
  startedAt: number,
): Promise<void> {
  await assertEmpty(dir);
  // Private before anything is written: the engine's files take the umask this narrows.
  await makeDataDirPrivate(dir);
  const release = await lockDataDir(dir);
  const written: string[] = [];
  let ours = false;
  try {
    // Another restore or a server may have started in it between the check and the lock.
    await assertEmpty(dir, [LOCK_FILE]);
    ours = true;
    for (const [name, bytes] of backup.secrets) {
      written.push(join(dir, name));
      await writeFile(join(dir, name), bytes, { mode: 0o600, flag: "wx" });
    }
    written.push(embeddedDatabaseDir(dir));
    await backup.extractDatabase(embeddedDatabaseDir(dir));
    const counts = await countWhatItHolds(embeddedDatabaseDir(dir));
    say(
      `restored ${file} (taken ${backup.createdAt.toISOString()} by mailprobe ${backup.mailprobeVersion}) ` +
        `into ${dir}: ${counts.users} users, ${counts.ledgerRows} ledger entries, in ${Math.round(performance.now() - startedAt)} ms`,
    );
  } catch (e) {
    for (const path of written) await rm(path, { recursive: true, force: true });
    // The directory was empty before: leave it so, lock file included, and a retry may start.
    await release();
    if (ours) await rm(join(dir, LOCK_FILE), { force: true });
    throw e;
  }
  await release();
}

/**
 * Proves the restored directory opens by counting what it holds. The first open replays the
 * WAL the backup holds: from backup_label's checkpoint to the backup's end, or, for a copy of
 * a stopped directory, to its last commit.
 */
async function countWhatItHolds(path: string): Promise<{ users: number; ledgerRows: number }> {
  try {
    const db = await openPglite(path);
    try {
      const { rows } = await db.query<{ users: number; ledger_rows: number }>(
        "select (select count(*) from users) as users, (select count(*) from credit_transactions) as ledger_rows",
      );
      return { users: rows[0]!.users, ledgerRows: rows[0]!.ledger_rows };
    } finally {
      await db.close();
    }
  } catch (e) {
    throw new CliError(`the backup's database does not open: ${e instanceof Error ? e.message : String(e)}`);
  }
}

async function assertEmpty(dir: string, allowed: readonly string[] = []): Promise<void> {
  const names = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [];
    if (e.code === "ENOTDIR") throw new CliError(`DATA_DIR ${dir} is a file, not a directory`);
    throw e;
  });
  const other = names.filter((n) => !allowed.includes(n));
  if (other.length > 0)
    throw new CliError(
      `DATA_DIR ${dir} is not empty (${other.slice(0, 3).join(", ")}${other.length > 3 ? ", …" : ""}); ` +
        "restore only into an empty or new directory (set DATA_DIR to one)",
    );
}
