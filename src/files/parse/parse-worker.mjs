// Entry of the list-parsing worker threads (parse-pool.ts). Plain JS so that Node loads it
// without a TypeScript loader; it registers tsx for the parser's sources (bin/mailprobe.js does
// so in the main thread only, and Node's own type stripping cannot read them). Under
// `node --import tsx` (the tests) the loader is inherited and this second registration is a
// no-op in effect: the first hook to see a .ts file compiles it.
import { register } from "tsx/esm/api";

register();
const { parseListFile } = await import("./parse-list-file.ts");
const { packList } = await import("./pack-list.ts");

/**
 * Structured clone turns a Buffer into a Uint8Array; the parser reads Buffers. The list is packed
 * here (pack-list.ts), so only bounded, per-row strings cross back to the server's thread.
 */
export default async function parse(input) {
  const { data } = input;
  const parsed = await parseListFile({
    ...input,
    data: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
  });
  return parsed.ok ? packList(parsed.list) : parsed;
}
