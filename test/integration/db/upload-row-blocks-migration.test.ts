// Migration 0021 moves the rows of uploads made before it (one jsonb row each) into uncompressed
// blocks of up to 1,000 rows, counts their bytes as the upload's stored_bytes and drops the old
// table: nothing of an upload is lost, and a download reads the old rows as it reads new ones.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadMigrations, migrate } from "../../../src/db/migrate.ts";
import { decodeRowBlock, type RowBlockEncoding } from "../../../src/files/index.ts";
import { openEmptyDatabase } from "../../support/test-db.ts";

const USER = "5f0c1d6e-0000-4000-8000-000000000021";
const TASK = "5f0c1d6e-0000-4000-8000-0000000000a1";
const UPLOAD = "5f0c1d6e-0000-4000-8000-0000000000b1";

test("0021: 2,500 stored rows become blocks of 1,000, 1,000 and 500 holding every cell and address in order", async () => {
  const all = await loadMigrations();
  const { db, close } = await openEmptyDatabase("m21");
  try {
    await migrate(
      db,
      all.filter((m) => m.version < 21),
    );
    await db.query("insert into users (id, balance, webhook_secret) values ($1, 0, 'whsec_x')", [USER]);
    await db.query(
      "insert into tasks (id, user_id, source, email_count, domain_count) values ($1, $2, 'api_key', 1250, 1)",
      [TASK, USER],
    );
    await db.query(
      `insert into uploads (id, user_id, task_id, filename, format, email_count, submitted_count, header, email_column, column_count)
       values ($1, $2, $3, 'old.csv', 'csv', 1250, 1250, '["email","note"]', 0, 2)`,
      [UPLOAD, USER, TASK],
    );
    const expected = Array.from({ length: 2_500 }, (_, i): [string[], string | null] =>
      i % 2 === 0 ? [[`u${i}@old.test`, `note "${i}", ünï`], `u${i}@old.test`] : [["", `blank ${i}`], null],
    );
    // Inserted out of order: the blocks follow row_index, not insertion order.
    for (const i of [...expected.keys()].reverse()) {
      await db.query(
        "insert into upload_rows (upload_id, row_index, cells, email) values ($1, $2, $3::jsonb, $4)",
        [UPLOAD, i, JSON.stringify(expected[i]![0]), expected[i]![1]],
      );
    }

    assert.deepEqual(
      await migrate(
        db,
        all.filter((m) => m.version === 21),
      ),
      [21],
    );

    const { rows } = await db.query<{
      first_index: number;
      row_count: number;
      encoding: RowBlockEncoding;
      data: Uint8Array;
    }>(
      "select first_index, row_count, encoding, data from upload_row_blocks where upload_id = $1 order by first_index",
      [UPLOAD],
    );
    assert.deepEqual(
      rows.map((r) => [r.first_index, r.row_count, r.encoding]),
      [
        [0, 1_000, "json"],
        [1_000, 1_000, "json"],
        [2_000, 500, "json"],
      ],
    );
    const got: Array<[string[], string | null]> = [];
    for (const r of rows) {
      const { cells, emails } = decodeRowBlock(r.encoding, r.data);
      cells.forEach((c, i) => got.push([c, emails[i] ?? null]));
    }
    assert.deepEqual(got, expected);
    const stored = await db.query<{ n: number }>("select stored_bytes as n from uploads where id = $1", [
      UPLOAD,
    ]);
    assert.equal(
      Number(stored.rows[0]!.n),
      rows.reduce((n, r) => n + r.data.byteLength, 0),
    );
    const old = await db.query<{ n: number }>(
      "select count(*) as n from information_schema.tables where table_name = 'upload_rows' and table_schema = current_schema()",
    );
    assert.equal(Number(old.rows[0]!.n), 0, "upload_rows is dropped");
  } finally {
    await close();
  }
});
