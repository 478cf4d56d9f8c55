// `npm run bench backup`: `mailprobe backup` of a running server whose embedded database holds
// BENCH_BACKUP_MB (1024) MB more than a fresh one, while the server answers a balance read every
// 100 ms and a ledger write every 50 ms; then `mailprobe restore` of the file. Prints the
// server's RSS growth and slowest request during the backup (bounds: ≤ 256 MB, ≤ 2 s), the
// CLI's and the restore's peak RSS, and the backup's time ÷ the time to read the same
// directory once from disk (its floor: every byte must be read). Named-only: it writes ~3 GB.
import { spawnSync } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { cliEnv, exitOf, runCli, tempDataDir } from "../test/support/child-process.ts";
import {
  fillBallast,
  memoryOf,
  runMailprobe,
  sampleRss,
  serveOn,
  trafficOn,
} from "../test/support/backup-load.ts";

const MB = Number(process.env.BENCH_BACKUP_MB ?? 1024);

/**
 * Time to read every file of `dir` but its WAL once, and to read and deflate them (`tar -cf - |
 * gzip -6`, the zip's level): the floor of a backup, which must do both for the same files (it
 * adds only the WAL written while it runs). GNU tar skips the reading when it writes to
 * /dev/null itself, hence the pipes. Warm page cache, as the backup's is.
 */
function floorsOf(dir: string): { readS: number; deflateS: number; mb: number } {
  const timed = (pipe: string): { s: number; bytes: number } => {
    const t0 = performance.now();
    const script = `tar -cf - --exclude=./postmaster.pid --exclude=./pg_wal -C "$1" . ${pipe} | wc -c`;
    const out = spawnSync("sh", ["-c", script, "sh", dir], { encoding: "utf8" });
    if (out.status !== 0) throw new Error(`tar of ${dir} exited ${out.status}: ${out.stderr}`);
    return { s: (performance.now() - t0) / 1000, bytes: Number(out.stdout.trim()) };
  };
  const read = timed("");
  return { readS: read.s, deflateS: timed("| gzip -6").s, mb: read.bytes / 1024 / 1024 };
}

const duOf = (dir: string): number =>
  Number(spawnSync("du", ["-sm", dir], { encoding: "utf8" }).stdout.split("\t")[0]);

export async function benchBackup(): Promise<void> {
  console.log(`\n== backup: a running server with ${MB} MB more than a fresh database ==`);
  const source = await tempDataDir("mailprobe-bench-backup");
  const env = cliEnv({ DATA_DIR: source });
  try {
    const user = JSON.parse(await runCli(["users", "create", "--credits", "100", "--json"], env)) as {
      user_id: string;
      api_key: string;
    };
    const filled = performance.now();
    await fillBallast(join(source, "pgdata"), MB);
    console.log(
      `filled in ${((performance.now() - filled) / 1000).toFixed(1)} s: pgdata ${duOf(join(source, "pgdata"))} MB on disk`,
    );
    const { server, base } = await serveOn(env, "serve", 300_000);
    const admin = JSON.parse(await readFile(join(source, "admin.json"), "utf8")) as {
      url: string;
      token: string;
    };
    try {
      const idleTraffic = trafficOn(base, user.api_key, admin, user.user_id);
      await delay(3_000);
      const idle = await idleTraffic.stop();
      const idleMb = (await memoryOf(server.proc.pid!)).rssMb;
      const floor = floorsOf(join(source, "pgdata"));
      const out = join(await tempDataDir("mailprobe-bench-backup-out"), "bench.backup");
      const rss = sampleRss(server.proc.pid!);
      const traffic = trafficOn(base, user.api_key, admin, user.user_id);
      const backup = await runMailprobe(["backup", "--out", out], env);
      const load = await traffic.stop();
      const peakMb = await rss.stop();
      if (backup.code !== 0) throw new Error(`backup failed: ${backup.stderr}`);
      console.log(backup.stdout.split("\n")[0]);
      console.log(
        `server RSS: idle ${idleMb.toFixed(0)} MB, peak during the backup ${peakMb.toFixed(0)} MB ` +
          `(growth ${(peakMb - idleMb).toFixed(0)} MB; bound 256)`,
      );
      console.log(
        `requests during the backup: ${load.requests} (${load.grants} ledger writes), p99 ${load.p99Ms.toFixed(0)} ms, ` +
          `slowest ${load.slowestMs.toFixed(0)} ms (bound 2000); idle: p99 ${idle.p99Ms.toFixed(0)} ms, slowest ${idle.slowestMs.toFixed(0)} ms`,
      );
      console.log(
        `backup CLI: ${(backup.ms / 1000).toFixed(1)} s, peak RSS ${backup.peakMb.toFixed(0)} MB. The directory ` +
          `but pg_wal (${floor.mb.toFixed(0)} MB) read once: ${floor.readS.toFixed(1)} s, read and deflated ` +
          `(tar | gzip -6): ${floor.deflateS.toFixed(1)} s; backup ÷ that floor: ${(backup.ms / 1000 / floor.deflateS).toFixed(2)}`,
      );
      server.proc.kill("SIGTERM");
      await exitOf(server);
      const target = join(await tempDataDir("mailprobe-bench-restore"), "restored");
      const restore = await runMailprobe(["restore", out], cliEnv({ DATA_DIR: target }));
      if (restore.code !== 0) throw new Error(`restore failed: ${restore.stderr}`);
      console.log(`${restore.stdout.trim()}; peak RSS ${restore.peakMb.toFixed(0)} MB`);
      await rm(target, { recursive: true, force: true });
      await rm(out, { force: true });
    } finally {
      if (!server.exited) {
        server.proc.kill("SIGTERM");
        await exitOf(server);
      }
    }
  } finally {
    await rm(source, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchBackup();
