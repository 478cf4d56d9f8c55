import { setMaxListeners } from "node:events";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { WorkerConfig } from "../config/index.ts";
import type { Database } from "../db/client.ts";
import type { JobRecord } from "../db/queries/jobs.ts";
import type { PgHostGate } from "../politeness/host-gate.ts";
import { outageBackoffMs } from "../lib/backoff.ts";
import type { Clock } from "../lib/clock.ts";
import { sleep, yieldToEventLoop } from "../lib/sleep.ts";
import type { Logger } from "../observability/logger.ts";
import type { Engine } from "../verify/index.ts";
import { RECORD_RETRY_DELAYS_MS } from "./backoff.ts";
import { claimNextGroup } from "./claim.ts";
import { createDomainHosts, type DomainHosts } from "./domain-hosts.ts";
import type { GroupRecorder } from "./group-recorder.ts";
import { GroupVerifier } from "./group-verifier.ts";
import { HostLearning } from "./host-learning.ts";
import { IdleWait } from "./idle-wait.ts";
import { startUpkeep } from "./pool-upkeep.ts";
import { settleOutcomes, type SettleDeps } from "./settle-outcomes.ts";

export { CLAIM_GROUP_MAX } from "./claim.ts";

export interface WorkerPoolDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** An engine whose hostGate is `gate`. */
  engine: Engine;
  gate: PgHostGate;
  config: Readonly<WorkerConfig>;
  /** Records every processed group (tasks/group-recorder.ts, wired by app/). */
  recorder: GroupRecorder;
  workerId?: string;
  /** Waits between retries of a failed result write (default RECORD_RETRY_DELAYS_MS; tests shorten it). */
  recordRetryDelaysMs?: readonly number[];
  /**
   * Why no new group may be claimed now (DATA_DIR nearly full), or null. Asked before every claim;
   * groups already claimed finish and record their results.
   */
  claimPause?: () => string | null;
}

export interface WorkerPool {
  readonly workerId: string;
  start(): void;
  /** Stops claiming, waits for running groups (up to `deadlineMs`), then hands unfinished ones back. */
  stop(deadlineMs?: number): Promise<void>;
  /** Claims and processes one group; false when nothing was due (tests drive the pool with it). */
  runOnce(): Promise<boolean>;
}

export const newWorkerId = (): string => `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;

export function createWorkerPool(deps: WorkerPoolDeps): WorkerPool {
  return new ClaimLoop(deps, deps.workerId ?? newWorkerId());
}

/**
 * PGlite runs every statement on this thread and its promises settle without a turn of the event
 * loop, so groups that need no network I/O (a disposable or dead domain: lists and cached DNS)
 * were claimed, verified and recorded back to back: a 10,000-address list of them held /healthz
 * for 3.5–13 s. Each claim and each result batch first takes a turn: one setImmediate, queued
 * behind the turns already taken, so the event loop runs between any two of them (one at a time,
 * not one per running group: the loop's median stall under such a list went from ~180 to ~55 ms
 * on a loaded machine).
 */
class EventLoopTurns {
  private last = Promise.resolve();
  readonly take = (): Promise<void> => (this.last = this.last.then(yieldToEventLoop));
}

/**
 * The worker pool: claims due groups while fewer than `concurrency` run, verifies each
 * (GroupVerifier), records it (settleOutcomes through the GroupRecorder port), and keeps its
 * leases and slots alive (startUpkeep).
 */
class ClaimLoop implements WorkerPool {
  private readonly log: Logger;
  /** Ends claiming (and wakes the idle wait). */
  private readonly stopping = new AbortController();
  /** Cuts running SMTP sessions short when the drain deadline passes. */
  private readonly sessions = new AbortController();
  private readonly active = new Set<Promise<void>>();
  // Jobs claimed by this pool and not yet recorded or handed back: the only ones the heartbeat
  // renews. Renewing "every job locked by this worker" kept a group whose write had failed
  // `processing` for as long as the process ran.
  private readonly inFlight = new Set<string>();
  private readonly hosts: DomainHosts;
  private readonly idle: IdleWait;
  private readonly learning: HostLearning;
  private readonly verifier: GroupVerifier;
  private readonly settling: SettleDeps;
  private readonly turns = new EventLoopTurns();
  private loop: Promise<void> | null = null;
  private timers: NodeJS.Timeout[] = [];
  private paused: string | null = null;

  constructor(
    private readonly deps: WorkerPoolDeps,
    readonly workerId: string,
  ) {
    const { db, clock, config, engine } = deps;
    this.log = deps.logger.child({ worker: workerId });
    // Every running session and idle wait listens on these; that is expected, not a leak.
    setMaxListeners(10_000, this.stopping.signal, this.sessions.signal);
    // Keyed by server IP, like the gate: an address with an idle connection of ours has room.
    this.hosts = createDomainHosts(
      (address) => deps.gate.isSaturated(address) && engine.idleConnections(address) === 0,
    );
    const stopping = this.stopping.signal;
    this.idle = new IdleWait({
      db,
      clock,
      logger: this.log,
      pollIntervalMs: config.pollIntervalMs,
      stopping,
    });
    this.learning = new HostLearning({ db, clock, logger: this.log, engine, hosts: this.hosts, stopping });
    this.verifier = new GroupVerifier({
      engine,
      clock,
      log: this.log,
      learning: this.learning,
      hosts: this.hosts,
      idle: this.idle,
      schedules: { deferredMs: config.retryDelaysMs, unreachableMs: config.unreachableRetryDelaysMs },
      maxAttempts: config.maxAttempts,
      sessions: this.sessions.signal,
    });
    this.settling = {
      db,
      clock,
      log: this.log,
      workerId,
      recorder: deps.recorder,
      retryDelaysMs: deps.recordRetryDelaysMs ?? RECORD_RETRY_DELAYS_MS,
      maxAttempts: config.maxAttempts,
      takeTurn: this.turns.take,
    };
  }

  start(): void {
    if (this.loop) return;
    const { db, clock, config, gate, recorder } = this.deps;
    this.timers = startUpkeep({
      db,
      clock,
      log: this.log,
      workerId: this.workerId,
      leaseMs: config.leaseMs,
      inFlight: this.inFlight,
      heartbeat: () => gate.heartbeat(),
      idle: this.idle,
      recorder,
    });
    this.idle.start();
    this.loop = this.mainLoop();
    this.log.info({ concurrency: config.concurrency }, "worker pool started");
  }

  async stop(deadlineMs = 30_000): Promise<void> {
    // Stop claiming at once; give running sessions until the deadline, then cut them short:
    // the engine answers `cancelled` and those jobs go straight back to pending.
    this.stopping.abort();
    const cut = setTimeout(() => this.sessions.abort(), deadlineMs);
    await this.loop;
    await Promise.allSettled([...this.active]);
    await this.learning.idle();
    await this.idle.stop();
    clearTimeout(cut);
    for (const t of this.timers) clearInterval(t);
    this.log.info("worker pool stopped");
  }

  async runOnce(): Promise<boolean> {
    if (this.claimPaused() !== null) return false;
    const jobs = await this.claim();
    if (jobs.length === 0) return false;
    await this.verifyAndRecord(jobs);
    return true;
  }

  private async mainLoop(): Promise<void> {
    const { config } = this.deps;
    // Consecutive failed claims (the database is down): the wait grows until it answers again.
    let failures = 0;
    while (!this.stopping.signal.aborted) {
      try {
        if (this.active.size >= config.concurrency) {
          await Promise.race(this.active);
          continue;
        }
        await this.turns.take();
        if (this.claimPaused() !== null) {
          await sleep(config.pollIntervalMs, this.stopping.signal).catch(() => {});
          continue;
        }
        const jobs = await this.claim();
        if (failures > 0) this.log.info({ failures }, "claiming works again");
        failures = 0;
        if (jobs.length === 0) {
          await this.idle.afterEmptyClaim();
          continue;
        }
        this.idle.claimed();
        this.track(this.verifyAndRecord(jobs));
      } catch (err) {
        if (this.stopping.signal.aborted) break;
        failures++;
        this.log.error({ err, failures }, "claiming work failed");
        await sleep(outageBackoffMs(failures, config.pollIntervalMs * 2), this.stopping.signal).catch(
          () => {},
        );
      }
    }
  }

  /** The pause reason now; logs when claiming stops and when it resumes. */
  private claimPaused(): string | null {
    const reason = this.deps.claimPause?.() ?? null;
    if (reason !== null && this.paused === null) this.log.warn({ reason }, "claiming paused");
    if (reason === null && this.paused !== null) this.log.info("claiming resumed");
    this.paused = reason;
    return reason;
  }

  private async claim(): Promise<JobRecord[]> {
    const { db, clock, config, gate, engine } = this.deps;
    this.learning.learnAhead();
    const now = clock.now();
    const jobs = await claimNextGroup(db, {
      worker: this.workerId,
      now,
      leaseUntil: new Date(now.getTime() + config.leaseMs),
      slotsPerHost: gate.slotsPerAddress,
      egressCount: gate.identities,
      maxSessionsPerUser: config.maxSessionsPerUser,
      skipDomains: this.hosts.domainsToSkip(),
      // A host whose session just ended has a free slot: first among equals for its other
      // domains, so the busiest providers (the bottleneck of a list) never sit idle.
      preferDomains: this.hosts.domainsOfFreedHosts(),
      idleHosts: this.hosts.hostsWhere((host) => engine.idleConnections(host) > 0),
    });
    for (const job of jobs) this.inFlight.add(job.id);
    return jobs;
  }

  /** Verifies one claimed group and records what became of each job. */
  private async verifyAndRecord(jobs: JobRecord[]): Promise<void> {
    try {
      await settleOutcomes(this.settling, await this.verifier.outcomesOf(jobs));
    } finally {
      // Recorded, handed back, or (if even that failed) left to its lease, which no heartbeat renews.
      for (const job of jobs) this.inFlight.delete(job.id);
    }
  }

  private track(p: Promise<void>): void {
    const tracked = p
      .catch((err: unknown) =>
        this.log.error({ err }, "processing a group failed; its leases will expire and it will be retried"),
      )
      .finally(() => this.active.delete(tracked));
    this.active.add(tracked);
  }
}
