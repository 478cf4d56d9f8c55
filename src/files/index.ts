// The public API of files/: list parsing for uploads and result writers for downloads. Pure
// library on Buffers and streams: no HTTP, no database (DESIGN §4).
export {
  parseListFile,
  type ParseListInput,
  type ParseListResult,
  type ParsedList,
} from "./parse/parse-list-file.ts";
export { packList, type PackedList } from "./parse/pack-list.ts";
export { decodeRowBlock, type RowBlockEncoding } from "./row-block.ts";
export { createListParserPool, type ListParser } from "./parse/parse-pool.ts";
export { DEFAULT_MAX_COLUMNS, DEFAULT_MAX_TEXT_CHARS } from "./parse/table.ts";
export { DEFAULT_ZIP_LIMITS } from "./parse/zip-guard.ts";
export { addressAsWritten, isFormulaText, neutraliseFormula, type ExportCell } from "./export/cells.ts";
export { writeCsv, writeTxt } from "./export/write-text.ts";
export { writeXlsx } from "./export/write-xlsx.ts";
export { writeExport } from "./export/write-export.ts";
export { patchWorkbook, patchWorkbookOrNull } from "./export/patch-workbook.ts";
export {
  EXPORT_FORMATS,
  RESULT_COLUMN_PREFIX,
  RESULT_COLUMNS,
  TXT_RESULT_COLUMNS,
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
} from "./export/download.ts";
