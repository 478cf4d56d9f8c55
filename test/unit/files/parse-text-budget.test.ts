// The text a parsed list may hold is bounded per row and per file, counted in the parsing thread
// before any row is kept: an xlsx whose cells all refer to one long shared string expands to
// gigabytes from a few hundred KB, and csv/txt rows of long cells are bounded the same way.
import assert from "node:assert/strict";
import { test } from "node:test";
import { randomBytes } from "node:crypto";
import {
  decodeRowBlock,
  parseListFile,
  packList,
  type ParseListInput,
  type ParseListResult,
} from "../../../src/files/index.ts";
import { createListParserPool } from "../../../src/files/index.ts";
import { STORED_BYTES_ALLOWANCE, STORED_BYTES_PER_FILE_BYTE } from "../../../src/files/parse/pack-list.ts";
import { sharedStringBomb } from "./helpers.ts";

const parse = (filename: string, data: Buffer | string, extra: Partial<ParseListInput> = {}) =>
  parseListFile({
    filename,
    data: typeof data === "string" ? Buffer.from(data, "utf8") : data,
    maxEmails: 10_000,
    ...extra,
  });

function refusedFor(result: ParseListResult, pattern: RegExp): void {
  if (result.ok) assert.fail("expected too_much_text, got a list");
  assert.equal(result.problem.code, "too_much_text", result.problem.message);
  assert.equal(result.problem.field, "file");
  assert.match(result.problem.message, pattern);
}

test("csv: a row of exactly maxRowChars characters is kept; one more is refused naming the row", async () => {
  // Row 2 is "a@example.com," + filler: 13 + filler characters of cells.
  const row = (filler: number) => `email,notes\na@example.com,${"y".repeat(filler)}\n`;
  const atLimit = await parse("l.csv", row(87), { maxRowChars: 100 });
  assert.ok(atLimit.ok, JSON.stringify(!atLimit.ok && atLimit.problem));
  refusedFor(await parse("l.csv", row(88), { maxRowChars: 100 }), /Row 2 .* 101 characters.* at most 100/);
});

test("csv and txt: the file's text is bounded at maxTextChars, the header included", async () => {
  // Header "email" (5) + 4 rows of "uN@example.com" (14): 61 characters.
  const csv = `email\n${[1, 2, 3, 4].map((i) => `u${i}@example.com`).join("\n")}\n`;
  assert.ok((await parse("l.csv", csv, { maxTextChars: 61 })).ok);
  refusedFor(
    await parse("l.csv", csv, { maxTextChars: 60 }),
    /more than 60 characters of text \(stopped at row 5\)/,
  );
  const txt = csv.replace(/^email\n/, "");
  assert.ok((await parse("l.txt", txt, { maxTextChars: 56 })).ok);
  refusedFor(await parse("l.txt", txt, { maxTextChars: 55 }), /more than 55 characters/);
});

test("xlsx: every reference to a shared string counts as the text it expands to", async () => {
  // 10 rows × (14 + 3 × 1,000) characters = 30,140.
  const book = sharedStringBomb({ rows: 10, refsPerRow: 3, longChars: 1_000, addresses: true });
  const kept = await parse("b.xlsx", book, { maxTextChars: 30_141 });
  assert.ok(kept.ok, JSON.stringify(!kept.ok && kept.problem));
  refusedFor(await parse("b.xlsx", book, { maxTextChars: 30_000 }), /stopped at row 10/);
  refusedFor(await parse("b.xlsx", book, { maxRowChars: 3_000 }), /Row 1 .* 3,014 characters/);
});

test("the attack's file (one 32,767-character string in 64,000 cells, under 1 MB) is refused on a thread, in bounded time and memory", async () => {
  const book = sharedStringBomb({ rows: 64_000, refsPerRow: 1, longChars: 32_767, addresses: true });
  assert.ok(book.length < 1_000_000, `the file is ${book.length} bytes`);
  const pool = createListParserPool({ threads: 1, maxMemoryMb: 128, timeoutMs: 30_000 });
  try {
    const before = process.memoryUsage().rss;
    const result = await pool.parse({ filename: "bomb.xlsx", data: book, maxEmails: 10_000 });
    if (result.ok) assert.fail("the bomb was accepted");
    assert.equal(result.problem.code, "too_much_text", result.problem.message);
    assert.match(result.problem.message, /20,000,000 characters/);
    // Nothing of the expansion crossed back: the refusal is a message, the caller's heap untouched.
    assert.ok(process.memoryUsage().rss - before < 256 * 1024 * 1024);
  } finally {
    await pool.close();
  }
});

const rowsOfBlocks = (blocks: ReadonlyArray<{ first: number; count: number; data: Uint8Array }>) =>
  blocks.map((b) => ({ first: b.first, count: b.count, ...decodeRowBlock("deflate", b.data) }));

test("packList refuses text the database cannot store, and keeps rows as compressed blocks", async () => {
  const text = 'email,name\na@example.com,Ann\n,blank\nb@example.com,"B, ""Bob"""\n';
  const parsed = await parse("l.csv", text);
  assert.ok(parsed.ok);
  const packed = packList(parsed.list, text.length);
  assert.ok(packed.ok);
  assert.deepEqual(rowsOfBlocks(packed.list.blocks), [
    {
      first: 0,
      count: 3,
      cells: [
        ["a@example.com", "Ann"],
        ["", "blank"],
        ["b@example.com", 'B, "Bob"'],
      ],
      emails: ["a@example.com", null, "b@example.com"],
    },
  ]);
  assert.equal(packed.list.storedBytes, packed.list.blocks[0]!.data.byteLength);
  assert.deepEqual(packed.list.rowEmails, ["a@example.com", null, "b@example.com"]);
  // An xlsx cell can spell a lone surrogate as the ST_Xstring escape _xD800_.
  const refused = packList({ ...parsed.list, rows: [["a@example.com", "\uD800x"]] }, text.length);
  assert.equal(!refused.ok && refused.problem.code, "invalid_file");
  assert.match(!refused.ok ? refused.problem.message : "", /not valid Unicode/);
});

test("packList blocks rows by JSON size; the blocks together are every row, in order", async () => {
  const rows = Array.from({ length: 3_000 }, (_, i) => `u${i}@example.com,${"n".repeat(200)}`);
  const text = `email,notes\n${rows.join("\n")}\n`;
  const parsed = await parse("l.csv", text);
  assert.ok(parsed.ok);
  const packed = packList(parsed.list, text.length);
  assert.ok(packed.ok);
  const blocks = rowsOfBlocks(packed.list.blocks);
  assert.ok(blocks.length > 1, `${blocks.length} block`);
  let next = 0;
  for (const b of blocks) {
    assert.equal(b.first, next);
    assert.equal(b.cells.length, b.count);
    assert.equal(b.emails.length, b.count);
    assert.ok(JSON.stringify(b.cells).length < 300 * 1024, "a block of about 256 KB of JSON");
    next += b.count;
  }
  assert.equal(next, 3_000);
  assert.deepEqual(blocks.at(-1)!.cells.at(-1), ["u2999@example.com", "n".repeat(200)]);
  // Repeated cells cost what deflate leaves of them: a fraction of the file.
  assert.ok(
    packed.list.storedBytes < text.length / 10,
    `${packed.list.storedBytes} bytes stored of ${text.length}`,
  );
});

test("packList: rows that cost more than 20 times the file's bytes (past a 1 MiB allowance) are refused", async () => {
  // Random cells do not compress: 2,000 rows of 1 KB store about their own size, 1.4 MB.
  const rows = Array.from(
    { length: 2_000 },
    (_, i) => `u${i}@example.com,${randomBytes(768).toString("base64")}`,
  );
  const text = `email,noise\n${rows.join("\n")}\n`;
  const parsed = await parse("l.csv", text);
  assert.ok(parsed.ok);
  const fits = packList(parsed.list, text.length);
  assert.ok(fits.ok);
  const stored = fits.list.storedBytes;
  assert.ok(stored > STORED_BYTES_ALLOWANCE, `${stored} bytes stored`);
  // The same rows claimed by a file of stored / 20 bytes: exactly at the bound, kept; one byte less, refused.
  const atBound = Math.ceil(stored / STORED_BYTES_PER_FILE_BYTE);
  assert.ok(packList(parsed.list, atBound).ok);
  const refused = packList(parsed.list, atBound - 1);
  if (refused.ok) assert.fail("rows of more than 20 times the file's size were kept");
  assert.equal(refused.problem.code, "too_much_text");
  assert.match(refused.problem.message, /more than 20 times the file's size/);
});
