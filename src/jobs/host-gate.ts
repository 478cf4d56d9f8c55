import type { Database } from "../db/client.ts";
import { extendHostSlots, releaseHostSlot, tryAcquireHostSlot } from "../db/queries/host-slots.ts";
import type { Clock } from "../lib/clock.ts";
import { sleep } from "../lib/sleep.ts";
import type { HostGate } from "../verify/index.ts";

// The engine releases once our socket has closed, but the server counts the connection until it
// has processed our FIN: a new session started in that instant would briefly make one connection
// too many from its point of view. A short settle time keeps us strictly within the limit.
const RELEASE_SETTLE_MS = 50;

/** The host had no free slot within the wait: the group goes back to the queue for a moment. */
export class HostBusyError extends Error {
  override name = "HostBusyError";
  constructor(
    readonly host: string,
    /** True when this process itself already uses every slot (no database wait happened). */
    readonly isLocal: boolean,
  ) {
    super(`no free SMTP slot for ${host}`);
  }
}

export interface PgHostGateOptions {
  db: Database;
  clock: Clock;
  /** Identity of this worker process (slots it holds carry it). */
  holder: string;
  /** SMTP_MAX_CONNECTIONS_PER_HOST. */
  slotsPerHost: number;
  /** A slot not renewed for this long is free again (its holder died). */
  leaseMs: number;
  /** How long an acquire may wait for a cluster slot before giving up with HostBusyError. */
  maxWaitMs: number;
}

export interface PgHostGate extends HostGate {
  /** Renews every slot this process holds. */
  heartbeat(): Promise<void>;
  /** True while this process already holds or awaits as many sessions to `host` as the limit allows. */
  isSaturated(host: string): boolean;
}

/**
 * Cluster-wide politeness through PostgreSQL: at most `slotsPerHost` concurrent SMTP sessions
 * per MX host across every worker of every machine sharing the database.
 */
export function createPgHostGate(o: PgHostGateOptions): PgHostGate {
  // Sessions of this process holding or awaiting a slot, per host. More local contenders than
  // slots could only queue, each idling a session slot of the pool: refuse them at once instead,
  // so the pool works on other domains meanwhile.
  const local = new Map<string, number>();
  const leave = (host: string): void => {
    const n = (local.get(host) ?? 1) - 1;
    if (n <= 0) local.delete(host);
    else local.set(host, n);
  };
  return {
    isSaturated: (host) => (local.get(host) ?? 0) >= o.slotsPerHost,
    async acquire(host, signal) {
      if ((local.get(host) ?? 0) >= o.slotsPerHost) throw new HostBusyError(host, true);
      local.set(host, (local.get(host) ?? 0) + 1);
      try {
        return await acquireSlot(host, signal);
      } catch (error) {
        leave(host);
        throw error;
      }
    },
    async heartbeat() {
      await extendHostSlots(o.db, o.holder, new Date(o.clock.now().getTime() + o.leaseMs));
    },
  };

  async function acquireSlot(host: string, signal: AbortSignal | undefined): Promise<() => void> {
    {
      const deadline = Date.now() + o.maxWaitMs;
      for (let pause = 25; ; pause = Math.min(pause * 2, 250)) {
        const now = o.clock.now();
        const slot = await tryAcquireHostSlot(o.db, {
          host,
          slots: o.slotsPerHost,
          holder: o.holder,
          now,
          expiresAt: new Date(now.getTime() + o.leaseMs),
        });
        if (slot !== null) {
          let released = false;
          return () => {
            if (released) return;
            released = true;
            setTimeout(() => {
              leave(host);
              releaseHostSlot(o.db, host, slot, o.holder).catch(() => {
                // The slot's lease runs out by itself; nothing else to do.
              });
            }, RELEASE_SETTLE_MS);
          };
        }
        if (Date.now() + pause > deadline) throw new HostBusyError(host, false);
        await sleep(pause, signal);
      }
    }
  }
}
