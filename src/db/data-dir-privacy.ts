import { chmod, lstat, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";

// DATA_DIR holds the embedded database (its WAL carries webhook secrets and every user's data)
// and the generated secrets: nobody but its owner may read or write any of it.
// - The directories are 0700, as PostgreSQL keeps its PGDATA: another account cannot even reach
//   a file inside, whatever the file's own mode.
// - PGlite's file system layer creates its files 0666 whatever the umask, so after the engine has
//   opened (and created what a fresh database needs) its files are closed to others as well.
// - What an earlier version (or a copy, or an unzip) left open is closed at start, and the
//   process's umask is narrowed to 077 for everything else it writes there.

/** What start-up found and fixed in DATA_DIR. */
export interface DataDirPrivacy {
  /** Files and directories that were readable or writable by others, now the owner's only. */
  fixed: string[];
  /** Entries whose mode could not be changed (not ours: another account owns them). */
  refused: string[];
  /** The walk stopped at MAX_ENTRIES: a data directory is never that big, but the bound holds. */
  truncated: boolean;
}

// A fresh embedded database is about 1,100 files; a bound so a stray mount cannot stall start-up.
const MAX_ENTRIES = 100_000;
// Group and other bits.
const OPEN_TO_OTHERS = 0o077;

/**
 * Makes `dir` (created if missing) and everything in it its owner's only (directories 0700,
 * files 0600 at most), and narrows this process's umask to 077 so everything it creates from now
 * on is too. Symbolic links are not followed.
 */
export async function makeDataDirPrivate(dir: string): Promise<DataDirPrivacy> {
  process.umask(0o077);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const found: DataDirPrivacy = { fixed: [], refused: [], truncated: false };
  const queue = [dir];
  let seen = 0;
  while (queue.length > 0) {
    const path = queue.pop()!;
    if (++seen > MAX_ENTRIES) {
      found.truncated = true;
      break;
    }
    const stat = await lstat(path).catch(() => null);
    if (stat === null || stat.isSymbolicLink()) continue;
    if (stat.isDirectory()) for (const name of await readdir(path)) queue.push(join(path, name));
    if ((stat.mode & OPEN_TO_OTHERS) === 0) continue;
    try {
      await chmod(path, stat.mode & 0o700);
      found.fixed.push(path);
    } catch {
      found.refused.push(path);
    }
  }
  return found;
}
