import { open, readFile, rm } from "node:fs/promises";
import { join } from "node:path";

// PGlite keeps the whole database in one process's memory and flushes it to DATA_DIR; a second
// process opening the same directory would overwrite the first's writes. This lock file makes
// that impossible and tells the CLI whether a server owns the directory right now.

/** The lock file's name in DATA_DIR. */
export const LOCK_FILE = "mailprobe.lock";

class DataDirBusyError extends Error {
  override name = "DataDirBusyError";
  constructor(readonly ownerPid: number) {
    super(`data directory is in use by process ${ownerPid}`);
  }
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The pid holding the lock, or null when nobody (alive) holds it. */
export async function dataDirOwner(dataDir: string): Promise<number | null> {
  try {
    const pid = Number((await readFile(join(dataDir, LOCK_FILE), "utf8")).trim());
    return Number.isInteger(pid) && pid > 0 && isProcessAlive(pid) && pid !== process.pid ? pid : null;
  } catch {
    return null;
  }
}

/** Takes the lock (removing a stale one left by a dead process); returns its release function. */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, "wx", 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return async () => {
        await rm(path, { force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const owner = await dataDirOwner(dataDir);
      if (owner !== null) throw new DataDirBusyError(owner);
      await rm(path, { force: true });
    }
  }
  throw new Error(`could not lock ${path}`);
}
