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
  return new ClusterHostGate(o);
}

const keyOf = (egress: string, host: string): string => `${egress}\n${host}`;

/** Which hosts a realtime request waits at (for a batch gate), from a list at most WAITS_TTL_MS old. */
class RealtimeWaits {
  private hosts = new Set<string>();
  private readAt = -Infinity;
  private reading = false;

  constructor(private readonly o: Pick<PgHostGateOptions, "db" | "clock">) {}

  at(host: string): boolean {
    const now = this.o.clock.now();
    if (!this.reading && now.getTime() - this.readAt >= WAITS_TTL_MS) {
      this.reading = true;
      void hostsWaitedFor(this.o.db, now)
        .then((hosts) => {
          this.hosts = hosts;
          this.readAt = now.getTime();
        })
        .catch(() => undefined)
        .finally(() => (this.reading = false));
    }
    return this.hosts.has(host);
  }
}

/** Identity → end of its rest, per provider, read from smtp_egress_rests at most every RESTS_TTL_MS. */
class EgressRests {
  private readonly rests = new Map<string, { at: number; resting: Map<string, Date> }>();

  constructor(private readonly o: Pick<PgHostGateOptions, "db" | "clock">) {}

  async of(provider: string, host: string): Promise<Map<string, Date>> {
    const now = this.o.clock.now().getTime();
    const cached = this.rests.get(provider);
    if (cached !== undefined && now - cached.at < RESTS_TTL_MS) return cached.resting;
    const resting = await restingEgress(this.o.db, provider, this.o.clock.now()).catch((error: unknown) => {
      throw new SlotsUnavailableError(host, error);
    });
    this.rests.set(provider, { at: now, resting });
    return resting;
  }

  /** Records that `egress` rests for `provider` until `until`; returns the provider's rests now. */
  async add(egress: string, provider: string, until: Date, reason: string): Promise<Map<string, Date>> {
    await restEgress(this.o.db, { egress, provider, until, reason }).catch(() => {
      // Not recorded (the database is down): this session still moves on to another identity,
      // and the next refusal records it.
    });
    const cached = this.rests.get(provider);
    const resting = new Map(cached?.resting ?? []);
    resting.set(egress, until);
    this.rests.set(provider, { at: cached?.at ?? this.o.clock.now().getTime(), resting });
    return resting;
  }
}

class ClusterHostGate implements PgHostGate {
  readonly slotsPerAddress: number;
  readonly identities: number;
  private readonly names: readonly string[];
  private readonly restMs: number;
  // Sessions of this process holding or awaiting a slot, per identity and host. More local
  // contenders than slots could only queue, each idling a session slot of the pool: refuse them
  // at once instead, so the pool works on other domains meanwhile.
  private readonly local: KeyedSemaphore;
  // Slots held by a running session: the heartbeat renews these only.
  private readonly held = new Map<string, { egress: string; host: string; slot: number }>();
  private readonly rests: EgressRests;
  private readonly realtimeWaits: RealtimeWaits;
  private turn = 0;
  // Realtime waits of this process, numbered: each request's wait is a row of its own.
  private waits = 0;

  constructor(private readonly o: PgHostGateOptions) {
    this.names = o.egress !== undefined && o.egress.length > 0 ? o.egress : [""];
    this.restMs = o.restMs ?? DEFAULT_REST_MS;
    this.slotsPerAddress = o.slotsPerHost * this.names.length;
    this.identities = this.names.length;
    this.local = new KeyedSemaphore(o.slotsPerHost);
    this.rests = new EgressRests(o);
    this.realtimeWaits = new RealtimeWaits(o);
  }

  isSaturated(host: string): boolean {
    return this.names.every((e) => this.localHolders(e, host) >= this.o.slotsPerHost);
  }

  async acquire(host: string, signal?: AbortSignal, wish?: SlotWish): Promise<HostSlot> {
    const candidates = await this.candidatesOf(host, wish);
    const first = candidates[0]!;
    if (this.o.waitLocally !== true && this.localHolders(first, host) >= this.o.slotsPerHost)
      throw new HostBusyError(host, true);
    const leave = await this.local.acquire(keyOf(first, host), signal);
    try {
      return await this.acquireSlot(host, first, leave, candidates.slice(1), signal);
    } catch (error) {
      leave();
      throw error;
    }
  }

  async rest(egress: string, host: string, provider: string, reason: string): Promise<void> {
    const until = new Date(this.o.clock.now().getTime() + this.restMs);
    const resting = await this.rests.add(egress, provider, until, reason);
    if (this.o.whenAllResting !== "try" && this.names.every((e) => resting.has(e)))
      throw new HostBusyError(host, false, firstWake(resting));
  }

  async heartbeat(): Promise<void> {
    const until = new Date(this.o.clock.now().getTime() + this.o.leaseMs);
    await extendHostSlots(this.o.db, this.o.holder, [...this.held.values()], until);
  }

  private localHolders(egress: string, host: string): number {
    return this.local.holders(keyOf(egress, host));
  }

  /** The identities a session may use now, least busy here first (round robin among equals). */
  private async candidatesOf(host: string, wish: SlotWish | undefined): Promise<string[]> {
    let names = wish?.egress ?? [this.names[0]!];
    if (wish !== undefined && this.names.length > 1) {
      const resting = await this.rests.of(wish.provider, host);
      const awake = names.filter((n) => !resting.has(n));
      if (awake.length === 0 && this.o.whenAllResting !== "try")
        throw new HostBusyError(host, false, firstWake(resting));
      if (awake.length > 0) names = awake;
    }
    const start = this.turn++ % names.length;
    const rotated = [...names.slice(start), ...names.slice(0, start)];
    return rotated.sort((a, b) => this.localHolders(a, host) - this.localHolders(b, host));
  }

  /**
   * The cluster slot of `egress` (whose local place `leave` frees), or, while it has none free,
   * of any `others` with local room, until maxWaitMs.
   */
  private async acquireSlot(
    host: string,
    egress: string,
    leave: () => void,
    others: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<HostSlot> {
    const deadline = Date.now() + this.o.maxWaitMs;
    const waiter = `${this.o.holder}#${(this.waits++).toString()}`;
    let waiting = false;
    try {
      for (let pause = 25; ; pause = Math.min(pause * 2, 250)) {
        const taken = await this.takeAny(host, egress, leave, others, signal);
        if (taken !== null) return taken;
        if (Date.now() + pause > deadline) throw new HostBusyError(host, false);
        if (this.o.priority === "realtime" && !waiting) {
          waiting = true;
          await say(waitForHostSlot(this.o.db, { host, waiter, until: new Date(deadline) }));
        }
        await sleep(pause, signal);
      }
    } finally {
      if (waiting) await say(endHostWait(this.o.db, { host, waiter }, this.o.clock.now()));
    }
  }

  /**
   * The cluster slot of `egress` (whose local place `leave` frees), or, while it has none free,
   * of any `others` with local room; null when none is free now.
   */
  private async takeAny(
    host: string,
    egress: string,
    leave: () => void,
    others: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<HostSlot | null> {
    const mine = await this.tryTake(host, egress, leave);
    if (mine !== null) return mine;
    for (const other of others) {
      if (this.localHolders(other, host) >= this.o.slotsPerHost) continue;
      const leaveOther = await this.local.acquire(keyOf(other, host), signal);
      const theirs = await this.tryTake(host, other, leaveOther).catch((error: unknown) => {
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

  private async tryTake(host: string, egress: string, leave: () => void): Promise<HostSlot | null> {
    const { o } = this;
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
    const release = this.releaserOf(egress, host, slot, leave);
    const keepIdle = o.priority === "realtime" ? undefined : () => !this.realtimeWaits.at(host);
    return Object.assign(release, { egress, keepIdle });
  }

  /** Frees a taken slot once: the cluster slot first, so a local waiter goes straight to the database for it. */
  private releaserOf(egress: string, host: string, slot: number, leave: () => void): () => void {
    const key = `${egress}\n${host}\n${slot.toString()}`;
    this.held.set(key, { egress, host, slot });
    let released = false;
    return (): void => {
      if (released) return;
      released = true;
      this.held.delete(key);
      // The engine releases a moment after the server saw our close (its settle time).
      void releaseHostSlot(this.o.db, { egress, host, slot }, this.o.holder)
        .catch(() => {
          // The slot's lease runs out by itself; nothing else to do.
        })
        .finally(leave);
    };
  }
}
