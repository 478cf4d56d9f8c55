// Zip defences for xlsx uploads, applied before exceljs sees a byte. An upload is at most
// MAX_UPLOAD_BYTES (10 MiB) but deflate reaches ~1:1000, and exceljs' streaming reader
// (unzipper.Parse) trusts local headers and checks neither sizes nor CRCs. So:
//  1. the central directory is read first and every declared size, the entry count and the
//     compression ratio are checked (a classic bomb is refused here, in microseconds);
//  2. entries are inflated by us, and each must inflate to exactly the size its central
//     directory entry declared: a liar (small declared size, huge stream) is cut off at
//     declared + 1 byte. The sum of declared sizes is capped, so inflated bytes are too.
import { Readable } from "node:stream";
import { createInflateRaw } from "node:zlib";

/** Limits applied to an xlsx zip before and while it is inflated. */
export interface ZipLimits {
  /** Entries in the central directory. A workbook has tens; a million empty entries is an attack. */
  maxEntries: number;
  /** Sum of declared uncompressed sizes of all entries. */
  maxTotalUncompressedBytes: number;
  /** Declared uncompressed / compressed, checked for entries of at least `ratioCheckMinBytes`. */
  maxCompressionRatio: number;
  ratioCheckMinBytes: number;
  /**
   * Declared size of sharedStrings.xml and styles.xml: unlike sheets, which are streamed and
   * stopped at the row limit, these are read whole into memory (~2–3× their XML size as objects).
   */
  maxSharedStringsBytes: number;
  maxStylesBytes: number;
}

// Sizing: the bench's 10,000-row × 11-column workbook is 0.7 MB zipped, 5.3 MB inflated (sheet
// ~8:1, sharedStrings ~5:1). A 10,000-row sheet with 50 text columns is ~25 MB of sheet XML and
// ~15 MB of shared strings. Deflate can reach ~1000:1; honest XML stays far below 100:1.
export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  maxEntries: 10_000,
  maxTotalUncompressedBytes: 200 * 1024 * 1024,
  maxCompressionRatio: 100,
  ratioCheckMinBytes: 1024 * 1024,
  maxSharedStringsBytes: 32 * 1024 * 1024,
  maxStylesBytes: 16 * 1024 * 1024,
};

/** One central-directory entry. */
export interface ZipEntry {
  name: string;
  flags: number;
  method: number;
  crc32: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

/** Why a zip was refused; turned into an `invalid_file` problem by the xlsx reader. */
export class ZipRefusal extends Error {
  override name = "ZipRefusal";
}

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CDH_SIG = 0x02014b50;
const LFH_SIG = 0x04034b50;
const U32_MAX = 0xffffffff;

const CORRUPT =
  "The workbook is damaged (its zip structure is unreadable); open it in Excel and save it again.";

function readU64(data: Buffer, offset: number): number {
  const v = data.readBigUInt64LE(offset);
  return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
}

function findEocd(data: Buffer): number {
  const lowest = Math.max(0, data.length - 22 - 0xffff);
  for (let i = data.length - 22; i >= lowest; i -= 1) {
    if (data.readUInt32LE(i) === EOCD_SIG) return i;
  }
  return -1;
}

/** Reads and checks the central directory. Throws ZipRefusal. */
export function readCentralDirectory(data: Buffer, limits: ZipLimits): ZipEntry[] {
  const eocd = findEocd(data);
  if (eocd < 0) throw new ZipRefusal(CORRUPT);
  let count = data.readUInt16LE(eocd + 10);
  let cdSize = data.readUInt32LE(eocd + 12);
  let cdOffset = data.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdSize === U32_MAX || cdOffset === U32_MAX) {
    const locator = eocd - 20;
    if (locator < 0 || data.readUInt32LE(locator) !== ZIP64_LOCATOR_SIG) throw new ZipRefusal(CORRUPT);
    const z = readU64(data, locator + 8);
    if (z + 56 > data.length || data.readUInt32LE(z) !== ZIP64_EOCD_SIG) throw new ZipRefusal(CORRUPT);
    count = readU64(data, z + 32);
    cdSize = readU64(data, z + 40);
    cdOffset = readU64(data, z + 48);
  }
  if (count > limits.maxEntries) {
    throw new ZipRefusal(
      `The workbook has ${count.toString()} parts; more than ${limits.maxEntries.toString()} is not a spreadsheet we can read.`,
    );
  }
  if (cdOffset + cdSize > data.length) throw new ZipRefusal(CORRUPT);

  const entries: ZipEntry[] = [];
  let total = 0;
  let p = cdOffset;
  for (let i = 0; i < count; i += 1) {
    if (p + 46 > data.length || data.readUInt32LE(p) !== CDH_SIG) throw new ZipRefusal(CORRUPT);
    const flags = data.readUInt16LE(p + 8);
    const nameLength = data.readUInt16LE(p + 28);
    const extraLength = data.readUInt16LE(p + 30);
    const commentLength = data.readUInt16LE(p + 32);
    if (p + 46 + nameLength + extraLength > data.length) throw new ZipRefusal(CORRUPT);
    const nameBytes = data.subarray(p + 46, p + 46 + nameLength);
    const entry: ZipEntry = {
      name: nameBytes.toString(flags & 0x800 ? "utf8" : "latin1"),
      flags,
      method: data.readUInt16LE(p + 10),
      crc32: data.readUInt32LE(p + 16),
      compressedSize: data.readUInt32LE(p + 20),
      uncompressedSize: data.readUInt32LE(p + 24),
      localHeaderOffset: data.readUInt32LE(p + 42),
    };
    applyZip64Extra(entry, data.subarray(p + 46 + nameLength, p + 46 + nameLength + extraLength));
    if (entry.flags & 0x1) {
      throw new ZipRefusal(
        "Password-protected workbooks are not supported; remove the password in Excel and upload it again.",
      );
    }
    total += entry.uncompressedSize;
    if (total > limits.maxTotalUncompressedBytes) {
      throw new ZipRefusal(
        `The workbook expands to more than ${(limits.maxTotalUncompressedBytes / 1024 / 1024).toFixed(0)} MB; ` +
          "that is far more than a 10,000-address list. Save only the sheet with the addresses, or upload a CSV.",
      );
    }
    if (
      entry.uncompressedSize >= limits.ratioCheckMinBytes &&
      entry.uncompressedSize > limits.maxCompressionRatio * Math.max(entry.compressedSize, 1)
    ) {
      throw new ZipRefusal(
        `The workbook part "${entry.name}" is compressed more than ${limits.maxCompressionRatio.toString()}:1, ` +
          "which real spreadsheets never are; it was refused as a possible zip bomb.",
      );
    }
    entries.push(entry);
    p += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

// APPNOTE 4.5.3: the zip64 extra field holds, in this order, only the fields whose 32-bit value is
// 0xFFFFFFFF.
function applyZip64Extra(entry: ZipEntry, extra: Buffer): void {
  let q = 0;
  while (q + 4 <= extra.length) {
    const id = extra.readUInt16LE(q);
    const size = extra.readUInt16LE(q + 2);
    if (id === 0x0001) {
      let r = q + 4;
      const end = q + 4 + size;
      const take = (): number => {
        if (r + 8 > end || r + 8 > extra.length) throw new ZipRefusal(CORRUPT);
        const v = readU64(extra, r);
        r += 8;
        return v;
      };
      if (entry.uncompressedSize === U32_MAX) entry.uncompressedSize = take();
      if (entry.compressedSize === U32_MAX) entry.compressedSize = take();
      if (entry.localHeaderOffset === U32_MAX) entry.localHeaderOffset = take();
      return;
    }
    q += 4 + size;
  }
}

/** The entry's compressed bytes, located through its local header. */
export function compressedBytes(data: Buffer, entry: ZipEntry): Buffer {
  const at = entry.localHeaderOffset;
  if (at + 30 > data.length || data.readUInt32LE(at) !== LFH_SIG) throw new ZipRefusal(CORRUPT);
  const start = at + 30 + data.readUInt16LE(at + 26) + data.readUInt16LE(at + 28);
  const end = start + entry.compressedSize;
  if (end > data.length) throw new ZipRefusal(CORRUPT);
  return data.subarray(start, end);
}

const CHUNK = 64 * 1024;

function* slices(buf: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, Math.min(buf.length, i + size));
}

/**
 * Inflates one entry, yielding chunks; throws ZipRefusal when the output is larger or smaller
 * than the declared size. Compressed input goes in 16 KiB at a time so one step can produce at
 * most ~16 MB before the count is checked.
 */
export async function* inflateEntry(data: Buffer, entry: ZipEntry): AsyncGenerator<Buffer> {
  const input = compressedBytes(data, entry);
  const expected = entry.uncompressedSize;
  if (entry.method === 0) {
    if (input.length !== expected) throw new ZipRefusal(CORRUPT);
    yield* slices(input, CHUNK);
    return;
  }
  if (entry.method !== 8) {
    throw new ZipRefusal(
      `The workbook uses an unsupported compression method (${entry.method.toString()}); save it again in Excel.`,
    );
  }
  const inflater = createInflateRaw({ chunkSize: CHUNK });
  const source = Readable.from(slices(input, 16 * 1024), { objectMode: false });
  source.on("error", (e) => inflater.destroy(e));
  source.pipe(inflater);
  let produced = 0;
  try {
    for await (const chunk of inflater as AsyncIterable<Buffer>) {
      produced += chunk.length;
      if (produced > expected) {
        throw new ZipRefusal(
          `The workbook part "${entry.name}" expands beyond its declared size; it was refused as a possible zip bomb.`,
        );
      }
      yield chunk;
    }
  } catch (error) {
    if (error instanceof ZipRefusal) throw error;
    throw new ZipRefusal(CORRUPT);
  } finally {
    source.destroy();
    inflater.destroy();
  }
  if (produced !== expected) throw new ZipRefusal(CORRUPT);
}

/** Inflates a small entry (workbook.xml, rels) into memory, under `maxBytes`. */
export async function inflateToBuffer(data: Buffer, entry: ZipEntry, maxBytes: number): Promise<Buffer> {
  if (entry.uncompressedSize > maxBytes) {
    throw new ZipRefusal(
      `The workbook part "${entry.name}" is unexpectedly large; save the workbook again in Excel.`,
    );
  }
  const parts: Buffer[] = [];
  for await (const chunk of inflateEntry(data, entry)) parts.push(chunk);
  return Buffer.concat(parts);
}

/** A stored (uncompressed) local file header announcing `size` bytes. */
export function storedLocalHeader(name: string, size: number, crc32: number): Buffer {
  const nameBytes = Buffer.from(name, "utf8");
  const h = Buffer.alloc(30);
  h.writeUInt32LE(LFH_SIG, 0);
  h.writeUInt16LE(20, 4);
  h.writeUInt16LE(0x0800, 6);
  h.writeUInt16LE(0, 8);
  h.writeUInt32LE(0, 10);
  h.writeUInt32LE(crc32 >>> 0, 14);
  h.writeUInt32LE(size, 18);
  h.writeUInt32LE(size, 22);
  h.writeUInt16LE(nameBytes.length, 26);
  h.writeUInt16LE(0, 28);
  return Buffer.concat([h, nameBytes]);
}

/** An empty end-of-central-directory record: tells unzipper.Parse the archive is over. */
export function emptyEocd(): Buffer {
  const b = Buffer.alloc(22);
  b.writeUInt32LE(EOCD_SIG, 0);
  return b;
}
