// An upload's stored original rows, read and rewritten through the blocks they are kept in
// (files/row-block.ts, upload_row_blocks).
import type { Database } from "../../src/db/client.ts";
import { decodeRowBlock, type RowBlockEncoding } from "../../src/files/index.ts";

interface BlockRow {
  first_index: number;
  encoding: RowBlockEncoding;
  data: Uint8Array;
}

async function blocksOf(db: Database, uploadId: string): Promise<BlockRow[]> {
  const { rows } = await db.query<BlockRow>(
    "select first_index, encoding, data from upload_row_blocks where upload_id = $1 order by first_index",
    [uploadId],
  );
  return rows;
}

/** Every stored row in order: [cells, job address or null]. */
export async function storedRowsOf(
  db: Database,
  uploadId: string,
): Promise<Array<[string[], string | null]>> {
  const out: Array<[string[], string | null]> = [];
  for (const block of await blocksOf(db, uploadId)) {
    const { cells, emails } = decodeRowBlock(block.encoding, block.data);
    cells.forEach((c, i) => out.push([c, emails[i] ?? null]));
  }
  return out;
}

/**
 * Replaces the cells of row `index`, rewriting its block in the uncompressed `json` encoding of
 * rows stored before migration 0021: a test of what an older upload holds, read the old way.
 */
export async function rewriteStoredRow(
  db: Database,
  uploadId: string,
  index: number,
  cells: string[],
): Promise<void> {
  const blocks = await blocksOf(db, uploadId);
  const block = blocks.findLast((b) => b.first_index <= index);
  if (!block) throw new Error(`upload ${uploadId} has no row ${String(index)}`);
  const rows = decodeRowBlock(block.encoding, block.data);
  rows.cells[index - block.first_index] = cells;
  await db.query(
    "update upload_row_blocks set encoding = 'json', data = $3 where upload_id = $1 and first_index = $2",
    [uploadId, block.first_index, Buffer.from(JSON.stringify(rows), "utf8")],
  );
}
