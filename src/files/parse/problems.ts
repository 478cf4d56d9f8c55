// Expected refusals of an uploaded list are values, not exceptions (STYLE habit 2). The upload
// route maps every problem to 400 VALIDATION_ERROR with `details: [{ field, reason: message }]`.

/** Machine code of a refused list file. */
export type ListFileProblemCode =
  | "unsupported_format"
  | "content_mismatch"
  | "column_not_supported"
  | "sheet_not_supported"
  | "sheet_not_found"
  | "ambiguous_sheet"
  | "invalid_file"
  | "column_not_found"
  | "no_valid_emails"
  | "too_many_emails"
  | "too_many_rows"
  | "too_many_columns"
  | "too_much_text"
  | "too_complex";

/** Why a list file was refused: a code, a message telling the user what to do, the form field. */
export interface ListFileProblem {
  code: ListFileProblemCode;
  message: string;
  field: "file" | "email_column" | "sheet";
}

export const fileProblem = (code: ListFileProblemCode, message: string): ListFileProblem => ({
  code,
  message,
  field: "file",
});

export const columnProblem = (code: ListFileProblemCode, message: string): ListFileProblem => ({
  code,
  message,
  field: "email_column",
});

export const sheetProblem = (code: ListFileProblemCode, message: string): ListFileProblem => ({
  code,
  message,
  field: "sheet",
});

/** "10,000" — numbers in messages are for people. */
export const formatCount = (n: number): string => n.toLocaleString("en-US");
