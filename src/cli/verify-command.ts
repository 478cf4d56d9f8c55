import { engineOptionsFrom, guardPorts } from "../app/engine-options.ts";
import type { Config } from "../config/index.ts";
import { resultJson } from "../db/verification-record.ts";
import {
  cellsInOrder,
  createEngine,
  columnsNamed,
  resultCells,
  type VerificationResult,
} from "../verify/index.ts";

// The terminal table shows the fields that explain a verdict; --json has them all.
const TABLE_FIELDS = columnsNamed([
  "email",
  "status",
  "unknown_reason",
  "host_name",
  "server_type",
  "is_catchall",
  "needs_physical_verify",
]);

const COLUMNS = TABLE_FIELDS.map((f) => f.name);

const row = (r: VerificationResult): string[] => cellsInOrder(resultCells(r), TABLE_FIELDS).map(String);

/** Pads columns to a plain-text table. */
export function formatTable(results: VerificationResult[]): string {
  const rows = [COLUMNS.map(String), ...results.map(row)];
  const widths = COLUMNS.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

export const toJson = resultJson;

/**
 * `mailprobe verify ADDRESS…`: runs the engine locally, no server or database. Addresses of one
 * domain share one SMTP session, as in batch verification.
 */
export async function verifyAddresses(
  config: Readonly<Config>,
  addresses: string[],
): Promise<VerificationResult[]> {
  const engine = createEngine(engineOptionsFrom(config.verify), guardPorts);
  try {
    const byDomain = new Map<string, number[]>();
    addresses.forEach((a, i) => {
      const domain = a
        .slice(a.lastIndexOf("@") + 1)
        .trim()
        .toLowerCase();
      byDomain.set(domain, [...(byDomain.get(domain) ?? []), i]);
    });
    const results: VerificationResult[] = new Array<VerificationResult>(addresses.length);
    await Promise.all(
      [...byDomain].map(async ([domain, idx]) => {
        const group = await engine.verifyGroup(
          domain,
          idx.map((i) => addresses[i]!),
          {
            signal: AbortSignal.timeout(config.verify.verifyTimeoutMs * 4),
          },
        );
        group.forEach((r, k) => (results[idx[k]!] = r));
      }),
    );
    return results;
  } finally {
    await engine.close();
  }
}
