import { randomBytes } from "node:crypto";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isProcessAlive } from "../db/data-dir-lock.ts";

// While `serve` owns an embedded data directory, the CLI's data commands go through the
// server's loopback admin API. This file tells the CLI where that API is and how to authenticate.

const FILE = "admin.json";

export interface AdminEndpoint {
  pid: number;
  url: string;
  token: string;
}

export const newAdminToken = (): string => randomBytes(32).toString("base64url");

export async function publishAdminEndpoint(
  dataDir: string,
  endpoint: AdminEndpoint,
): Promise<() => Promise<void>> {
  const path = join(dataDir, FILE);
  await writeFile(path, JSON.stringify(endpoint), { mode: 0o600 });
  return async () => {
    await rm(path, { force: true });
  };
}

export async function findAdminEndpoint(dataDir: string): Promise<AdminEndpoint | null> {
  try {
    const endpoint = JSON.parse(await readFile(join(dataDir, FILE), "utf8")) as AdminEndpoint;
    return isProcessAlive(endpoint.pid) ? endpoint : null;
  } catch {
    return null;
  }
}

/** The loopback URL for a server bound to `host`. */
export function loopbackUrl(host: string, port: number): string {
  const wildcard = host === "0.0.0.0" || host === "::" || host === "";
  const h = wildcard ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return `http://${h}:${port}`;
}
