// The backup file's format (src/cli/backup-archive.ts): what goes in comes out, and a file that
// is not a whole backup of this format is refused by name before anything is restored.
import assert from "node:assert/strict";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { after, test } from "node:test";
import yazl from "yazl";
import { backupArchive, readBackupArchive } from "../../../src/cli/backup-archive.ts";

const dir = await mkdtemp(join(tmpdir(), "mailprobe-archive-"));
after(() => rm(dir, { recursive: true, force: true }));

/** A ustar archive of `files`, as PGlite's dumpDataDir writes one (absolute names, 512-byte blocks). */
function tarOf(files: Record<string, string>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, text] of Object.entries(files)) {
    const body = Buffer.from(text);
    const header = Buffer.alloc(512);
    header.write(name, 0, "latin1");
    header.write("0000644\0", 100, "latin1");
    header.write(body.length.toString(8).padStart(11, "0") + "\0", 124, "latin1");
    header.write("00000000000\0", 136, "latin1");
    header.write("0", 156, "latin1");
    header.write("ustar\0" + "00", 257, "latin1");
    header.fill(32, 148, 156);
    const sum = header.reduce((n, b) => n + b, 0);
    header.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, "latin1");
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  return Buffer.concat([...blocks, Buffer.alloc(1024)]);
}

const contents = {
  database: tarOf({ "/PG_VERSION": "17\n", "/global/pg_control": "control".repeat(100) }),
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
  await pipeline(backupArchive(contents), createWriteStream(path));
  assert.deepEqual(await readBackupArchive(path), contents);
});

test("a database part that is not such a tar is refused, naming what is wrong", async () => {
  const path = join(dir, "not-a-tar.backup");
  const notATar = Buffer.from("a tar would be here ".repeat(1000));
  await pipeline(backupArchive({ ...contents, database: notATar }), createWriteStream(path));
  await assert.rejects(readBackupArchive(path), /pgdata\.tar has a damaged entry header at byte 0/);
  const noControl = join(dir, "no-control.backup");
  await pipeline(
    backupArchive({ ...contents, database: tarOf({ "/PG_VERSION": "17\n" }) }),
    createWriteStream(noControl),
  );
  await assert.rejects(readBackupArchive(noControl), /has no \/global\/pg_control: not a database directory/);
});

test("a backup without secrets files reads back without them", async () => {
  const path = join(dir, "no-secrets.backup");
  await pipeline(backupArchive({ ...contents, secrets: new Map() }), createWriteStream(path));
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
    () => zipOf("v2.zip", { "mailprobe-backup.json": manifest({ version: 2 }), "pgdata.tar": "abc" }),
    /format version 2; this mailprobe reads version 1/,
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
