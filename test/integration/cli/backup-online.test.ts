// `mailprobe backup` of a running server whose database is big: the copy
// streams from disk between pg_backup_start and pg_backup_stop, so the server's memory stays
// flat (it once grew from 593 MB to 4,662 MB on a 1 GB database) and requests go on meanwhile
// (they once waited 29-37 s). Also: a backup whose reader dies ends on the server (no backup
// left running, no replication slot holding WAL), a second one at once is refused, and what the
// backup holds restores to exactly the ledger as it stood at the backup's end.
// The 1 GB figures are the bench's (`npm run bench backup`); this suite runs a smaller copy.
import assert from "node:assert/strict";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { PGlite } from "@electric-sql/pglite";
import { isDatabaseUnavailable } from "../../../src/db/client.ts";
import { embeddedEngineOf, openPglite } from "../../../src/db/pglite.ts";
import { onlineBackups } from "../../../src/db/pglite-online-backup.ts";
import { cliEnv, exitOf, runCli, tempDataDir, type MailprobeChild } from "../../support/child-process.ts";
import {
  fillBallast,
  memoryOf,
  runMailprobe,
  sampleRss,
  serveOn,
  trafficOn,
} from "../../support/backup-load.ts";

const BALLAST_MB = 128;
/** The server's growth allowed for a 1 GB database; here an eighth of that database. */
const MAX_SERVER_GROWTH_MB = 256;
/** The CLI deflates a stream: its whole peak, node itself included. */
const MAX_CLI_PEAK_MB = 256;
/**
 * Restore streams the same way, then opens the database to replay its WAL and count what it
 * holds: PGlite's instance (its WebAssembly heap, 128 MB of shared buffers) is ~200 MB of this,
 * the same for any database (the bench restores 1 GB).
 */
const MAX_RESTORE_PEAK_MB = 512;

const skip = process.env.TEST_DATABASE_URL
  ? "the embedded engine runs on the PGlite pass"
  : process.platform !== "linux"
    ? "reads memory from /proc (Linux only)"
    : false;

interface Admin {
  url: string;
  token: string;
}

describe("backup of a running server with a big database", { skip }, () => {
  let source: string;
  let env: NodeJS.ProcessEnv;
  let server: MailprobeChild;
  let base: string;
  let admin: Admin;
  let user: { user_id: string; api_key: string };
  let ballastRows: number;

  before(async () => {
    source = await tempDataDir("mailprobe-backup-online");
    env = cliEnv({ DATA_DIR: source });
    user = JSON.parse(await runCli(["users", "create", "--credits", "100", "--json"], env)) as typeof user;
    ({ rows: ballastRows } = await fillBallast(join(source, "pgdata"), BALLAST_MB));
    ({ server, base } = await serveOn(env));
    admin = JSON.parse(await readFile(join(source, "admin.json"), "utf8")) as Admin;
  });
  after(async () => {
    if (!server.exited) {
      server.proc.kill("SIGTERM");
      await exitOf(server);
    }
  });

  const slotsOf = async (): Promise<string[]> => readdir(join(source, "pgdata", "pg_replslot"));

  test("a reader that dies ends the backup on the server: no slot left, and the next backup may start", async (t) => {
    const out = join(await tempDataDir("mailprobe-backup-out"), "killed.backup");
    const partial = `${out}.partial-`;
    let sawSlot = false;
    const killed = await runMailprobe(["backup", "--out", out], env, async () => {
      sawSlot ||= (await slotsOf()).length > 0;
      const names = await readdir(join(out, ".."));
      const file = names.find((n) => join(out, "..", n).startsWith(partial));
      return file !== undefined && (await stat(join(out, "..", file))).size > 1024 * 1024;
    });
    assert.equal(killed.signal, "SIGKILL", `killed mid-copy: ${killed.stdout}${killed.stderr}`);
    assert.ok(sawSlot, "the backup held a replication slot while it ran");
    for (let i = 0; i < 100 && (await slotsOf()).length > 0; i++) await delay(100);
    assert.deepEqual(await slotsOf(), [], "the slot is dropped once the reader is gone");

    // One at a time: the second is refused while the first runs, then the first completes.
    const first = runMailprobe(["backup", "--out", join(out, "..", "first.backup")], env);
    for (let i = 0; i < 500 && (await slotsOf()).length === 0; i++) await delay(20);
    const second = await runMailprobe(["backup", "--out", join(out, "..", "second.backup")], env);
    assert.equal(second.code, 1);
    assert.match(
      second.stderr,
      /backup through the running server failed: a backup of this database is already running/,
    );
    const done = await first;
    assert.equal(done.code, 0, done.stderr);
    t.diagnostic(done.stdout.split("\n")[0]!);
  });

  test(`backup while the server serves reads and ledger writes: server grows < ${MAX_SERVER_GROWTH_MB} MB, the restore is the ledger at the backup's end`, async (t) => {
    const idle = (await memoryOf(server.proc.pid!)).rssMb;
    const dir = await tempDataDir("mailprobe-backup-out");
    const file = join(dir, "online.backup");
    const rss = sampleRss(server.proc.pid!);
    const traffic = trafficOn(base, user.api_key, admin, user.user_id);
    await delay(500);
    const grantsBefore = traffic.grants();
    const backup = await runMailprobe(["backup", "--out", file], env);
    const load = await traffic.stop();
    const peak = await rss.stop();
    assert.equal(backup.code, 0, backup.stderr);
    t.diagnostic(
      `${backup.stdout.split("\n")[0]} | server RSS idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB ` +
        `(+${(peak - idle).toFixed(0)}); CLI peak ${backup.peakMb.toFixed(0)} MB; ${load.requests} requests ` +
        `meanwhile (${load.grants} grants), p99 ${load.p99Ms.toFixed(0)} ms, slowest ${load.slowestMs.toFixed(0)} ms`,
    );
    assert.ok(peak - idle < MAX_SERVER_GROWTH_MB, `server grew ${(peak - idle).toFixed(0)} MB`);
    assert.ok(backup.peakMb < MAX_CLI_PEAK_MB, `the CLI peaked at ${backup.peakMb.toFixed(0)} MB`);
    assert.deepEqual(await slotsOf(), [], "no slot after the backup");
    assert.ok(load.grants > 0);

    // The restore holds every grant answered before the backup began and none written after it.
    const ledgerNow = async (): Promise<number> => {
      const res = await fetch(`${base}/api/v1/credits/transactions?limit=1`, {
        headers: { authorization: `Bearer ${user.api_key}` },
      });
      return ((await res.json()) as { total: number }).total;
    };
    const total = await ledgerNow();
    await runCli(["credits", "grant", user.user_id, "5", "--reason", "after the backup"], env);
    server.proc.kill("SIGTERM");
    assert.equal((await exitOf(server)).code, 0, server.output);

    const target = join(await tempDataDir("mailprobe-restore-online"), "restored");
    const restore = await runMailprobe(["restore", file], cliEnv({ DATA_DIR: target }));
    assert.equal(restore.code, 0, restore.stderr);
    t.diagnostic(`${restore.stdout.trim()} | restore peak ${restore.peakMb.toFixed(0)} MB`);
    assert.ok(restore.peakMb < MAX_RESTORE_PEAK_MB, `restore peaked at ${restore.peakMb.toFixed(0)} MB`);
    const entries = Number(/: 1 users, (\d+) ledger entries/.exec(restore.stdout)?.[1]);
    // The user's first row (users create --credits) and every grant answered before the backup
    // began are in it; the grant written after it is not.
    assert.ok(
      entries >= 1 + grantsBefore && entries <= total,
      `${entries} entries: ${grantsBefore} grants before, ${total} in all`,
    );

    const pg = await PGlite.create(join(target, "pgdata"));
    try {
      const { rows } = await pg.query<{ rows: number; balance: number; last: number; sum: number }>(
        `select (select count(*)::int from ballast) as rows,
                (select balance from users where id = $1) as balance,
                (select balance_after from credit_transactions where user_id = $1 order by seq desc limit 1) as last,
                (select sum(amount)::int from credit_transactions where user_id = $1) as sum`,
        [user.user_id],
      );
      const { rows: ballast, balance, last, sum } = rows[0]!;
      assert.equal(ballast, ballastRows, "every row of the big table");
      // A point in time: the balance is the last ledger row's, and the ledger sums to it.
      assert.equal(balance, last);
      assert.equal(sum, balance);
      assert.deepEqual(await readdir(join(target, "pgdata", "pg_replslot")), []);
    } finally {
      await pg.close();
    }
  });

  test("SIGTERM during a backup ends it at once: the server exits 0 with the slot dropped, the CLI fails and writes no file", async () => {
    const { server: again } = await serveOn(env, "serve again");
    const dir = await tempDataDir("mailprobe-backup-out");
    const out = join(dir, "stopped.backup");
    let signalled = false;
    const backup = await runMailprobe(["backup", "--out", out], env, async () => {
      // Mid-copy: the tar is flowing into the CLI's partial file.
      const partial = (await readdir(dir)).find((n) => n.startsWith("stopped.backup.partial-"));
      if (!signalled && partial !== undefined && (await stat(join(dir, partial))).size > 0) {
        signalled = true;
        again.proc.kill("SIGTERM");
      }
      return false;
    });
    assert.ok(signalled, "the backup was running when the server was told to stop");
    assert.deepEqual(await exitOf(again), { code: 0, signal: null }, again.output);
    assert.equal(backup.code, 1);
    assert.match(backup.stderr, /backup through the running server failed: the server stopped sending it/);
    assert.deepEqual(await slotsOf(), []);
    assert.deepEqual(await readdir(dir), [], "no file, no partial file");
  });
});

test(
  "a slot a process left by dying during a backup is dropped when the directory is next opened",
  { skip },
  async () => {
    const dir = join(await tempDataDir("mailprobe-backup-slot"), "pgdata");
    const pg = await PGlite.create(dir);
    // As the backup leaves it when the process is killed between its start and its end.
    await pg.query("select pg_create_physical_replication_slot('mailprobe_backup', true, false)");
    await pg.close();
    assert.deepEqual(await readdir(join(dir, "pg_replslot")), ["mailprobe_backup"]);
    const db = await openPglite(dir);
    try {
      assert.deepEqual((await db.query("select slot_name from pg_replication_slots")).rows, []);
    } finally {
      await db.close();
    }
  },
);

test(
  "a stop that comes while a backup is starting ends it too: the start fails as unavailable, no backup or slot is left",
  { skip },
  async () => {
    const dir = join(await tempDataDir("mailprobe-backup-start"), "pgdata");
    const db = await openPglite(dir);
    try {
      const engine = embeddedEngineOf(db)!;
      const backups = onlineBackups(engine.session, engine.dataDir);
      const starting = backups.start();
      await backups.abort();
      await assert.rejects(starting, (e: Error) => {
        assert.ok(isDatabaseUnavailable(e), String(e));
        assert.match(e.message, /the server is stopping/);
        return true;
      });
      await assert.rejects(backups.start(), /the server is stopping/);
      assert.deepEqual((await db.query("select slot_name from pg_replication_slots")).rows, []);
      // The session holds no backup: a new one starts and stops.
      await db.query("select pg_backup_start('check', true)");
      await db.query("select pg_backup_stop(false)");
    } finally {
      await db.close();
    }
  },
);
