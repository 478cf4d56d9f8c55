import { readFileSync } from "node:fs";

/**
 * The soft limit on open files of this process (`ulimit -n`), from /proc on Linux; null where it
 * cannot be read. Node raises its soft limit to the hard one at start, so this is what it can use.
 */
export function openFileLimit(): number | null {
  try {
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    if (!match || match[1] === "unlimited") return null;
    return Number(match[1]);
  } catch {
    return null;
  }
}

/**
 * MAX_CONNECTIONS when unset: the open-file limit less a quarter of it (at least 256, at most
 * half), which stays for the database pool, SMTP sessions, webhook deliveries, files and threads;
 * 0 (no cap) where the limit is unknown or unlimited. 20,000 → 15,000; 1,024 → 768.
 */
export function defaultMaxConnections(fileLimit: number | null): number {
  if (fileLimit === null) return 0;
  const kept = Math.min(Math.max(256, Math.ceil(fileLimit / 4)), Math.floor(fileLimit / 2));
  return Math.max(1, fileLimit - kept);
}
