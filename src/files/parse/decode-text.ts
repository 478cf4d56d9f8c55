// Text decoding for csv/txt uploads. Order: BOM → UTF-16 by NUL pattern → strict UTF-8 →
// Windows-1252. Excel on Windows saves "CSV" in the ANSI code page (1252 in western locales) and
// "Unicode text" as UTF-16LE with BOM; everything else we see is UTF-8.

/** Encoding a text upload was decoded with. */
export type TextEncodingName = "utf-8" | "utf-16le" | "utf-16be" | "windows-1252";

export type DecodeResult = { ok: true; text: string; encoding: TextEncodingName } | { ok: false };

const SAMPLE_BYTES = 1024;

function decodeUtf16(data: Buffer, bigEndian: boolean): string {
  const even = data.subarray(0, data.length - (data.length % 2));
  const bytes = bigEndian ? Buffer.from(even).swap16() : even;
  return new TextDecoder("utf-16le").decode(bytes);
}

/** UTF-16 without a BOM: ASCII-range text has a NUL in every other byte. */
function utf16ByNulPattern(data: Buffer): "utf-16le" | "utf-16be" | null {
  const pairs = Math.floor(Math.min(data.length, SAMPLE_BYTES) / 2);
  if (pairs < 2) return null;
  let evenNul = 0;
  let oddNul = 0;
  for (let i = 0; i < pairs; i += 1) {
    if (data[2 * i] === 0) evenNul += 1;
    if (data[2 * i + 1] === 0) oddNul += 1;
  }
  if (oddNul >= pairs * 0.3 && evenNul <= pairs * 0.05) return "utf-16le";
  if (evenNul >= pairs * 0.3 && oddNul <= pairs * 0.05) return "utf-16be";
  return null;
}

const hasNul = (s: string, limit: number): boolean => s.slice(0, limit).includes("\u0000");

/** Decodes a text upload; `ok: false` when it looks binary (NUL bytes outside UTF-16). */
export function decodeText(data: Buffer): DecodeResult {
  let encoding: TextEncodingName;
  let text: string;
  if (data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf) {
    encoding = "utf-8";
    text = new TextDecoder("utf-8").decode(data.subarray(3));
  } else if (data[0] === 0xff && data[1] === 0xfe) {
    encoding = "utf-16le";
    text = decodeUtf16(data.subarray(2), false);
  } else if (data[0] === 0xfe && data[1] === 0xff) {
    encoding = "utf-16be";
    text = decodeUtf16(data.subarray(2), true);
  } else {
    const utf16 = utf16ByNulPattern(data);
    if (utf16) {
      encoding = utf16;
      text = decodeUtf16(data, utf16 === "utf-16be");
    } else {
      if (data.subarray(0, SAMPLE_BYTES).includes(0)) return { ok: false };
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(data);
        encoding = "utf-8";
      } catch {
        text = new TextDecoder("windows-1252").decode(data);
        encoding = "windows-1252";
      }
    }
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  return hasNul(text, SAMPLE_BYTES) ? { ok: false } : { ok: true, text, encoding };
}
