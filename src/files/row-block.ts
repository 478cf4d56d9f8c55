// How an upload's original rows are stored: in blocks of consecutive rows, each one zlib-deflated
// JSON object `{"cells": [[…], …], "emails": [address | null, …]}` (upload_row_blocks, migration
// 0021). A row per database row cost ~4 bytes per cell of jsonb plus ~100 bytes per row of tuple
// and index, whatever the file: a 28.6 KB workbook of repeated shared strings stored 40 MB. A
// deflated block costs about what the file's own compression did (the repeats a workbook shares
// are repeats deflate finds), and the bytes cross threads and reach the database as one buffer.
import { deflateSync, inflateSync } from "node:zlib";

/** How a block's bytes are encoded: `deflate` (written today), `json` (rows stored before 0021). */
export type RowBlockEncoding = "deflate" | "json";

/** The rows of one block: cells and the job address of each (null: the row is skipped). */
export interface RowBlockRows {
  cells: string[][];
  emails: Array<string | null>;
}

/**
 * Level 6 (zlib's default): on 10 MB of csv rows it takes ~60 ms on the parsing thread and stores
 * a tenth of what level 1 leaves of repetitive cells. The zlib wrapper's checksum makes a
 * damaged block fail to decode instead of returning other cells.
 */
const LEVEL = 6;

/** `rowsJson`: the JSON texts of the rows' cell arrays, in order. */
export function encodeRowBlock(
  rowsJson: readonly string[],
  emails: ReadonlyArray<string | null>,
): Uint8Array {
  const json = `{"cells":[${rowsJson.join(",")}],"emails":${JSON.stringify(emails)}}`;
  // A copy of its own: a small Buffer may be a view of Node's shared 8 KB pool, and structured
  // clone (the result crosses back from the parsing thread) would copy the whole pool with it.
  return new Uint8Array(deflateSync(json, { level: LEVEL }));
}

/** The rows of a stored block; throws on a block that is not what its encoding says. */
export function decodeRowBlock(encoding: RowBlockEncoding, data: Uint8Array): RowBlockRows {
  const bytes =
    encoding === "deflate" ? inflateSync(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const parsed = JSON.parse(bytes.toString("utf8")) as RowBlockRows;
  if (
    !Array.isArray(parsed.cells) ||
    !Array.isArray(parsed.emails) ||
    parsed.cells.length !== parsed.emails.length
  )
    throw new Error("an upload row block that is not {cells, emails} of one length");
  return parsed;
}
