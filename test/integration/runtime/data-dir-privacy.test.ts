// The embedded data directory is its owner's only. A fresh DATA_DIR (the
// database, its write-ahead log, the generated secrets) has no file another local account can
// read or write; one an earlier version left open is closed at start; and a backup's partial file
// is created, never reused, so a file someone else placed at its name cannot receive the backup.
import assert from "node:assert/strict";
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";
import { loadLocalSecrets } from "../../../src/app/local-secrets.ts";
import { writeFileAtomically } from "../../../src/cli/cli-support.ts";
import { makeDataDirPrivate } from "../../../src/db/data-dir-privacy.ts";
import { migrate } from "../../../src/db/migrate.ts";
import { openDatabase } from "../../../src/db/open.ts";

let root: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), "mailprobe-privacy-"));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Every entry under `dir` (symbolic links not followed) with its permission bits. */
async function modesUnder(dir: string): Promise<Array<{ path: string; mode: number; dir: boolean }>> {
  const out: Array<{ path: string; mode: number; dir: boolean }> = [];
  const walk = async (path: string): Promise<void> => {
    const s = await lstat(path);
    if (s.isSymbolicLink()) return;
    out.push({ path, mode: s.mode & 0o777, dir: s.isDirectory() });
    if (s.isDirectory()) for (const name of await readdir(path)) await walk(join(path, name));
  };
  await walk(dir);
  return out;
}

test("a fresh DATA_DIR: database, write-ahead log and secrets are the owner's only", async () => {
  const dataDir = join(root, "fresh");
  const db = await openDatabase({ databaseUrl: null, dataDir, poolSize: 1 });
  try {
    await migrate(db);
    await db.query("select 1");
  } finally {
    await db.close();
  }
  await loadLocalSecrets(dataDir);
  const entries = await modesUnder(dataDir);
  assert.ok(entries.length > 100, `${entries.length.toString()} entries: the database is there`);
  const open = entries.filter((e) => (e.mode & 0o077) !== 0);
  assert.deepEqual(
    open.map((e) => `${e.path} ${e.mode.toString(8)}`),
    [],
    "no entry readable or writable by group or others",
  );
  assert.equal(entries.find((e) => e.path === dataDir)?.mode, 0o700);
});

test("an existing DATA_DIR left open to others is closed at start; links are not followed", async () => {
  const dataDir = join(root, "old");
  const outside = join(root, "outside.txt");
  await mkdir(join(dataDir, "pgdata", "base"), { recursive: true });
  await writeFile(join(dataDir, "encryption.key"), "k\n");
  await writeFile(join(dataDir, "pgdata", "base", "1259"), "catalog");
  await writeFile(outside, "not ours to change");
  await symlink(outside, join(dataDir, "link"));
  await chmod(join(dataDir, "encryption.key"), 0o666);
  await chmod(join(dataDir, "pgdata", "base", "1259"), 0o644);
  await chmod(join(dataDir, "pgdata"), 0o777);
  await chmod(dataDir, 0o755);
  await chmod(outside, 0o644);

  const found = await makeDataDirPrivate(dataDir);
  assert.equal(found.fixed.length, 4, found.fixed.join(", "));
  assert.deepEqual(found.refused, []);
  const modes = new Map((await modesUnder(dataDir)).map((e) => [e.path, e.mode]));
  assert.equal(modes.get(dataDir), 0o700);
  assert.equal(modes.get(join(dataDir, "pgdata")), 0o700);
  assert.equal(modes.get(join(dataDir, "encryption.key")), 0o600);
  assert.equal(modes.get(join(dataDir, "pgdata", "base", "1259")), 0o600);
  assert.equal((await lstat(outside)).mode & 0o777, 0o644, "the link's target is left alone");
  // A second start finds nothing to fix.
  assert.deepEqual((await makeDataDirPrivate(dataDir)).fixed, []);
});

test("a backup's partial file is created, never reused: a file already at its name makes the write fail", async () => {
  const out = join(root, "backup.mailprobe");
  const partial = `${out}.partial-${process.pid.toString()}`;
  await writeFile(partial, "planted by someone else");
  await chmod(partial, 0o666);
  await assert.rejects(
    writeFileAtomically(out, Readable.from([Buffer.from("secret backup")]), false, 0o600),
    (e: NodeJS.ErrnoException) => e.code === "EEXIST",
  );
  await assert.rejects(readFile(out), { code: "ENOENT" });
  assert.equal(await readFile(partial, "utf8"), "planted by someone else", "it never received the backup");
});
