import type { Database } from "../db/client.ts";
import { pruneDomainHosts } from "../db/queries/claims.ts";
import { extendLeases, releaseExpiredLeases } from "../db/queries/jobs.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../observability/logger.ts";
import type { GroupRecorder } from "./group-recorder.ts";
import type { IdleWait } from "./idle-wait.ts";

/**
 * How often a worker looks for tasks whose jobs are all closed but that were never finished (a
 * crash between a result write and the task's finish right after it): rare, so a slow sweep.
 */
const LEFT_UNFINISHED_SWEEP_MS = 30_000;

/** Where a domain's mail is served changes rarely; a row not learnt again for this long is dropped. */
const DOMAIN_HOSTS_KEPT_MS = 24 * 3_600_000;

export interface UpkeepDeps {
  db: Database;
  clock: Clock;
  log: Logger;
  workerId: string;
  leaseMs: number;
  /** The jobs this pool claimed and has not recorded or handed back: the only ones it renews. */
  inFlight: ReadonlySet<string>;
  /** The host slots' own heartbeat (politeness/host-gate.ts). */
  heartbeat: () => Promise<void>;
  idle: IdleWait;
  recorder: GroupRecorder;
}

/**
 * The pool's periodic work: renew its leases and slots, make a dead worker's jobs due again, and
 * finish what a crash left unfinished. Returns the timers, for the stop to clear.
 */
export function startUpkeep(deps: UpkeepDeps): NodeJS.Timeout[] {
  const { db, clock, log, leaseMs } = deps;
  return [
    every(log, Math.max(1_000, leaseMs / 3), async () => {
      const until = new Date(clock.now().getTime() + leaseMs);
      await Promise.all([extendLeases(db, deps.workerId, [...deps.inFlight], until), deps.heartbeat()]);
    }),
    every(log, Math.max(1_000, leaseMs / 2), async () => {
      // A dead worker's jobs are due again: nobody announced them.
      if ((await releaseExpiredLeases(db, clock.now())) > 0) deps.idle.wake();
    }),
    every(log, LEFT_UNFINISHED_SWEEP_MS, async () => {
      const finished = await deps.recorder.finishTasksLeftUnfinished(db, clock.now());
      for (const taskId of finished) log.warn({ taskId }, "finished a task a crash had left unfinished");
      await pruneDomainHosts(db, new Date(clock.now().getTime() - DOMAIN_HOSTS_KEPT_MS));
    }),
  ];
}

function every(log: Logger, ms: number, fn: () => Promise<unknown>): NodeJS.Timeout {
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
}
