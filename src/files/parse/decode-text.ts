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

// Windows-1252 differs from ISO-8859-1 only in 0x80–0x9F (€, smart quotes, dashes, Š, Ž…).
// TextDecoder("windows-1252") decodes those bytes as C1 controls on Node 20.18.3+ and on Node 22
// from 22.13.0 up to 22.22.0 (nodejs/node#56542, #60888); it is right again from 22.22.1. Our
// floor (>=22.13, which ESLint needs) includes the broken releases, so the table stays until the
// floor passes the fix on every supported line. Undefined bytes (0x81, 0x8D, 0x8F, 0x90, 0x9D)
// map to C1 as the WHATWG Encoding standard does. test/unit/files/decode-text.test.ts checks all 32.
const CP1252_HIGH =
  "\u20AC\u0081\u201A\u0192\u201E\u2026\u2020\u2021\u02C6\u2030\u0160\u2039\u0152\u008D\u017D\u008F" +
  "\u0090\u2018\u2019\u201C\u201D\u2022\u2013\u2014\u02DC\u2122\u0161\u203A\u0153\u009D\u017E\u0178";

function decodeWindows1252(data: Buffer): string {
  const latin1 = data.toString("latin1");
  return latin1.replace(/[\u0080-\u009F]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]!);
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
        text = decodeWindows1252(data);
        encoding = "windows-1252";
      }
    }
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  return hasNul(text, SAMPLE_BYTES) ? { ok: false } : { ok: true, text, encoding };
}
