// What restore reads before it writes anything: a zip bomb is refused on its
// declared sizes before a byte is inflated (a 1 MB file declaring gigabytes once took 5.36 GB), a
// malformed secrets file is refused (a bad encryption.key once made every key creation a 500),
// and a restore that fails leaves DATA_DIR as empty as it found it, so a retry can start.
// In process: readBackupArchive and restoreCommand on real files, a real PGlite snapshot.
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { after, test } from "node:test";
import { migrate } from "../../../src/db/migrate.ts";
import { openPglite } from "../../../src/db/pglite.ts";
import { loadLocalSecrets } from "../../../src/app/local-secrets.ts";
import { backupArchive, openBackupArchive } from "../../../src/cli/backup-archive.ts";
import { restoreCommand } from "../../../src/cli/backup-command.ts";
import { buildZip, deflated, zerosDeflated, type RawEntry } from "../../unit/files/helpers.ts";

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mailprobe-restore-"));
  dirs.push(dir);
  return dir;
}

/** Opens (and so checks) the backup at `path`, then closes it. */
async function readBackupArchive(path: string): Promise<void> {
  (await openBackupArchive(path)).close();
}

const GOOD_KEY = "ab".repeat(32);
const GOOD_JWT = "s".repeat(48);

function manifest(databaseBytes: number, secrets: string[]): string {
  return JSON.stringify({
    format: "mailprobe-backup",
    version: 1,
    created_at: new Date().toISOString(),
    mailprobe_version: "0.1.0",
    engine: "pglite",
    database: "pgdata.tar",
    database_bytes: databaseBytes,
    secrets,
  });
}

async function fileOf(entries: RawEntry[]): Promise<string> {
  const path = join(await tempDir(), "backup.zip");
  await writeFile(path, buildZip(entries));
  return path;
}

test("a zip bomb (1 MB declaring 1 GiB of database) is refused on its declared size, without inflating it", async () => {
  const MIB = 1024 * 1024;
  const bomb: RawEntry = {
    name: "pgdata.tar",
    body: zerosDeflated(1_024),
    method: 8,
    declaredSize: 1_024 * MIB,
  };
  const path = await fileOf([deflated("mailprobe-backup.json", manifest(1_024 * MIB, [])), bomb]);
  const before = process.memoryUsage().rss;
  await assert.rejects(
    readBackupArchive(path),
    /would inflate \d+ bytes to 1073741824, more than 100 times: not a database/,
  );
  const grown = process.memoryUsage().rss - before;
  assert.ok(grown < 256 * MIB, `RSS grew ${Math.round(grown / MIB)} MiB`);
});

test("secrets files that could not be used are refused, naming the file; a manifest part over 64 KiB too", async () => {
  for (const [name, text, message] of [
    ["encryption.key", "not-hex", /encryption\.key must hold 64 hex characters/],
    ["encryption.key", "ab".repeat(31), /encryption\.key must hold 64 hex characters/],
    ["jwt.secret", "short", /jwt\.secret must hold at least 32 characters/],
  ] as const) {
    const path = await fileOf([
      deflated("mailprobe-backup.json", manifest(3, [name])),
      deflated("pgdata.tar", "tar"),
      deflated(name, text),
    ]);
    await assert.rejects(readBackupArchive(path), message);
  }
  const huge = await fileOf([deflated("mailprobe-backup.json", " ".repeat(70_000))]);
  await assert.rejects(readBackupArchive(huge), /mailprobe-backup\.json declares 70000 bytes/);
});

/** A real snapshot of an embedded database, migrated or left empty, as format 1 held it. */
async function snapshot(migrated: boolean): Promise<Buffer> {
  const db = await openPglite(null);
  if (migrated) await migrate(db);
  const tar = Buffer.from(await (await db.raw.dumpDataDir("none")).arrayBuffer());
  await db.close();
  return tar;
}

async function archiveOf(tar: Buffer, secrets: ReadonlyArray<readonly [string, string]>): Promise<string> {
  const path = join(await tempDir(), "backup.zip");
  const archive = backupArchive({
    database: Readable.from([tar]),
    secrets: new Map(secrets.map(([n, t]) => [n, Buffer.from(t)])),
    createdAt: new Date(),
    mailprobeVersion: "0.1.0",
  });
  await writeFile(path, await buffer(archive.zip));
  return path;
}

test("a database part that is not a data directory's tar is refused before anything is written", async () => {
  for (const [tar, message] of [
    [Buffer.alloc(10_240, 7), /pgdata\.tar: it has a damaged entry header/],
    [(await snapshot(false)).subarray(0, 1_048_576), /pgdata\.tar: (it is truncated|it has no PG_VERSION)/],
  ] as const) {
    const path = await fileOf([
      deflated("mailprobe-backup.json", manifest(tar.length, [])),
      deflated("pgdata.tar", tar),
    ]);
    await assert.rejects(readBackupArchive(path), message);
  }
});

test("a restore that fails leaves DATA_DIR as empty as it was; the retry with a good backup (of format 1) restores", async () => {
  const dataDir = join(await tempDir(), "data");
  const secrets = [
    ["encryption.key", GOOD_KEY],
    ["jwt.secret", GOOD_JWT],
  ] as const;
  // A real data directory without mailprobe's tables: it opens, and the check of what it holds fails.
  const unmigrated = await archiveOf(await snapshot(false), secrets);
  const saved = { DATA_DIR: process.env.DATA_DIR, DATABASE_URL: process.env.DATABASE_URL };
  process.env.DATA_DIR = dataDir;
  delete process.env.DATABASE_URL;
  try {
    await assert.rejects(restoreCommand(unmigrated), /the backup's database does not open/);
    assert.deepEqual(await readdir(dataDir), [], "no secrets, no pgdata/, no lock file left");
    // Format 1: PGlite's dumpDataDir under a version 1 manifest, as backups were written before.
    const tar = await snapshot(true);
    await restoreCommand(
      await fileOf([
        deflated(
          "mailprobe-backup.json",
          manifest(
            tar.length,
            secrets.map(([n]) => n),
          ),
        ),
        deflated("pgdata.tar", tar),
        ...secrets.map(([n, t]) => deflated(n, t)),
      ]),
    );
    assert.deepEqual((await readdir(dataDir)).sort(), ["encryption.key", "jwt.secret", "pgdata"]);
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
});

test("a DATA_DIR whose encryption.key is malformed stops the start naming the file (it once made every key creation a 500)", async () => {
  const dataDir = await tempDir();
  await writeFile(join(dataDir, "encryption.key"), "ab".repeat(31) + "\n");
  await assert.rejects(
    loadLocalSecrets(dataDir),
    /encryption\.key: encryption\.key must hold 64 hex characters .*restore it from a backup/,
  );
  await writeFile(join(dataDir, "encryption.key"), GOOD_KEY + "\n");
  assert.equal((await loadLocalSecrets(dataDir)).encryptionKey.length, 32);
});
