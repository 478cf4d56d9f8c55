// The DATA_DIR free-space guard at its edges, with the statfs source injected: free space exactly
// at the threshold is enough, one byte less is refused; recovery, an unreadable directory (fail
// open), overlapping samples, DATA_DIR_MIN_FREE_MB's default and validation.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ConfigError, loadConfig } from "../../../src/config/index.ts";
import { AppError } from "../../../src/lib/app-error.ts";
import {
  createDiskSpaceGuard,
  DISK_SPACE_RETRY_AFTER_SECONDS,
  noDiskSpaceGuard,
  type DiskSpaceEvent,
  type FreeSpaceReading,
} from "../../../src/observability/disk-space.ts";

const MIB = 1024 * 1024;

/** A statfs source whose free bytes the test sets (bsize 1, so bavail is the byte count). */
function source(initialFreeBytes: number) {
  let free: number | Error = initialFreeBytes;
  let calls = 0;
  return {
    set(value: number | Error) {
      free = value;
    },
    get calls() {
      return calls;
    },
    statfs: async (): Promise<FreeSpaceReading> => {
      calls++;
      if (free instanceof Error) throw free;
      return { bavail: free, bsize: 1 };
    },
  };
}

function guardOf(freeBytes: number, minFreeMb = 256) {
  const disk = source(freeBytes);
  const events: DiskSpaceEvent[] = [];
  const guard = createDiskSpaceGuard({
    dir: "/srv/mailprobe",
    minFreeMb,
    statfs: disk.statfs,
    onChange: (e) => events.push(e),
  });
  return { guard, disk, events };
}

test("free space exactly at DATA_DIR_MIN_FREE_MB: writable", async () => {
  const { guard, events } = guardOf(256 * MIB);
  const status = await guard.sample();
  assert.deepEqual(status, { freeBytes: 256 * MIB, minFreeBytes: 256 * MIB, isLow: false });
  assert.equal(guard.refusal(), null);
  assert.doesNotThrow(() => guard.assertWritable());
  assert.deepEqual(events, []);
});

test("one byte below: refused with 503 SERVICE_UNAVAILABLE, Retry-After and a message naming DATA_DIR and the threshold", async () => {
  const { guard, events } = guardOf(256 * MIB - 1);
  await guard.sample();
  assert.equal(guard.status().isLow, true);
  assert.throws(
    () => guard.assertWritable(),
    (e: unknown) => {
      assert.ok(e instanceof AppError);
      assert.equal(e.code, "SERVICE_UNAVAILABLE");
      assert.deepEqual(e.options.headers, { "retry-after": String(DISK_SPACE_RETRY_AFTER_SECONDS) });
      assert.match(e.message, /DATA_DIR\) has 255 MB free, below DATA_DIR_MIN_FREE_MB \(256 MB\)/);
      // The path stays in the server's log: clients are not told where the server keeps its data.
      assert.doesNotMatch(e.message, /\/srv\/mailprobe/);
      return true;
    },
  );
  assert.deepEqual(
    events.map((e) => e.kind),
    ["low"],
  );
});

test("space comes back: writable again, one event each way, none while nothing changes", async () => {
  const { guard, disk, events } = guardOf(10 * MIB);
  await guard.sample();
  await guard.sample();
  assert.ok(guard.refusal());
  disk.set(300 * MIB);
  await guard.sample();
  await guard.sample();
  assert.equal(guard.refusal(), null);
  assert.deepEqual(
    events.map((e) => e.kind),
    ["low", "recovered"],
  );
});

test("requests read the cached sample: no statfs per check, one per sample", async () => {
  const { guard, disk } = guardOf(10 * MIB);
  await guard.sample();
  for (let i = 0; i < 1000; i++) assert.ok(guard.refusal());
  assert.equal(disk.calls, 1);
  // Samples asked for while one is in flight share it.
  await Promise.all([guard.sample(), guard.sample(), guard.sample()]);
  assert.equal(disk.calls, 2);
});

test("an unreadable directory fails open (writable, free space unknown) and is reported once", async () => {
  const { guard, disk, events } = guardOf(10 * MIB);
  await guard.sample();
  assert.ok(guard.refusal());
  disk.set(Object.assign(new Error("statfs: ENOSYS"), { code: "ENOSYS" }));
  await guard.sample();
  await guard.sample();
  assert.deepEqual(guard.status(), { freeBytes: null, minFreeBytes: 256 * MIB, isLow: false });
  assert.equal(guard.refusal(), null);
  assert.deepEqual(
    events.map((e) => e.kind),
    ["low", "unreadable"],
  );
});

test("DATA_DIR_MIN_FREE_MB=0 turns the guard off, even with nothing free", async () => {
  const { guard } = guardOf(0, 0);
  await guard.sample();
  assert.equal(guard.refusal(), null);
});

test("bigint readings (fs.statfs with bigint: true) are understood", async () => {
  const guard = createDiskSpaceGuard({
    dir: "/x",
    minFreeMb: 1,
    statfs: async () => ({ bavail: 255n, bsize: 4096n }),
  });
  assert.equal((await guard.sample()).freeBytes, 255 * 4096);
  assert.ok(guard.refusal());
});

test("the real fs.statfs reads a directory; start() samples at once and stop() ends the timer", async () => {
  const dir = await mkdtemp(join(tmpdir(), "mailprobe-disk-"));
  try {
    const guard = createDiskSpaceGuard({ dir, minFreeMb: 0, intervalMs: 10 });
    await guard.start();
    const free = guard.status().freeBytes;
    assert.ok(typeof free === "number" && free > 0, `free bytes: ${String(free)}`);
    guard.stop();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the no-op guard (PostgreSQL, in-process tests) never refuses and watches nothing", async () => {
  assert.equal(noDiskSpaceGuard.dir, null);
  await noDiskSpaceGuard.start();
  assert.equal(noDiskSpaceGuard.refusal(), null);
  assert.doesNotThrow(() => noDiskSpaceGuard.assertWritable());
});

test("DATA_DIR_MIN_FREE_MB: 256 by default, 0 allowed, bad values stop the start naming it", () => {
  const load = (env: Record<string, string>) => loadConfig(env, { hostname: () => "mx1.example.com" });
  assert.equal(load({}).dataDirMinFreeMb, 256);
  assert.equal(load({ DATA_DIR_MIN_FREE_MB: "0" }).dataDirMinFreeMb, 0);
  assert.equal(load({ DATA_DIR_MIN_FREE_MB: "2048" }).dataDirMinFreeMb, 2048);
  for (const bad of ["-1", "lots", "1.5"])
    assert.throws(
      () => load({ DATA_DIR_MIN_FREE_MB: bad }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.match(e.message, /DATA_DIR_MIN_FREE_MB/);
        return true;
      },
    );
});
