// A throwaway PostgreSQL cluster of a test's own (initdb + pg_ctl on a free port, data under
// /tmp), for tests that restart or stop the database: the shared server of TEST_DATABASE_URL is
// never touched. initdb refuses to run as root, so as root every command runs as `postgres`.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chmod, chown, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface PrivateCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust authentication). */
  url: string;
  port: number;
  /** `pg_ctl restart -m fast`: every connection is terminated, the server comes back at once. */
  restart(): Promise<void>;
  /** `pg_ctl stop -m fast` (start() brings it back). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the cluster (immediate) and deletes its directory. */
  destroy(): Promise<void>;
  /** The server's log (for failure messages). */
  logFile: string;
}

/** The directory holding initdb and pg_ctl, or null when PostgreSQL's server binaries are absent. */
export function findPgBin(): string | null {
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (existsSync(join(root, v, "bin", "initdb"))) return join(root, v, "bin");
  }
  try {
    const initdb = execFileSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).trim();
    return initdb ? initdb.replace(/\/initdb$/, "") : null;
  } catch {
    return null;
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Starts a fresh cluster; null (with the reason) when this machine cannot run one. */
export async function startPrivateCluster(): Promise<PrivateCluster | { skip: string }> {
  const bin = findPgBin();
  if (!bin) return { skip: "initdb not found (install postgresql to run this test)" };
  const isRoot = process.getuid?.() === 0;
  let owner: { uid: number; gid: number } | null = null;
  if (isRoot) {
    try {
      owner = {
        uid: Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim()),
        gid: Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim()),
      };
    } catch {
      return { skip: "running as root without a `postgres` user to run initdb as" };
    }
  }
  const dir = await mkdtemp(join(tmpdir(), "mailprobe-pg-"));
  const data = join(dir, "data");
  const logFile = join(dir, "server.log");
  if (owner) {
    await chown(dir, owner.uid, owner.gid);
    await chmod(dir, 0o700);
  }
  const as = (cmd: string, args: string[]) =>
    isRoot ? run("runuser", ["-u", "postgres", "--", join(bin, cmd), ...args]) : run(join(bin, cmd), args);
  const port = await freePort();
  const pgCtl = (...args: string[]) => as("pg_ctl", ["-D", data, "-l", logFile, "-w", "-t", "60", ...args]);
  await as("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"]);
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c synchronous_commit=off`;
  await pgCtl("-o", options, "start");
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    logFile,
    // pg_ctl restart reuses the options of the running server (postmaster.opts).
    restart: async () => void (await pgCtl("-m", "fast", "restart")),
    stop: async () => void (await pgCtl("-m", "fast", "stop")),
    start: async () => void (await pgCtl("-o", options, "start")),
    async destroy() {
      await pgCtl("-m", "immediate", "stop").catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
