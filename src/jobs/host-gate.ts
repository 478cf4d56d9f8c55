import type { Database } from "../db/client.ts";
import { extendHostSlots, releaseHostSlot, tryAcquireHostSlot } from "../db/queries/host-slots.ts";
import type { Clock } from "../lib/clock.ts";
import { sleep } from "../lib/sleep.ts";
import { KeyedSemaphore, type HostGate } from "../verify/index.ts";

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

/**
 * The slot table could not be read or written (the database is down or restarting): no session
 * was opened, so the address was not tried and the attempt does not count.
 */
export class SlotsUnavailableError extends Error {
  override name = "SlotsUnavailableError";
  constructor(
    readonly host: string,
    cause: unknown,
  ) {
    super(`SMTP slots of ${host} unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
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
  /**
   * true: when this process already uses every slot of a host, wait for one of its own sessions
   * to end (realtime requests, which have a deadline and nothing else to do). false: refuse at
   * once with a local HostBusyError (the worker pool, which has other domains to work on).
   */
  waitLocally?: boolean;
}

export interface PgHostGate extends HostGate {
  /** Renews the slots this process's sessions hold. */
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
  const local = new KeyedSemaphore(o.slotsPerHost);
  // Slots held by a running session, by "host slot": the heartbeat renews these only.
  const held = new Map<string, { host: string; slot: number }>();
  return {
    isSaturated: (host) => local.holders(host) >= o.slotsPerHost,
    async acquire(host, signal) {
      if (o.waitLocally !== true && local.holders(host) >= o.slotsPerHost)
        throw new HostBusyError(host, true);
      const leave = await local.acquire(host, signal);
      try {
        return await acquireSlot(host, leave, signal);
      } catch (error) {
        leave();
        throw error;
      }
    },
    async heartbeat() {
      await extendHostSlots(
        o.db,
        o.holder,
        [...held.values()],
        new Date(o.clock.now().getTime() + o.leaseMs),
      );
    },
  };

  async function acquireSlot(
    host: string,
    leave: () => void,
    signal: AbortSignal | undefined,
  ): Promise<() => void> {
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
        }).catch((error: unknown) => {
          throw new SlotsUnavailableError(host, error);
        });
        if (slot !== null) {
          const key = `${host} ${slot}`;
          held.set(key, { host, slot });
          let released = false;
          return () => {
            if (released) return;
            released = true;
            held.delete(key);
            // The engine releases a moment after the server saw our close (its settle time).
            // The cluster slot first: a local waiter goes straight to the database for it.
            void releaseHostSlot(o.db, host, slot, o.holder)
              .catch(() => {
                // The slot's lease runs out by itself; nothing else to do.
              })
              .finally(leave);
          };
        }
        if (Date.now() + pause > deadline) throw new HostBusyError(host, false);
        await sleep(pause, signal);
      }
    }
  }
}
