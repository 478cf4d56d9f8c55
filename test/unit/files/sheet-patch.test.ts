// The worksheet splice of an xlsx download (src/files/export/sheet-patch.ts): on hand-written
// SpreadsheetML, byte for byte, including what other writers do (prefixed elements, rows and
// cells without `r`, column ranges to XFD, styled empty cells, self-closing rows).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RowRemap } from "../../../src/files/export/cell-refs.ts";
import { patchSheet, surveySheet, type RowFate } from "../../../src/files/export/sheet-patch.ts";

const keep = (...append: Array<string | number | boolean>): RowFate => ({ keep: true, append });
const DROP: RowFate = { keep: false };

function patch(xml: string, rows: RowFate[], filtered = false, widths = [10, 12]): string {
  const survey = surveySheet(xml);
  return patchSheet(
    xml,
    { rows, firstResultColumn: Math.max(2, survey.lastValueColumn) + 1, resultWidths: widths, filtered },
    survey,
  );
}

describe("RowRemap", () => {
  const remap = new RowRemap([1, 2, 4, 7]);
  test("a range shrinks to the kept rows inside it, renumbered", () => {
    assert.equal(remap.range("A2:C5"), "A2:C3");
    assert.equal(remap.range("B7"), "B4");
    assert.equal(remap.range("A5:A6"), null);
    assert.equal(remap.range("$A$1:$B$1048576"), "A1:B4");
    assert.equal(remap.range("A:C"), "A:C");
    assert.equal(remap.rowOf(4), 3);
    assert.equal(remap.rowOf(5), null);
  });
  test("an sqref keeps its ranges that still hold a row", () => {
    assert.equal(remap.sqref("A3 B4:B7  C5"), "B3:B4");
    assert.equal(remap.sqref("A3 A5"), null);
  });
});

test("surveySheet: row numbers, the last column with a value, the last column a merge reaches", () => {
  const survey = surveySheet(
    '<worksheet><sheetData><row r="2"><c r="A2"><v>1</v></c><c r="D2" s="1"/></row><row><c r="B3" t="s"><v>0</v></c></row>' +
      '</sheetData><mergeCells count="1"><mergeCell ref="B3:F3"/></mergeCells></worksheet>',
  );
  assert.deepEqual(survey, { rowNumbers: [2, 3], lastValueColumn: 2, lastMergedColumn: 6 });
});

describe("patchSheet", () => {
  test("appends result cells, sizes their columns, keeps every other byte", () => {
    const xml =
      '<?xml version="1.0"?>\n<worksheet xmlns="m"><dimension ref="A1:Z3"/>' +
      '<cols><col min="1" max="16384" width="9" style="2"/></cols><sheetData>' +
      '<row r="1" spans="1:26"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="Z1" s="4"/></row>' +
      '<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2" s="3"><f>1+1</f><v>2</v></c></row>' +
      '<row r="3" customHeight="1"/>' +
      '</sheetData><mergeCells count="1"><mergeCell ref="A3:B3"/></mergeCells></worksheet>';
    const out = patch(xml, [keep("email", "status"), keep("a@b.test", "valid"), keep()]);
    assert.equal(
      out,
      '<?xml version="1.0"?>\n<worksheet xmlns="m"><dimension ref="A1:D3"/>' +
        '<cols><col min="1" max="2" width="9" style="2"/><col min="3" max="3" width="10.0" customWidth="1"/>' +
        '<col min="4" max="4" width="12.0" customWidth="1"/></cols><sheetData>' +
        '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c>' +
        '<c r="C1" t="inlineStr"><is><t xml:space="preserve">email</t></is></c>' +
        '<c r="D1" t="inlineStr"><is><t xml:space="preserve">status</t></is></c></row>' +
        '<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2" s="3"><f>1+1</f><v>2</v></c>' +
        '<c r="C2" t="inlineStr"><is><t xml:space="preserve">a@b.test</t></is></c>' +
        '<c r="D2" t="inlineStr"><is><t xml:space="preserve">valid</t></is></c></row>' +
        '<row r="3" customHeight="1"/>' +
        '</sheetData><mergeCells count="1"><mergeCell ref="A3:B3"/></mergeCells></worksheet>',
    );
  });

  test("prefixed elements, rows and cells without r, no <cols>: cells in the writer's prefix", () => {
    const xml =
      '<x:worksheet xmlns:x="m"><x:sheetData><x:row><x:c t="inlineStr"><x:is><x:t>a@b.test</x:t></x:is></x:c>' +
      "<x:c><x:v>7</x:v></x:c></x:row></x:sheetData></x:worksheet>";
    const out = patch(xml, [keep(42, true)], false, [8, 8]);
    assert.equal(
      out,
      '<x:worksheet xmlns:x="m"><x:cols><x:col min="3" max="3" width="8.0" customWidth="1"/>' +
        '<x:col min="4" max="4" width="8.0" customWidth="1"/></x:cols><x:sheetData><x:row r="1">' +
        '<x:c t="inlineStr"><x:is><x:t>a@b.test</x:t></x:is></x:c><x:c><x:v>7</x:v></x:c>' +
        '<x:c r="C1"><x:v>42</x:v></x:c><x:c r="D1" t="b"><x:v>1</x:v></x:c></x:row></x:sheetData></x:worksheet>',
    );
  });

  test("filtered: rows out, the rest renumbered, references follow, formulas keep their value", () => {
    const xml =
      '<worksheet><sheetViews><sheetView><selection activeCell="A3" sqref="A3"/></sheetView></sheetViews><sheetData>' +
      '<row r="1"><c r="A1"><v>1</v></c></row>' +
      '<row r="2"><c r="A2"><v>2</v></c></row>' +
      '<row r="3"><c r="A3"><f t="shared" ref="A3:A4" si="0">A2+1</f><v>3</v></c></row>' +
      '<row r="4"><c r="A4"><f t="shared" si="0"/><v>4</v></c></row>' +
      "</sheetData>" +
      '<autoFilter ref="A1:A4"/><mergeCells count="2"><mergeCell ref="A2:B2"/><mergeCell ref="A3:B4"/></mergeCells>' +
      '<conditionalFormatting sqref="A2"><cfRule type="expression" priority="1"><formula>A2&gt;1</formula></cfRule></conditionalFormatting>' +
      '<hyperlinks><hyperlink ref="A4" r:id="rId1"/></hyperlinks><rowBreaks count="1"><brk id="2"/></rowBreaks></worksheet>';
    const out = patch(xml, [keep("h"), DROP, keep("x"), keep("y")], true, [5]);
    assert.equal(
      out,
      '<worksheet><sheetViews><sheetView></sheetView></sheetViews><cols><col min="3" max="3" width="5.0" customWidth="1"/></cols><sheetData>' +
        '<row r="1"><c r="A1"><v>1</v></c><c r="C1" t="inlineStr"><is><t xml:space="preserve">h</t></is></c></row>' +
        '<row r="2"><c r="A2"><v>3</v></c><c r="C2" t="inlineStr"><is><t xml:space="preserve">x</t></is></c></row>' +
        '<row r="3"><c r="A3"><v>4</v></c><c r="C3" t="inlineStr"><is><t xml:space="preserve">y</t></is></c></row>' +
        "</sheetData>" +
        '<autoFilter ref="A1:A3"/><mergeCells count="1"><mergeCell ref="A2:B3"/></mergeCells>' +
        '<hyperlinks><hyperlink ref="A3" r:id="rId1"/></hyperlinks></worksheet>',
    );
  });

  test("filtered: a wrapper none of whose children is left goes with them", () => {
    const xml =
      '<worksheet><sheetData><row r="1"><c r="A1"><v>1</v></c></row><row r="2"><c r="A2"><v>2</v></c></row></sheetData>' +
      '<mergeCells count="1"><mergeCell ref="A2:B2"/></mergeCells><pageMargins left="0.7"/></worksheet>';
    const out = patch(xml, [keep(), DROP], true, [5]);
    assert.ok(!out.includes("mergeCell"), out);
    assert.ok(out.includes('<pageMargins left="0.7"/>'), out);
    assert.ok(!out.includes('r="2"'), out);
  });
});
