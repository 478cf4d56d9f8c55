// What the bytes are, independent of what the file name claims. Users rename files; a spreadsheet
// renamed .csv must be refused with a message that says what it really is.

/** A list format, from the file name's extension. */
export type ListFormat = "txt" | "csv" | "xlsx";

export function formatFromFilename(filename: string): ListFormat | null {
  const match = /\.([A-Za-z0-9]+)\s*$/.exec(filename);
  const ext = match?.[1]?.toLowerCase();
  return ext === "txt" || ext === "csv" || ext === "xlsx" ? ext : null;
}

/** Kinds of content recognised by their first bytes. */
export type ContentKind = "zip" | "cfb" | "pdf" | "gzip" | "image" | "other";

const startsWith = (data: Buffer, magic: readonly number[]): boolean =>
  data.length >= magic.length && magic.every((b, i) => data[i] === b);

export function sniffContent(data: Buffer): ContentKind {
  // Local file header, or the end-of-central-directory record of an empty archive.
  if (startsWith(data, [0x50, 0x4b, 0x03, 0x04]) || startsWith(data, [0x50, 0x4b, 0x05, 0x06])) return "zip";
  // OLE2 compound file: legacy .xls, and also every password-protected .xlsx (MS-OFFCRYPTO §2.3.4.1).
  if (startsWith(data, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1])) return "cfb";
  if (startsWith(data, [0x25, 0x50, 0x44, 0x46, 0x2d])) return "pdf";
  if (startsWith(data, [0x1f, 0x8b])) return "gzip";
  if (startsWith(data, [0x89, 0x50, 0x4e, 0x47]) || startsWith(data, [0xff, 0xd8, 0xff])) return "image";
  return "other";
}

/** True when a compound file is an encrypted OOXML package (it holds an "EncryptedPackage" stream). */
export function isEncryptedOoxml(data: Buffer): boolean {
  return data.includes(Buffer.from("EncryptedPackage", "utf16le"));
}

/** Human name of a recognised binary kind, for messages. */
export function describeKind(kind: Exclude<ContentKind, "other">): string {
  switch (kind) {
    case "zip":
      return "an Excel workbook (.xlsx) or another zip archive";
    case "cfb":
      return "an old Excel .xls workbook or a password-protected file";
    case "pdf":
      return "a PDF document";
    case "gzip":
      return "a gzip archive";
    case "image":
      return "an image";
  }
}
