import type { Database } from "../db/client.ts";
import {
  endHostWait,
  extendHostSlots,
  hostsWaitedFor,
  releaseHostSlot,
  restEgress,
  restingEgress,
  tryAcquireHostSlot,
  waitForHostSlot,
} from "../db/queries/host-slots.ts";
import type { Clock } from "../lib/clock.ts";
import { sleep } from "../lib/sleep.ts";
import { KeyedSemaphore, type HostGate, type HostSlot, type SlotWish } from "../verify/index.ts";

/** The earliest end among the rests. */
const firstWake = (resting: ReadonlyMap<string, Date>): Date | null =>
  [...resting.values()].reduce<Date | null>((min, d) => (min === null || d < min ? d : min), null);

/** Best effort: a wait not recorded (the database is down) only loses the request its priority. */
const say = (write: Promise<void>): Promise<void> => write.catch(() => undefined);

/** The host had no free slot within the wait: the group goes back to the queue for a moment. */
export class HostBusyError extends Error {
  override name = "HostBusyError";
  constructor(
    readonly host: string,
    /** True when this process itself already uses every slot (no database wait happened). */
    readonly isLocal: boolean,
    /**
     * When every egress identity rests for the host's provider: the first moment one wakes. The
     * group waits for it instead of being claimed again every second for the whole rest.
     */
    readonly retryAt: Date | null = null,
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
  /** SMTP_MAX_CONNECTIONS_PER_HOST: per server IP and egress identity. */
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
  /** The egress identities' names (SMTP_EGRESS); default: the one identity ''. */
  egress?: readonly string[];
  /** SMTP_EGRESS_REST_SECONDS, in ms: how long a blocked or throttled identity rests for a provider. */
  restMs?: number;
  /**
   * When every identity rests for the provider: "defer" refuses with HostBusyError (the worker
   * pool: the group goes back to the queue, unbilled, like at a busy host); "try" uses them anyway
   * (a realtime request has no later: the server's own answer is the best it can get).
   */
  whenAllResting?: "defer" | "try";
  /**
   * "realtime": a request that finds a host full says so (smtp_host_waits) while it waits, and
   * the worker pools leave that host's next free slot to it. "batch" (default): takes no slot at
   * a host a realtime request waits for.
   */
  priority?: "realtime" | "batch";
}

export interface PgHostGate extends HostGate {
  /** Slots of one server IP over every egress identity: held this many times, it is saturated. */
  readonly slotsPerAddress: number;
  /** Egress identities the gate hands slots out for. */
  readonly identities: number;
  /** Renews the slots this process's sessions hold. */
  heartbeat(): Promise<void>;
  /**
   * True while this process already holds or awaits as many sessions to `host` as the limit
   * allows, from every identity.
   */
  isSaturated(host: string): boolean;
}

// A rest read from the database stands for this long: an acquire per session would otherwise
// add a statement per session with several identities.
const RESTS_TTL_MS = 1_000;
// How stale the batch side's list of hosts with a waiting realtime request may be: one read per
// this long per process, not one per session end.
const WAITS_TTL_MS = 250;
const DEFAULT_REST_MS = 15 * 60_000;

/**
 * Cluster-wide politeness through PostgreSQL: at most `slotsPerHost` concurrent SMTP sessions
 * per MX server IP and egress identity, across every worker of every machine sharing the
 * database; identities resting for a provider (smtp_egress_rests) are skipped.
 */
export function createPgHostGate(o: PgHostGateOptions): PgHostGate {
  const identities = o.egress !== undefined && o.egress.length > 0 ? o.egress : [""];
  const restMs = o.restMs ?? DEFAULT_REST_MS;
  const keyOf = (egress: string, host: string): string => `${egress}\n${host}`;
  // Sessions of this process holding or awaiting a slot, per identity and host. More local
  // contenders than slots could only queue, each idling a session slot of the pool: refuse them
  // at once instead, so the pool works on other domains meanwhile.
  const local = new KeyedSemaphore(o.slotsPerHost);
  // Slots held by a running session: the heartbeat renews these only.
  const held = new Map<string, { egress: string; host: string; slot: number }>();
  // Identity → end of its rest, per provider.
  const rests = new Map<string, { at: number; resting: Map<string, Date> }>();
  let turn = 0;
  // Realtime waits of this process, numbered: each request's wait is a row of its own.
  let waits = 0;
  const waited = { hosts: new Set<string>(), readAt: -Infinity, reading: false };

  /** Whether a realtime request waits at `host` (batch gates only), from a list at most WAITS_TTL_MS old. */
  function realtimeWaitsAt(host: string): boolean {
    const now = o.clock.now();
    if (!waited.reading && now.getTime() - waited.readAt >= WAITS_TTL_MS) {
      waited.reading = true;
      void hostsWaitedFor(o.db, now)
        .then((hosts) => {
          waited.hosts = hosts;
          waited.readAt = now.getTime();
        })
        .catch(() => undefined)
        .finally(() => (waited.reading = false));
    }
    return waited.hosts.has(host);
  }
  const localHolders = (egress: string, host: string): number => local.holders(keyOf(egress, host));

  async function restingFor(provider: string, host: string): Promise<Map<string, Date>> {
    const now = o.clock.now().getTime();
    const cached = rests.get(provider);
    if (cached !== undefined && now - cached.at < RESTS_TTL_MS) return cached.resting;
    const resting = await restingEgress(o.db, provider, o.clock.now()).catch((error: unknown) => {
      throw new SlotsUnavailableError(host, error);
    });
    rests.set(provider, { at: now, resting });
    return resting;
  }

  /** The identities a session may use now, least busy here first (round robin among equals). */
  async function candidatesOf(host: string, wish: SlotWish | undefined): Promise<string[]> {
    let names = wish?.egress ?? [identities[0]!];
    if (wish !== undefined && identities.length > 1) {
      const resting = await restingFor(wish.provider, host);
      const awake = names.filter((n) => !resting.has(n));
      if (awake.length === 0 && o.whenAllResting !== "try")
        throw new HostBusyError(host, false, firstWake(resting));
      if (awake.length > 0) names = awake;
    }
    const start = turn++ % names.length;
    const rotated = [...names.slice(start), ...names.slice(0, start)];
    return rotated.sort((a, b) => localHolders(a, host) - localHolders(b, host));
  }

  return {
    slotsPerAddress: o.slotsPerHost * identities.length,
    identities: identities.length,
    isSaturated: (host) => identities.every((e) => localHolders(e, host) >= o.slotsPerHost),
    async acquire(host, signal, wish) {
      const candidates = await candidatesOf(host, wish);
      const first = candidates[0]!;
      if (o.waitLocally !== true && localHolders(first, host) >= o.slotsPerHost)
        throw new HostBusyError(host, true);
      const leave = await local.acquire(keyOf(first, host), signal);
      try {
        return await acquireSlot(host, first, leave, candidates.slice(1), signal);
      } catch (error) {
        leave();
        throw error;
      }
    },
    async rest(egress, host, provider, reason) {
      const now = o.clock.now();
      const until = new Date(now.getTime() + restMs);
      await restEgress(o.db, { egress, provider, until, reason }).catch(() => {
        // Not recorded (the database is down): this session still moves on to another identity,
        // and the next refusal records it.
      });
      const cached = rests.get(provider);
      const resting = new Map(cached?.resting ?? []);
      resting.set(egress, until);
      rests.set(provider, { at: cached?.at ?? now.getTime(), resting });
      if (o.whenAllResting !== "try" && identities.every((e) => resting.has(e)))
        throw new HostBusyError(host, false, firstWake(resting));
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

  /**
   * The cluster slot of `egress` (whose local place `leave` frees), or, while it has none free,
   * of any `others` with local room, until maxWaitMs.
   */
  async function acquireSlot(
    host: string,
    egress: string,
    leave: () => void,
    others: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<HostSlot> {
    const deadline = Date.now() + o.maxWaitMs;
    const waiter = `${o.holder}#${(waits++).toString()}`;
    let waiting = false;
    try {
      for (let pause = 25; ; pause = Math.min(pause * 2, 250)) {
        const taken = await takeAny(host, egress, leave, others, signal);
        if (taken !== null) return taken;
        if (Date.now() + pause > deadline) throw new HostBusyError(host, false);
        if (o.priority === "realtime" && !waiting) {
          waiting = true;
          await say(waitForHostSlot(o.db, { host, waiter, until: new Date(deadline) }));
        }
        await sleep(pause, signal);
      }
    } finally {
      if (waiting) await say(endHostWait(o.db, { host, waiter }, o.clock.now()));
    }
  }

  /**
   * The cluster slot of `egress` (whose local place `leave` frees), or, while it has none free,
   * of any `others` with local room; null when none is free now.
   */
  async function takeAny(
    host: string,
    egress: string,
    leave: () => void,
    others: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<HostSlot | null> {
    const mine = await tryTake(host, egress, leave);
    if (mine !== null) return mine;
    for (const other of others) {
      if (localHolders(other, host) >= o.slotsPerHost) continue;
      const leaveOther = await local.acquire(keyOf(other, host), signal);
      const theirs = await tryTake(host, other, leaveOther).catch((error: unknown) => {
        leaveOther();
        throw error;
      });
      if (theirs === null) {
        leaveOther();
        continue;
      }
      leave();
      return theirs;
    }
    return null;
  }

  async function tryTake(host: string, egress: string, leave: () => void): Promise<HostSlot | null> {
    const now = o.clock.now();
    const slot = await tryAcquireHostSlot(o.db, {
      egress,
      host,
      slots: o.slotsPerHost,
      holder: o.holder,
      now,
      expiresAt: new Date(now.getTime() + o.leaseMs),
      yieldToWaiters: o.priority !== "realtime",
    }).catch((error: unknown) => {
      throw new SlotsUnavailableError(host, error);
    });
    if (slot === null) return null;
    const key = `${egress}\n${host}\n${slot.toString()}`;
    held.set(key, { egress, host, slot });
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      held.delete(key);
      // The engine releases a moment after the server saw our close (its settle time).
      // The cluster slot first: a local waiter goes straight to the database for it.
      void releaseHostSlot(o.db, { egress, host, slot }, o.holder)
        .catch(() => {
          // The slot's lease runs out by itself; nothing else to do.
        })
        .finally(leave);
    };
    const keepIdle = o.priority === "realtime" ? undefined : () => !realtimeWaitsAt(host);
    return Object.assign(release, { egress, keepIdle });
  }
}
