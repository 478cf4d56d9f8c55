// The task of the list-parsing worker threads (parse-pool.ts). Compiled, dist/ loads this module
// as the thread's entry; from the sources, parse-worker.mjs registers tsx first and re-exports it.
import { packList, type PackListResult } from "./pack-list.ts";
import { parseListFile, type ParseListInput } from "./parse-list-file.ts";

/**
 * Structured clone turns a Buffer into a Uint8Array; the parser reads Buffers. The list is packed
 * here (pack-list.ts), so only bounded, per-row strings cross back to the server's thread.
 */
export default async function parse(input: ParseListInput): Promise<PackListResult> {
  const { data } = input;
  const parsed = await parseListFile({
    ...input,
    data: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
  });
  return parsed.ok ? packList(parsed.list, data.byteLength) : parsed;
}
