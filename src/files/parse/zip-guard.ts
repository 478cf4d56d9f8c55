// Zip defences for xlsx uploads, on yauzl. An upload is at most MAX_UPLOAD_BYTES (10 MiB) but
// deflate reaches ~1:1000, so:
//  1. the central directory is read first (yauzl reads it, never the local headers' sizes) and
//     the entry count, every declared size, their sum and each entry's compression ratio are
//     checked: a classic bomb is refused here, in microseconds, before anything is inflated;
//  2. every entry must inflate to exactly the size its central-directory entry declared: a liar
//     (small declared size, huge stream) is cut off one 16 KiB inflate chunk past its declared
//     size. The sum of declared sizes is capped, and so is the sum of bytes really inflated
//     (counted per archive, whichever parts are read and however often).
// Every budget here is per FILE, never per part or per sheet: a workbook of 92 sheets gets the
// same budget as a workbook of one (the per-file sheet, row, cell and XML element budgets are in
// read-budget.ts; the wall-clock budget is below).
// yauzl's own size check (validateEntrySizes) is off only because this one names the part and
// also catches an entry that inflates to less than it declared.
import type { Readable } from "node:stream";
import yauzl from "yauzl";
import type { ListFileProblemCode } from "./problems.ts";

/** Limits applied to an xlsx zip before and while it is inflated and read. */
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
   * stopped at the row limit, these are read whole into memory (~2× their XML size as strings).
   */
  maxSharedStringsBytes: number;
  maxStylesBytes: number;
  /** Wall-clock budget for reading the whole workbook; checked after every inflated chunk. */
  maxReadMs: number;
  /** Worksheets streamed per file (sheets after the list is found are never read). */
  maxSheets: number;
  /**
   * Cells per file, all sheets together, counting the empty ones left of a filled cell: without
   * it a sheet of rows that each fill only column XFD would cost 16,384 slots a row.
   */
  maxCells: number;
  /** XML elements per file, all parts read together: saxes handles ~3 million a second. */
  maxElements: number;
}

// Sizing: the bench's 10,000-row × 11-column workbook is 0.7 MB zipped, 5.3 MB inflated (sheet
// ~8:1, sharedStrings ~5:1) and is read in ~0.2 s. A 10,000-row sheet with 50 text columns is
// ~25 MB of sheet XML and ~15 MB of shared strings. Deflate can reach ~1000:1; honest XML stays
// far below 100:1. Reading costs ~0.3 µs an XML element (12 MB/s of the densest XML, tiny
// elements; 120 MB/s of text) and 2–3 µs a text cell: 5,000,000 elements are ~1 s, 1,000,000
// cells (20,000 rows × 50 columns) ~3 s. The wall-clock budget stops whatever else costs more.
export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  maxEntries: 10_000,
  maxTotalUncompressedBytes: 200 * 1024 * 1024,
  maxCompressionRatio: 100,
  ratioCheckMinBytes: 1024 * 1024,
  maxSharedStringsBytes: 32 * 1024 * 1024,
  maxStylesBytes: 16 * 1024 * 1024,
  maxReadMs: 10_000,
  maxSheets: 100,
  maxCells: 1_000_000,
  maxElements: 5_000_000,
};

/** Why a workbook was refused; turned into a problem (`invalid_file` unless told) by the xlsx reader. */
export class ZipRefusal extends Error {
  override name = "ZipRefusal";
  constructor(
    message: string,
    readonly code: ListFileProblemCode = "invalid_file",
  ) {
    super(message);
  }
}

const CORRUPT =
  "The workbook is damaged (its zip structure is unreadable); open it in Excel and save it again.";

/** One entry of the central directory, with the sizes it declares. */
export interface ZipPart {
  name: string;
  uncompressedSize: number;
  entry: yauzl.Entry;
}

const megabytes = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

/** Throws ZipRefusal for an entry the limits refuse; adds its declared size to the running total. */
function checkEntry(entry: yauzl.Entry, limits: ZipLimits, totalBefore: number): number {
  if (entry.isEncrypted()) {
    throw new ZipRefusal(
      "Password-protected workbooks are not supported; remove the password in Excel and upload it again.",
    );
  }
  const total = totalBefore + entry.uncompressedSize;
  if (total > limits.maxTotalUncompressedBytes) {
    throw new ZipRefusal(
      `The workbook expands to more than ${megabytes(limits.maxTotalUncompressedBytes)}; ` +
        "that is far more than a 10,000-address list. Save only the sheet with the addresses, or upload a CSV.",
    );
  }
  if (
    entry.uncompressedSize >= limits.ratioCheckMinBytes &&
    entry.uncompressedSize > limits.maxCompressionRatio * Math.max(entry.compressedSize, 1)
  ) {
    throw new ZipRefusal(
      `The workbook part "${entry.fileName}" is compressed more than ${limits.maxCompressionRatio.toString()}:1, ` +
        "which real spreadsheets never are; it was refused as a possible zip bomb.",
    );
  }
  return total;
}

/** A checked archive: its parts by lower-case name, and bounded, size-checked inflation. */
export class ZipArchive {
  /** Bytes inflated so far, all parts together. */
  private inflated = 0;

  private constructor(
    private readonly zip: yauzl.ZipFile,
    private readonly byName: ReadonlyMap<string, ZipPart>,
    /** Reading stops with a ZipRefusal after this `performance.now()` time. */
    readonly deadline: number,
    private readonly limits: ZipLimits,
  ) {}

  /** Opens `data` and reads its central directory under `limits`. Throws ZipRefusal. */
  static async open(data: Buffer, limits: ZipLimits): Promise<ZipArchive> {
    const deadline = performance.now() + limits.maxReadMs;
    let zip: yauzl.ZipFile;
    try {
      zip = await yauzl.fromBufferPromise(data, { lazyEntries: true, validateEntrySizes: false });
    } catch {
      throw new ZipRefusal(CORRUPT);
    }
    if (zip.entryCount > limits.maxEntries) {
      throw new ZipRefusal(
        `The workbook has ${zip.entryCount.toString()} parts; more than ${limits.maxEntries.toString()} is not a spreadsheet we can read.`,
      );
    }
    const byName = new Map<string, ZipPart>();
    let total = 0;
    await new Promise<void>((resolve, reject) => {
      zip.on("entry", (entry: yauzl.Entry) => {
        try {
          total = checkEntry(entry, limits, total);
        } catch (error) {
          reject(error instanceof Error ? error : new ZipRefusal(CORRUPT));
          return;
        }
        const key = entry.fileName.toLowerCase();
        if (!byName.has(key)) {
          byName.set(key, { name: entry.fileName, uncompressedSize: entry.uncompressedSize, entry });
        }
        zip.readEntry();
      });
      zip.once("end", resolve);
      zip.on("error", () => reject(new ZipRefusal(CORRUPT)));
      zip.readEntry();
    });
    return new ZipArchive(zip, byName, deadline, limits);
  }

  /** The part named `name`, compared case-insensitively (as Excel does). */
  part(name: string): ZipPart | undefined {
    return this.byName.get(name.toLowerCase());
  }

  names(): IterableIterator<string> {
    return this.byName.keys();
  }

  /** Throws ZipRefusal once the read budget is spent. */
  checkDeadline(): void {
    if (performance.now() > this.deadline) {
      throw new ZipRefusal(
        `Reading the workbook took longer than ${(this.limits.maxReadMs / 1000).toString()} s, the limit for one file; ` +
          "save only the sheet with the addresses, or upload a CSV.",
      );
    }
  }

  /** Inflates one part chunk by chunk; throws ZipRefusal when it is not exactly its declared size. */
  async *inflate(part: ZipPart): AsyncGenerator<Buffer> {
    const method = part.entry.compressionMethod;
    if (method !== 0 && method !== 8) {
      throw new ZipRefusal(
        `The workbook uses an unsupported compression method (${method.toString()}); save it again in Excel.`,
      );
    }
    let stream: Readable;
    try {
      stream = await this.zip.openReadStreamPromise(part.entry);
    } catch {
      throw new ZipRefusal(CORRUPT);
    }
    const expected = part.uncompressedSize;
    let produced = 0;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        produced += chunk.length;
        this.inflated += chunk.length;
        if (produced > expected) {
          throw new ZipRefusal(
            `The workbook part "${part.name}" expands beyond its declared size; it was refused as a possible zip bomb.`,
          );
        }
        if (this.inflated > this.limits.maxTotalUncompressedBytes) {
          throw new ZipRefusal(
            `The workbook expands to more than ${megabytes(this.limits.maxTotalUncompressedBytes)}; ` +
              "that is far more than a 10,000-address list. Save only the sheet with the addresses, or upload a CSV.",
          );
        }
        this.checkDeadline();
        yield chunk;
      }
    } catch (error) {
      if (error instanceof ZipRefusal) throw error;
      throw new ZipRefusal(CORRUPT);
    } finally {
      stream.destroy();
    }
    if (produced !== expected) throw new ZipRefusal(CORRUPT);
  }

  /** Inflates a small part (rels, workbook.xml) into memory, refusing one declared over `maxBytes`. */
  async read(part: ZipPart, maxBytes: number): Promise<Buffer> {
    if (part.uncompressedSize > maxBytes) {
      throw new ZipRefusal(
        `The workbook part "${part.name}" is unexpectedly large; save the workbook again in Excel.`,
      );
    }
    const chunks: Buffer[] = [];
    for await (const chunk of this.inflate(part)) chunks.push(chunk);
    return Buffer.concat(chunks);
  }

  close(): void {
    this.zip.close();
  }
}
