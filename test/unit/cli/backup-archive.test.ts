// The backup file's format (src/cli/backup-archive.ts, database-tar.ts): what goes in comes
// out, and a file that is not a whole backup of this format is refused by name before anything
// is restored: names that would climb out of the directory, links, a name twice, a damaged byte.
import assert from "node:assert/strict";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { pipeline } from "node:stream/promises";
import { after, test } from "node:test";
import yazl from "yazl";
import { backupArchive, openBackupArchive, type BackupParts } from "../../../src/cli/backup-archive.ts";

/** Opens (and so checks) the backup at `path`, then closes it. */
async function readBackupArchive(path: string): Promise<Awaited<ReturnType<typeof openBackupArchive>>> {
  const backup = await openBackupArchive(path);
  backup.close();
  return backup;
}

const dir = await mkdtemp(join(tmpdir(), "mailprobe-archive-"));
after(() => rm(dir, { recursive: true, force: true }));

/**
 * A ustar archive of `files` (512-byte blocks), names as given: format 1's dumpDataDir wrote
 * absolute ones. Each entry is a regular file unless a type flag follows its text.
 */
function tarOf(files: Record<string, string> | Array<[string, string, string?]>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, text, type = "0"] of Array.isArray(files) ? files : Object.entries(files)) {
    const body = Buffer.from(text);
    const header = Buffer.alloc(512);
    header.write(name, 0, "latin1");
    header.write("0000644\0", 100, "latin1");
    header.write(body.length.toString(8).padStart(11, "0") + "\0", 124, "latin1");
    header.write("00000000000\0", 136, "latin1");
    header.write(type, 156, "latin1");
    header.write("ustar\0" + "00", 257, "latin1");
    header.fill(32, 148, 156);
    const sum = header.reduce((n, b) => n + b, 0);
    header.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, "latin1");
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  return Buffer.concat([...blocks, Buffer.alloc(1024)]);
}

const DATABASE = tarOf({ "/PG_VERSION": "17\n", "/global/pg_control": "control".repeat(100) });

const partsWith = (database: Buffer, over: Partial<BackupParts> = {}): BackupParts => ({
  ...contents,
  database: Readable.from([database]),
  ...over,
});

const contents = {
  secrets: new Map([
    ["encryption.key", Buffer.from("00".repeat(32) + "\n")],
    ["jwt.secret", Buffer.from("s".repeat(64) + "\n")],
  ]),
  createdAt: new Date("2026-11-26T15:00:00.000Z"),
  mailprobeVersion: "0.1.0",
};

async function zipOf(name: string, entries: Record<string, string | Buffer>): Promise<string> {
  const zip = new yazl.ZipFile();
  for (const [entry, body] of Object.entries(entries)) zip.addBuffer(Buffer.from(body), entry);
  zip.end();
  const path = join(dir, name);
  await pipeline(zip.outputStream as Readable, createWriteStream(path));
  return path;
}

const manifest = (over: Record<string, unknown> = {}): string =>
  JSON.stringify({
    format: "mailprobe-backup",
    version: 1,
    created_at: "2026-11-26T15:00:00.000Z",
    mailprobe_version: "0.1.0",
    engine: "pglite",
    database: "pgdata.tar",
    database_bytes: 3,
    secrets: [],
    ...over,
  });

test("a written backup reads back whole: database, secrets, time and version", async () => {
  const path = join(dir, "whole.backup");
  await pipeline(backupArchive(partsWith(DATABASE)).zip, createWriteStream(path));
  const backup = await openBackupArchive(path);
  try {
    assert.deepEqual(
      { secrets: backup.secrets, createdAt: backup.createdAt, mailprobeVersion: backup.mailprobeVersion },
      contents,
    );
    const out = join(dir, "whole-pgdata");
    await backup.extractDatabase(out);
    assert.equal(await readFile(join(out, "PG_VERSION"), "utf8"), "17\n");
    assert.equal(await readFile(join(out, "global", "pg_control"), "utf8"), "control".repeat(100));
  } finally {
    backup.close();
  }
});

const written = async (name: string, database: Buffer, compress = true): Promise<string> => {
  const path = join(dir, `${name}.backup`);
  const archive = compress ? backupArchive(partsWith(database)).zip : storedArchive(database);
  await pipeline(archive, createWriteStream(path));
  return path;
};

/** A backup whose database is stored, not deflated, so a byte of it can be found and changed. */
function storedArchive(database: Buffer): Readable {
  const zip = new yazl.ZipFile();
  zip.addBuffer(database, "pgdata.tar", { compress: false });
  zip.addBuffer(
    Buffer.from(manifest({ version: 2, database_bytes: database.length })),
    "mailprobe-backup.json",
  );
  zip.end();
  return zip.outputStream as Readable;
}

const databaseRefusals: Array<[string, Buffer, RegExp]> = [
  [
    "not a tar",
    Buffer.from("a tar would be here ".repeat(1000)),
    /pgdata\.tar: it has a damaged entry header/,
  ],
  ["no pg_control", tarOf({ "/PG_VERSION": "17\n" }), /has no global\/pg_control: not a database directory/],
  [
    "a name that climbs out",
    tarOf({ "/PG_VERSION": "17\n", "/global/pg_control": "c", "/base/../../etc/cron.d/x": "boom" }),
    /"\/base\/..\/..\/etc\/cron.d\/x" is not a data directory's file name/,
  ],
  [
    "a symbolic link",
    tarOf([
      ["PG_VERSION", "17\n"],
      ["global/pg_control", "c"],
      ["base", "", "2"],
    ]),
    /base is a symlink, not a file or directory/,
  ],
  [
    "a name twice",
    tarOf([
      ["PG_VERSION", "17\n"],
      ["global/pg_control", "c"],
      ["PG_VERSION", "16\n"],
    ]),
    /it holds PG_VERSION twice/,
  ],
  ["a cut-off tar", DATABASE.subarray(0, 700), /it is truncated/],
];

for (const [name, database, message] of databaseRefusals)
  test(`a database part is refused before anything is written: ${name}`, async () => {
    await assert.rejects(readBackupArchive(await written(name.replace(/\W+/g, "-"), database)), message);
  });

test("a database part whose deflate stream is damaged is refused as such, not with a stack trace", async () => {
  const path = join(dir, "bad-deflate.backup");
  const zip = new yazl.ZipFile();
  zip.addBuffer(DATABASE, "pgdata.tar");
  zip.addBuffer(
    Buffer.from(manifest({ version: 2, database_bytes: DATABASE.length })),
    "mailprobe-backup.json",
  );
  zip.end();
  const bytes = await buffer(zip.outputStream as Readable);
  // The deflated tar starts right after its local header (30 bytes and the name).
  const data = 30 + "pgdata.tar".length;
  bytes.fill(0xff, data, data + 64);
  await writeFile(path, bytes);
  await assert.rejects(readBackupArchive(path), (e: Error) => {
    assert.equal(e.name, "CliError");
    assert.match(e.message, /pgdata\.tar (cannot be read|: it)/);
    return true;
  });
});

test("a database byte changed after the backup was written is caught by its CRC-32", async () => {
  const path = await written("flipped", DATABASE, false);
  const bytes = await readFile(path);
  const at = bytes.indexOf("controlcontrol");
  assert.ok(at > 0);
  bytes[at] = "C".charCodeAt(0);
  await writeFile(path, bytes);
  await assert.rejects(readBackupArchive(path), /pgdata\.tar is damaged \(CRC-32 mismatch\)/);
});

test("a backup without secrets files reads back without them", async () => {
  const path = join(dir, "no-secrets.backup");
  await pipeline(backupArchive(partsWith(DATABASE, { secrets: new Map() })).zip, createWriteStream(path));
  assert.equal((await readBackupArchive(path)).secrets.size, 0);
});

const refusals: Array<[string, () => Promise<string>, RegExp]> = [
  [
    "a file that is no zip",
    async () => (await writeFile(join(dir, "x.txt"), "hello"), join(dir, "x.txt")),
    /not a mailprobe backup/,
  ],
  ["a missing file", async () => join(dir, "absent.backup"), /does not exist/],
  [
    "a zip of something else",
    () => zipOf("other.zip", { "readme.txt": "hi" }),
    /unexpected entry readme\.txt/,
  ],
  ["no manifest", () => zipOf("no-manifest.zip", { "pgdata.tar": "abc" }), /no mailprobe-backup\.json/],
  [
    "another format",
    () => zipOf("format.zip", { "mailprobe-backup.json": manifest({ format: "x" }), "pgdata.tar": "abc" }),
    /names format x/,
  ],
  [
    "a later format version",
    () => zipOf("v3.zip", { "mailprobe-backup.json": manifest({ version: 3 }), "pgdata.tar": "abc" }),
    /format version 3; this mailprobe reads versions 1 and 2/,
  ],
  ["no database", () => zipOf("no-db.zip", { "mailprobe-backup.json": manifest() }), /no pgdata\.tar/],
  [
    "a database of another size than recorded",
    () => zipOf("short.zip", { "mailprobe-backup.json": manifest(), "pgdata.tar": "ab" }),
    /pgdata\.tar is truncated/,
  ],
  [
    "a listed secret missing",
    () =>
      zipOf("secret.zip", {
        "mailprobe-backup.json": manifest({ secrets: ["encryption.key"] }),
        "pgdata.tar": "abc",
      }),
    /encryption\.key is missing/,
  ],
];

for (const [name, make, message] of refusals) {
  test(`refused: ${name}`, async () => {
    await assert.rejects(readBackupArchive(await make()), (e: Error) => {
      assert.equal(e.name, "CliError");
      assert.match(e.message, message);
      return true;
    });
  });
}
