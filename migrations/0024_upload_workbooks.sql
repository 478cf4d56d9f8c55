-- An xlsx upload keeps its original file: the xlsx download is the user's own workbook with the
-- result columns appended to the list's sheet (files/export/patch-workbook.ts, docs/api.md, "An xlsx upload comes back as your workbook"),
-- so typed cells, number formats, formulas and the other sheets come back as they were. Its
-- bytes count in the upload's stored_bytes, against the user's storage budget.
create table upload_workbooks (
  upload_id  uuid primary key references uploads (id),
  sheet_name text not null,
  data       bytea not null
);
