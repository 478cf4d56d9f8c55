// The public API of files/: list parsing for uploads and result writers for downloads. Pure
// library on Buffers and streams: no HTTP, no database (DESIGN §4).
export {
  parseListFile,
  type ParseListInput,
  type ParseListResult,
  type ParsedList,
} from "./parse/parse-list-file.ts";
export { packList, type PackedList, type PackListResult, type RowBlock } from "./parse/pack-list.ts";
export { decodeRowBlock, type RowBlockEncoding, type RowBlockRows } from "./row-block.ts";
export { createListParserPool, type ListParser, type ListParserOptions } from "./parse/parse-pool.ts";
export type { ListFileProblem, ListFileProblemCode } from "./parse/problems.ts";
export type { ListEntry, SkippedCounts } from "./parse/table.ts";
export {
  DEFAULT_MAX_COLUMNS,
  DEFAULT_MAX_ROW_CHARS,
  DEFAULT_MAX_TEXT_CHARS,
  isEmailHeaderName,
} from "./parse/table.ts";
export type { ListFormat } from "./parse/sniff.ts";
export type { TextEncodingName } from "./parse/decode-text.ts";
export type { Delimiter } from "./parse/delimiter.ts";
export { DEFAULT_ZIP_LIMITS, type ZipLimits } from "./parse/zip-guard.ts";
export {
  addressAsWritten,
  isFormulaText,
  neutraliseFormula,
  type ExportCell,
  type ExportInput,
} from "./export/cells.ts";
export { writeCsv, writeTxt, type CsvExportOptions } from "./export/write-text.ts";
export { writeXlsx } from "./export/write-xlsx.ts";
export { writeExport } from "./export/write-export.ts";
export {
  patchWorkbook,
  patchWorkbookOrNull,
  WorkbookMismatch,
  type WorkbookPatchInput,
} from "./export/patch-workbook.ts";
export {
  EXPORT_FORMATS,
  RESULT_COLUMN_PREFIX,
  RESULT_COLUMNS,
  TXT_RESULT_COLUMNS,
  asciiFilename,
  buildResultHeader,
  contentDisposition,
  contentTypeFor,
  downloadFilename,
  filledWidth,
  joinResultRow,
  resultColumnNames,
  resultFilename,
  rfc5987Value,
  type ExportFormat,
  type ResultColumn,
} from "./export/download.ts";
