// The dashboard's first sheet of a workbook (web/src/lib/sheet-choice.ts): the server's rule on
// the previewed rows, so the sheet shown is the sheet the server would read, and a tie is left
// to the user.
import assert from "node:assert/strict";
import { test } from "node:test";
import { firstSheetOf, sheetOptionLabel, sheetViewOf } from "../../../web/src/lib/sheet-choice.ts";

const view = (name: string, rows: string[][], hidden = false) => sheetViewOf({ name, hidden, rows });

test("the sheet whose email column is named wins over a stray address on a notes sheet", () => {
  const notes = view("Read me", [["Questions: help@crm.example"], ["Exported 2024-12-01"]]);
  const contacts = view("Contacts", [
    ["Name", "Email"],
    ["Ann", "ann@example.com"],
    ["Ben", "ben@example.com"],
  ]);
  assert.equal(contacts.addresses, 2);
  assert.deepEqual(firstSheetOf([notes, contacts]), {
    name: "Contacts",
    reason: "its column “Email” names the addresses",
  });
  assert.equal(sheetOptionLabel(contacts), "Contacts: 2 addresses in the first rows");
  assert.equal(sheetOptionLabel(view("Empty", [])), "Empty: no addresses in the first rows");
});

test("two named lists: none is chosen, both are named; a hidden one does not compete", () => {
  const a = view("Leads", [["Email"], ["a@example.com"]]);
  const b = view("Old", [["E-mail"], ["b@example.com"]]);
  assert.deepEqual(firstSheetOf([a, b]), { name: null, reason: "addresses are on 2 sheets, “Leads”, “Old”" });
  const hidden = view("Lookup", [["Email"], ["c@example.com"]], true);
  assert.equal(firstSheetOf([a, hidden]).name, "Leads");
});

test("one sheet of bare addresses is the list; a workbook without any shows its first sheet", () => {
  const bare = view("Sheet2", [["a@example.com"], ["b@example.com"]]);
  assert.deepEqual(firstSheetOf([view("Cover", [["Our customers"]]), bare]), {
    name: "Sheet2",
    reason: "it is the only sheet with addresses",
  });
  assert.equal(firstSheetOf([view("A", [["x"]]), view("B", [["y"]])]).name, "A");
});
