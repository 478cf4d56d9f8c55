import { setMaxListeners } from "node:events";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { WorkerConfig } from "../config/index.ts";
import { isDatabaseUnavailable, type Database } from "../db/client.ts";
import { extendLeases, releaseExpiredLeases, rescheduleJobs, type JobRecord } from "../db/queries/jobs.ts";
import { pruneDomainHosts } from "../db/queries/claims.ts";
import type { Clock } from "../lib/clock.ts";
import { sleep, yieldToEventLoop } from "../lib/sleep.ts";
import type { Logger } from "../observability/logger.ts";
import { decidedByEvidence, PaceRefusal, providerOf, type Engine } from "../verify/index.ts";
import { outageBackoffMs } from "../lib/backoff.ts";
import { RECORD_RETRY_DELAYS_MS } from "./backoff.ts";
import { CROWDED_HOST_DOMAINS, FIRST_TOUCH_SIZE, mayCutToFirstTouch } from "./first-touch.ts";
import { canaryVerdict, outcomesOfHeldBack, splitCanary } from "./deferral-canary.ts";
import {
  outcomeOfResult,
  outcomesOfFailure,
  outcomesOfUntried,
  outcomesOfUnrecorded,
  type GroupFailure,
  type JobOutcome,
} from "./outcomes.ts";
import { HostBusyError, SlotsUnavailableError, type PgHostGate } from "../hostslots/host-gate.ts";
import { createDomainHosts } from "./domain-hosts.ts";
import { claimNextGroup } from "./claim.ts";
import { HostLearning } from "./host-learning.ts";
import { IdleWait } from "./idle-wait.ts";
import { recordGroup, rescheduleOf, type GroupsRecordedHandler } from "./record-results.ts";

export { CLAIM_GROUP_MAX } from "./claim.ts";

/**
 * How often a worker looks for tasks whose jobs are all closed but that were never finished (a
 * crash between a result write and the task's finish right after it): rare, so a slow sweep.
 */
const LEFT_UNFINISHED_SWEEP_MS = 30_000;

/** Where a domain's mail is served changes rarely; a row not learnt again for this long is dropped. */
const DOMAIN_HOSTS_KEPT_MS = 24 * 3_600_000;

export interface WorkerPoolDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** An engine whose hostGate is `gate`. */
  engine: Engine;
  gate: PgHostGate;
  config: Readonly<WorkerConfig>;
  /** The task layer's part of every result write (tasks/groups-recorded.ts, wired by app/). */
  onGroupsRecorded: GroupsRecordedHandler;
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
  const { db, clock, logger, config } = deps;
  const workerId = deps.workerId ?? newWorkerId();
  const log = logger.child({ worker: workerId });
  const active = new Set<Promise<void>>();
  // `stopping` ends claiming (and wakes the idle wait); `sessions` cuts running SMTP sessions
  // short when the drain deadline passes.
  const stopping = new AbortController();
  const sessions = new AbortController();
  // Every running session and idle wait listens on these; that is expected, not a leak.
  setMaxListeners(10_000, stopping.signal, sessions.signal);
  // Keyed by server IP, like the gate: an address with an idle connection of ours has room.
  const domainHosts = createDomainHosts(
    (address) => deps.gate.isSaturated(address) && deps.engine.idleConnections(address) === 0,
  );
  const idle = new IdleWait({
    db,
    clock,
    logger: log,
    pollIntervalMs: config.pollIntervalMs,
    stopping: stopping.signal,
  });
  const learning = new HostLearning({
    db,
    clock,
    logger: log,
    engine: deps.engine,
    hosts: domainHosts,
    stopping: stopping.signal,
  });
  const schedules = { deferredMs: config.retryDelaysMs, unreachableMs: config.unreachableRetryDelaysMs };
  const recordRetryDelaysMs = deps.recordRetryDelaysMs ?? RECORD_RETRY_DELAYS_MS;
  // Jobs claimed by this pool and not yet recorded or handed back: the only ones the heartbeat
  // renews. Renewing "every job locked by this worker" kept a group whose write had failed
  // `processing` for as long as the process ran.
  const inFlight = new Set<string>();
  let loop: Promise<void> | null = null;
  // PGlite runs every statement on this thread and its promises settle without a turn of the
  // event loop, so groups that need no network I/O (a disposable or dead domain: lists and
  // cached DNS) were claimed, verified and recorded back to back: a 10,000-address list of them
  // held /healthz for 3.5–13 s. Each claim and each result batch first takes a turn: one
  // setImmediate, queued behind the turns already taken, so the event loop runs between any two
  // of them (one at a time, not one per running group: the loop's median stall under such a
  // list went from ~180 to ~55 ms on a loaded machine).
  let lastTurn = Promise.resolve();
  const takeTurn = (): Promise<void> => (lastTurn = lastTurn.then(yieldToEventLoop));
  let timers: NodeJS.Timeout[] = [];
  let paused: string | null = null;
  /** The pause reason now; logs when claiming stops and when it resumes. */
  function claimPaused(): string | null {
    const reason = deps.claimPause?.() ?? null;
    if (reason !== null && paused === null) log.warn({ reason }, "claiming paused");
    if (reason === null && paused !== null) log.info("claiming resumed");
    paused = reason;
    return reason;
  }

  /** Verifies one claimed group and records what became of each job. */
  async function verifyAndRecord(jobs: JobRecord[]): Promise<void> {
    try {
      // A first touch at a crowded host (first-touch.ts); a deferring domain's canary (deferral-canary.ts).
      const later =
        mayCutToFirstTouch(jobs) && (await atCrowdedHost(jobs[0]!.domain))
          ? jobs.slice(FIRST_TOUCH_SIZE)
          : [];
      const { ask, held } = splitCanary(later.length > 0 ? jobs.slice(0, FIRST_TOUCH_SIZE) : jobs);
      const asked = await verify(ask);
      const verdict = held.length > 0 ? canaryVerdict(asked) : "inconclusive";
      const heldOutcomes =
        verdict === "through"
          ? await verify(held)
          : verdict === "held_back"
            ? outcomesOfHeldBack(held, clock.now(), schedules)
            : outcomesOfUntried(held);
      await settle([
        ...asked,
        ...heldOutcomes,
        ...outcomesOfUntried(later, { runAfter: clock.now(), countClaim: true }),
      ]);
    } finally {
      // Recorded, handed back, or (if even that failed) left to its lease, which no heartbeat renews.
      for (const job of jobs) inFlight.delete(job.id);
    }
  }

  /**
   * Whether the domain's mail host serves at least CROWDED_HOST_DOMAINS other domains we know of
   * (first-touch.ts). The resolution is the engine's cached one, which the session reads next.
   */
  async function atCrowdedHost(domain: string): Promise<boolean> {
    const host = await learning.learn(domain);
    return host !== null && domainHosts.otherDomainsAt(host, domain) >= CROWDED_HOST_DOMAINS;
  }

  async function verify(jobs: JobRecord[]): Promise<JobOutcome[]> {
    const domain = jobs[0]!.domain;
    let outcomes: JobOutcome[];
    const askedAt = clock.now();
    try {
      const results = await deps.engine.verifyGroup(
        domain,
        jobs.map((j) => j.emailAddress),
        { signal: sessions.signal },
      );
      const now = clock.now();
      outcomes = jobs.map((job, i) => outcomeOfResult(job, results[i]!, now, schedules, askedAt));
      for (const r of results) {
        // The wording alone would have said unknown: keep a trace of what decided instead.
        if (decidedByEvidence(r.evidence))
          log.info({ domain, email: r.email, evidence: r.evidence }, "decided by evidence");
      }
      const asked = results.find((r) => r.hostAddress);
      const host = asked?.hostAddress;
      if (host) {
        learning.taught(domain, host, providerOf(asked.hostName, host));
        domainHosts.markFreed(host);
        // That host has a slot (and an idle connection) for the domains a claim skipped.
        idle.wake();
      }
    } catch (error) {
      if (error instanceof HostBusyError) learning.taught(domain, error.host, null);
      if (error instanceof PaceRefusal) learning.taught(domain, error.host, error.provider);
      const failure = groupFailureOf(error);
      if (failure.kind === "internal")
        log.error({ err: error, domain, jobs: jobs.length }, "verifying a group failed");
      outcomes = outcomesOfFailure(jobs, failure, clock.now(), config.maxAttempts);
    }
    return outcomes;
  }

  /**
   * Records the outcomes, retrying a failed write with backoff (a database restart is over in
   * seconds); if it still fails, gives the jobs back to the queue in one small statement. Never
   * throws: every job leaves `processing` here, or its lease runs out unrenewed.
   */
  async function settle(outcomes: JobOutcome[]): Promise<void> {
    let lastError: unknown;
    for (let attempt = 0; attempt <= recordRetryDelaysMs.length; attempt++) {
      if (attempt > 0) await sleep(recordRetryDelaysMs[attempt - 1]!);
      try {
        const finished = await recordGroup(
          db,
          workerId,
          outcomes,
          clock.now(),
          deps.onGroupsRecorded,
          takeTurn,
        );
        for (const taskId of finished) log.info({ taskId }, "task finished");
        return;
      } catch (error) {
        lastError = error;
        log.warn({ err: error, jobs: outcomes.length, attempt: attempt + 1 }, "recording a group failed");
      }
    }
    const jobs = outcomes.map((o) => o.job);
    const cause = {
      databaseUnavailable: isDatabaseUnavailable(lastError),
      message: lastError instanceof Error ? lastError.message : String(lastError),
    };
    const fallback = outcomesOfUnrecorded(jobs, cause, clock.now(), config.maxAttempts);
    try {
      if (cause.databaseUnavailable) {
        const retries = fallback.flatMap((o) => (o.kind === "retry" ? [rescheduleOf(o)] : []));
        await rescheduleJobs(db, retries, workerId, clock.now());
      } else {
        // May fail the last jobs of a task: recordGroup also finishes it.
        await recordGroup(db, workerId, fallback, clock.now(), deps.onGroupsRecorded, takeTurn);
      }
      log.error(
        { err: lastError, jobs: jobs.length },
        "results could not be recorded; jobs returned to the queue",
      );
    } catch (error) {
      log.error(
        { err: error, jobs: jobs.length },
        "results could not be recorded; jobs return when their lease runs out",
      );
    }
  }

  function groupFailureOf(error: unknown): GroupFailure {
    if (error instanceof HostBusyError)
      return error.isLocal
        ? { kind: "host_busy_locally" }
        : { kind: "host_busy_in_cluster", retryAt: error.retryAt };
    if (error instanceof SlotsUnavailableError) return { kind: "slots_unavailable" };
    // The provider's pace has no room: back when it has, untried and unbilled like at a busy host.
    if (error instanceof PaceRefusal) return { kind: "host_busy_in_cluster", retryAt: error.roomAt };
    if (sessions.signal.aborted) return { kind: "stopping" };
    return { kind: "internal", message: error instanceof Error ? error.message : String(error) };
  }

  async function claim(): Promise<JobRecord[]> {
    learning.learnAhead();
    const now = clock.now();
    const jobs = await claimNextGroup(db, {
      worker: workerId,
      now,
      leaseUntil: new Date(now.getTime() + config.leaseMs),
      slotsPerHost: deps.gate.slotsPerAddress,
      egressCount: deps.gate.identities,
      maxSessionsPerUser: config.maxSessionsPerUser,
      skipDomains: domainHosts.domainsToSkip(),
      // A host whose session just ended has a free slot: first among equals for its other
      // domains, so the busiest providers (the bottleneck of a list) never sit idle.
      preferDomains: domainHosts.domainsOfFreedHosts(),
      idleHosts: domainHosts.hostsWhere((host) => deps.engine.idleConnections(host) > 0),
    });
    for (const job of jobs) inFlight.add(job.id);
    return jobs;
  }

  function track(p: Promise<void>): void {
    const tracked = p
      .catch((err: unknown) =>
        log.error({ err }, "processing a group failed; its leases will expire and it will be retried"),
      )
      .finally(() => active.delete(tracked));
    active.add(tracked);
  }

  async function mainLoop(): Promise<void> {
    // Consecutive failed claims (the database is down): the wait grows until it answers again.
    let failures = 0;
    while (!stopping.signal.aborted) {
      try {
        if (active.size >= config.concurrency) {
          await Promise.race(active);
          continue;
        }
        await takeTurn();
        if (claimPaused() !== null) {
          await sleep(config.pollIntervalMs, stopping.signal).catch(() => {});
          continue;
        }
        const jobs = await claim();
        if (failures > 0) log.info({ failures }, "claiming works again");
        failures = 0;
        if (jobs.length === 0) {
          await idle.afterEmptyClaim();
          continue;
        }
        idle.claimed();
        track(verifyAndRecord(jobs));
      } catch (err) {
        if (stopping.signal.aborted) break;
        failures++;
        log.error({ err, failures }, "claiming work failed");
        await sleep(outageBackoffMs(failures, config.pollIntervalMs * 2), stopping.signal).catch(() => {});
      }
    }
  }

  const every = (ms: number, fn: () => Promise<unknown>): NodeJS.Timeout => {
    // A tick still waiting on the database (a connect during an outage) is not joined by another.
    let running = false;
    const t = setInterval(() => {
      if (running) return;
      running = true;
      void fn()
        .catch((err: unknown) => log.warn({ err }, "periodic job failed"))
        .finally(() => (running = false));
    }, ms);
    t.unref();
    return t;
  };

  return {
    workerId,
    start() {
      if (loop) return;
      timers = [
        every(Math.max(1_000, config.leaseMs / 3), async () => {
          const until = new Date(clock.now().getTime() + config.leaseMs);
          await Promise.all([extendLeases(db, workerId, [...inFlight], until), deps.gate.heartbeat()]);
        }),
        every(Math.max(1_000, config.leaseMs / 2), async () => {
          // A dead worker's jobs are due again: nobody announced them.
          if ((await releaseExpiredLeases(db, clock.now())) > 0) idle.wake();
        }),
        every(LEFT_UNFINISHED_SWEEP_MS, async () => {
          const finished = await deps.onGroupsRecorded.finishTasksLeftUnfinished(db, clock.now());
          for (const taskId of finished) log.warn({ taskId }, "finished a task a crash had left unfinished");
          await pruneDomainHosts(db, new Date(clock.now().getTime() - DOMAIN_HOSTS_KEPT_MS));
        }),
      ];
      idle.start();
      loop = mainLoop();
      log.info({ concurrency: config.concurrency }, "worker pool started");
    },
    async stop(deadlineMs = 30_000) {
      // Stop claiming at once; give running sessions until the deadline, then cut them short:
      // the engine answers `cancelled` and those jobs go straight back to pending.
      stopping.abort();
      const cut = setTimeout(() => sessions.abort(), deadlineMs);
      await loop;
      await Promise.allSettled([...active]);
      await learning.idle();
      await idle.stop();
      clearTimeout(cut);
      for (const t of timers) clearInterval(t);
      log.info("worker pool stopped");
    },
    async runOnce() {
      if (claimPaused() !== null) return false;
      const jobs = await claim();
      if (jobs.length === 0) return false;
      await verifyAndRecord(jobs);
      return true;
    },
  };
}
