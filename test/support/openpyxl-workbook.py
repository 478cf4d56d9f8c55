"""A second xlsx writer and reader for the workbook round-trip suite (openpyxl, Debian's
python3-openpyxl). `make OUT` writes a workbook as a CRM export might be: a notes sheet first,
the list on "Contacts" with typed and formatted cells, a summary sheet with a formula.
`compare ORIGINAL DOWNLOAD SHEET KEPT` prints, as JSON, every difference between the
original's cells (value, type, number format) and the download's, sheet by sheet; KEPT is a JSON
list of the list sheet's row numbers the download holds (null: all of them, in place)."""
import json
import sys
from datetime import date, datetime

from openpyxl import Workbook, load_workbook

CONTACTS = [
    ["Email", "Name", "Amount", "Joined", "Meeting", "Active", "Phone", "Big", "Share", "Double"],
    ["Alice@ACME.test", "Alice", 42.5, date(2024, 12, 1), datetime(2024, 12, 1, 9, 30), True, 447946095800, 1e21, 0.125, "=C2*2"],
    ["bob@acme.test", "Bob", 7, date(2023, 1, 31), datetime(2023, 1, 31, 17, 5, 59), False, 15556330, 0.1, 0.5, "=C3*2"],
    [None] * 10,
    ["Nobody@Acme.Test", "Nobody", -3.25, None, None, None, None, None, None, "=C5*2"],
    ["Kim@Catch.TEST", "Kim", 1234567.891, date(2020, 2, 29), None, True, None, None, 1, None],
    ["not an address", "Note", 0, None, None, None, None, None, None, None],
    ["carol@acme.test", "Carol", 12, date(1999, 12, 31), datetime(1999, 12, 31, 23, 59), False, None, None, None, "=C8*2"],
]
FORMATS = {"C": "#,##0.00", "D": "yyyy-mm-dd", "E": "yyyy-mm-dd hh:mm", "G": "0", "H": "0.00E+00", "I": "0.0%"}
WIDTHS = {"A": 28.5, "B": 14, "E": 19}


def make(path):
    wb = Workbook()
    notes = wb.active
    notes.title = "Read me"
    notes["A1"] = "Exported from the CRM on 2024-12-01"
    notes["A2"] = 42
    notes["B2"] = "rows"
    ws = wb.create_sheet("Contacts")
    for row in CONTACTS:
        ws.append(row)
    for letter, fmt in FORMATS.items():
        for cell in ws[letter][1:]:
            cell.number_format = fmt
    for letter, width in WIDTHS.items():
        ws.column_dimensions[letter].width = width
    # A note merged past the list's last column: the result columns start after the merge.
    ws["K2"] = "called twice"
    ws.merge_cells("K2:L2")
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = "A1:J8"
    summary = wb.create_sheet("Summary")
    summary["A1"] = "Total"
    summary["B1"] = "=SUM(Contacts!C2:C8)"
    summary["B1"].number_format = "#,##0.00"
    wb.save(path)


def cell_state(cell):
    value = cell.value
    if isinstance(value, (datetime, date)):
        value = value.isoformat()
    return [value, cell.data_type, cell.number_format]


def compare(original_path, download_path, sheet_name, kept_json):
    kept = json.loads(kept_json)
    original = load_workbook(original_path)
    download = load_workbook(download_path)
    report = {
        "sheets": download.sheetnames,
        "original_sheets": original.sheetnames,
        "differences": [],
        "cells": 0,
        "formulas_left_out": 0,
    }
    for ws in original.worksheets:
        if ws.title not in download.sheetnames:
            continue
        out = download[ws.title]
        is_list = ws.title == sheet_name
        rows = kept if (is_list and kept is not None) else list(range(1, ws.max_row + 1))
        for new_row, old_row in enumerate(rows, start=1):
            target_row = new_row if (is_list and kept is not None) else old_row
            for col in range(1, ws.max_column + 1):
                before = ws.cell(row=old_row, column=col)
                after = out.cell(row=target_row, column=col)
                report["cells"] += 1
                if is_list and kept is not None and before.data_type == "f":
                    # A filtered download keeps a formula's last computed value only.
                    report["formulas_left_out"] += 1
                    if after.data_type == "f":
                        report["differences"].append([ws.title, before.coordinate, "formula kept after rows moved"])
                    continue
                if cell_state(before) != cell_state(after):
                    report["differences"].append(
                        [ws.title, before.coordinate, cell_state(before), after.coordinate, cell_state(after)]
                    )
        for letter, dim in ws.column_dimensions.items():
            if dim.width and out.column_dimensions[letter].width != dim.width:
                report["differences"].append([ws.title, letter, "width", dim.width, out.column_dimensions[letter].width])
        if is_list:
            report["list_rows"] = out.max_row
            report["added_header"] = [out.cell(row=1, column=c).value for c in range(ws.max_column + 1, out.max_column + 1)]
            report["added_widths"] = [
                out.column_dimensions[out.cell(row=1, column=c).column_letter].width
                for c in range(ws.max_column + 1, out.max_column + 1)
            ]
            report["first_column"] = [out.cell(row=r, column=1).value for r in range(1, out.max_row + 1)]
    report["differences"] = report["differences"][:20]
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        compare(*sys.argv[2:6])
