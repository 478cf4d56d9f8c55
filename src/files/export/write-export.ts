import type { Readable } from "node:stream";
import type { ExportInput } from "./cells.ts";
import type { ExportFormat } from "./download.ts";
import { writeCsv, writeTxt } from "./write-text.ts";
import { writeXlsx } from "./write-xlsx.ts";

/** The writer of one download format: the API's download and the CLI's results file alike. */
export function writeExport(format: ExportFormat, input: ExportInput): Readable {
  switch (format) {
    case "csv":
      return writeCsv(input);
    case "txt":
      return writeTxt(input);
    case "xlsx":
      return writeXlsx(input);
  }
}
