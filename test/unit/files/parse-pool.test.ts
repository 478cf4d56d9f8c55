// The worker-thread parser gives the same answer as the in-process one, and its caps answer as a
// refused file instead of failing the request or the process.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { createListParserPool } from "../../../src/files/index.ts";
import { packList } from "../../../src/files/parse/pack-list.ts";
import { parseListFile, type ParseListInput } from "../../../src/files/parse/parse-list-file.ts";
import { xlsxOf } from "./helpers.ts";

const pool = createListParserPool({ threads: 1, maxMemoryMb: 128, timeoutMs: 30_000 });
after(() => pool.close());

/** What the thread answers: the in-process parse, packed for the upload. */
async function inProcess(input: ParseListInput) {
  const parsed = await parseListFile(input);
  return parsed.ok ? packList(parsed.list, input.data.byteLength) : parsed;
}

test("a csv and an xlsx parse on a thread exactly as in process", async () => {
  const csv = {
    filename: "list.csv",
    data: Buffer.from("name;email\nAnn;ann@example.com\nBob;BOB@Example.com\n;not-an-address\n"),
    maxEmails: 10_000,
  };
  const xlsx = {
    filename: "book.xlsx",
    data: await xlsxOf((wb) => wb.addWorksheet("List").addRows([["Email"], ["kim@example.com"]])),
    emailColumn: "Email",
    maxEmails: 10_000,
  };
  for (const input of [csv, xlsx]) {
    const onThread = await pool.parse(input);
    assert.ok(onThread.ok, JSON.stringify(onThread));
    assert.deepEqual(onThread, await inProcess(input));
  }
});

test("a refusal comes back as the same value", async () => {
  const input = { filename: "list.txt", data: Buffer.from("no address here\n"), maxEmails: 10 };
  const result = await pool.parse(input);
  assert.deepEqual(result, await inProcess(input));
  assert.equal(!result.ok && result.problem.code, "no_valid_emails");
});

test("over the wall-time cap → too_complex naming the cap; the pool goes on", async () => {
  const slow = createListParserPool({ threads: 1, maxMemoryMb: 128, timeoutMs: 5 });
  try {
    const rows = Array.from({ length: 19_000 }, (_, i) => `user${i}@example.com`).join("\n");
    const result = await slow.parse({ filename: "big.txt", data: Buffer.from(rows), maxEmails: 10_000 });
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.problem.code, "too_complex");
    assert.match(!result.ok ? result.problem.message : "", /took longer than 5 ms to read/);
  } finally {
    await slow.close();
  }
  const after = await pool.parse({ filename: "a.txt", data: Buffer.from("a@example.com\n"), maxEmails: 10 });
  assert.ok(after.ok);
});
