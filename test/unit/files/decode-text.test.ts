import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeText } from "../../../src/files/parse/decode-text.ts";

// WHATWG Encoding standard, index-windows-1252.txt: the code point of bytes 0x80–0x9F.
// The five bytes Windows-1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) stay C1 controls.
const WHATWG_0x80_0x9F = [
  0x20ac, 0x0081, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152,
  0x008d, 0x017d, 0x008f, 0x0090, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122,
  0x0161, 0x203a, 0x0153, 0x009d, 0x017e, 0x0178,
];

const windows1252 = (bytes: Buffer): string => {
  const decoded = decodeText(bytes);
  assert.ok(decoded.ok);
  assert.equal(decoded.encoding, "windows-1252");
  return decoded.text;
};

void test("windows-1252: every byte 0x80–0x9F maps per the WHATWG table (0x80 → €, 0x81 → U+0081, 0x82 → ‚ …)", () => {
  // 0x80–0x9F alone is not valid UTF-8, so the decoder falls back to Windows-1252.
  const bytes = Buffer.from(WHATWG_0x80_0x9F.map((_, i) => 0x80 + i));
  const text = windows1252(bytes);
  assert.deepEqual(
    [...text].map((c) => c.codePointAt(0)),
    WHATWG_0x80_0x9F,
  );
});

void test("windows-1252: ASCII and 0xA0–0xFF are ISO-8859-1", () => {
  const bytes = Buffer.from([0x41, 0x3b, 0x40, ...Array.from({ length: 0x60 }, (_, i) => 0xa0 + i)]);
  const text = windows1252(bytes);
  assert.equal(text, "A;@" + String.fromCharCode(...Array.from({ length: 0x60 }, (_, i) => 0xa0 + i)));
});

void test("windows-1252: a typical Excel 'CSV' line with smart quotes, an em dash and a euro sign", () => {
  const bytes = Buffer.concat([
    Buffer.from("Ren", "latin1"),
    Buffer.from([0xe9, 0x3b, 0x93]),
    Buffer.from("Caf", "latin1"),
    Buffer.from([0xe9, 0x94, 0x3b, 0x97, 0x3b, 0x80, 0x35]),
  ]);
  assert.equal(windows1252(bytes), "René;“Café”;—;€5");
});

void test("the runtime's own TextDecoder('windows-1252') (diagnostic: the table stays while supported releases get it wrong)", (t) => {
  const bytes = Uint8Array.from(WHATWG_0x80_0x9F.map((_, i) => 0x80 + i));
  const native = [...new TextDecoder("windows-1252").decode(bytes)].map((c) => c.codePointAt(0));
  const right = JSON.stringify(native) === JSON.stringify(WHATWG_0x80_0x9F);
  t.diagnostic(
    `${process.version}: TextDecoder("windows-1252") maps 0x80–0x9F ${right ? "correctly" : "as C1 controls"}`,
  );
});
