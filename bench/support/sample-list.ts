// Sample contact lists for the file benchmarks: 10,000 rows of an address plus ten other
// columns, as csv or xlsx, and the small measuring helpers both benchmarks use.
import type { Readable } from "node:stream";
import { streamedXlsxOf } from "../../test/unit/files/xlsx-book.ts";

/** The ten columns beside the address. */
export const EXTRA = [
  "first_name",
  "last_name",
  "company",
  "title",
  "phone",
  "city",
  "country",
  "signup",
  "score",
  "notes",
];

export const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
export const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

export function sampleRows(n: number): string[][] {
  return Array.from({ length: n }, (_, i) => [
    `person.${String(i)}@example${String(i % 50)}.com`,
    `First${String(i)}`,
    `Last${String(i)}`,
    `Company ${String(i % 700)}`,
    i % 3 === 0 ? "Head of Sales" : "Engineer",
    `+1 555 ${String(100_000 + i)}`,
    ["Paris", "Zürich", "São Paulo", "Kraków"][i % 4]!,
    ["FR", "CH", "BR", "PL"][i % 4]!,
    `2024-0${String((i % 9) + 1)}-1${String(i % 10)}`,
    String((i * 37) % 1000),
    i % 10 === 0 ? 'Met at "Expo", follow up' : "",
  ]);
}

export async function collect(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream)
    parts.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(parts);
}

/** The list as Excel saves it: shared strings (test/unit/files/xlsx-book.ts builds it). */
export function makeXlsx(header: string[], rows: string[][]): Promise<Buffer> {
  return streamedXlsxOf([header, ...rows], { sheetName: "Contacts", useSharedStrings: true });
}
