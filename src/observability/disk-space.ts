// Free space of the directory the embedded engine writes to (DATA_DIR). Below the threshold,
// work that writes is refused before it is accepted and the workers stop claiming: PostgreSQL
// (PGlite too) PANICs when it cannot create its next 16 MiB WAL segment, and PGlite 0.5 then
// never returns (docs/disk-space.md), so the guard must trip well before the disk is full.
import { statfs } from "node:fs/promises";
import { serviceUnavailable } from "../lib/app-error.ts";

const MIB = 1024 * 1024;

/**
 * Retry-After of a refusal. Space comes back when an operator frees it, not in seconds: a client
 * that retries every second only adds load to a node that cannot take its work.
 */
export const DISK_SPACE_RETRY_AFTER_SECONDS = 60;

/** What `fs.statfs` reports that matters here: blocks available to this process, and their size. */
export interface FreeSpaceReading {
  bavail: number | bigint;
  bsize: number | bigint;
}

/** Reads the free space of a directory (fs.promises.statfs; tests inject their own). */
export type FreeSpaceSource = (dir: string) => Promise<FreeSpaceReading>;

export interface DiskSpaceStatus {
  /** Bytes available in the watched directory at the last sample; null before it or when unreadable. */
  freeBytes: number | null;
  /** DATA_DIR_MIN_FREE_MB in bytes. */
  minFreeBytes: number;
  /** True when the last sample was below the threshold. */
  isLow: boolean;
}

export interface DiskSpaceGuard {
  /** The directory watched; null when this process writes none (PostgreSQL, tests): never low. */
  readonly dir: string | null;
  /** The last sample; never touches the disk. */
  status(): DiskSpaceStatus;
  /** Why work that writes is refused now (names DATA_DIR and the threshold), or null. */
  refusal(): string | null;
  /** Throws SERVICE_UNAVAILABLE (503, Retry-After) while free space is below the threshold. */
  assertWritable(): void;
  /** Takes a sample now (the timer's job; tests call it to step the guard). */
  sample(): Promise<DiskSpaceStatus>;
  /** Takes the first sample, then one every `intervalMs` until stop(). */
  start(): Promise<void>;
  stop(): void;
}

export interface DiskSpaceOptions {
  dir: string;
  minFreeMb: number;
  statfs?: FreeSpaceSource;
  /** How often free space is sampled (default 1 s); requests read the cached sample. */
  intervalMs?: number;
  /** Told when free space crosses the threshold either way, and when it cannot be read. */
  onChange?: (event: DiskSpaceEvent) => void;
}

export type DiskSpaceEvent =
  { kind: "low" | "recovered"; status: DiskSpaceStatus } | { kind: "unreadable"; error: unknown };

/** At the threshold is enough; one byte less is low. 0 never trips. */
const isBelowThreshold = (freeBytes: number, minFreeBytes: number): boolean => freeBytes < minFreeBytes;

const mb = (bytes: number): number => Math.floor(bytes / MIB);

/** The guard for a directory the process writes to. */
export function createDiskSpaceGuard(opts: DiskSpaceOptions): DiskSpaceGuard {
  const read = opts.statfs ?? ((dir: string) => statfs(dir));
  const minFreeBytes = opts.minFreeMb * MIB;
  let current: DiskSpaceStatus = { freeBytes: null, minFreeBytes, isLow: false };
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<DiskSpaceStatus> | null = null;
  // Log an unreadable directory once per episode, not once a second.
  let unreadable = false;

  async function takeSample(): Promise<DiskSpaceStatus> {
    try {
      const r = await read(opts.dir);
      const freeBytes = Number(r.bavail) * Number(r.bsize);
      const next = { freeBytes, minFreeBytes, isLow: isBelowThreshold(freeBytes, minFreeBytes) };
      if (next.isLow !== current.isLow)
        opts.onChange?.({ kind: next.isLow ? "low" : "recovered", status: next });
      current = next;
      unreadable = false;
    } catch (error) {
      // Fail open: a file system without statfs must not stop a server that has space.
      if (!unreadable) opts.onChange?.({ kind: "unreadable", error });
      unreadable = true;
      current = { freeBytes: null, minFreeBytes, isLow: false };
    }
    return current;
  }

  const guard: DiskSpaceGuard = {
    dir: opts.dir,
    status: () => current,
    refusal() {
      if (!current.isLow || current.freeBytes === null) return null;
      return (
        `This server's data directory (DATA_DIR) has ${mb(current.freeBytes)} MB free, below ` +
        `DATA_DIR_MIN_FREE_MB (${opts.minFreeMb} MB): work that writes is refused until space is freed`
      );
    },
    assertWritable() {
      const reason = guard.refusal();
      if (reason !== null) throw serviceUnavailable(reason, DISK_SPACE_RETRY_AFTER_SECONDS);
    },
    sample() {
      // Ticks never overlap: a statfs stuck on a hung network mount is not joined by another.
      inFlight ??= takeSample().finally(() => (inFlight = null));
      return inFlight;
    },
    async start() {
      if (timer) return;
      await guard.sample();
      timer = setInterval(() => void guard.sample(), opts.intervalMs ?? 1_000);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
  return guard;
}

/** For processes that write nothing of their own to disk (PostgreSQL) and for tests. */
export const noDiskSpaceGuard: DiskSpaceGuard = {
  dir: null,
  status: () => ({ freeBytes: null, minFreeBytes: 0, isLow: false }),
  refusal: () => null,
  assertWritable() {},
  sample: async () => noDiskSpaceGuard.status(),
  async start() {},
  stop() {},
};
