import type { Database, Subscription } from "../db/client.ts";
import { JOBS_DUE_CHANNEL, nextDueAt } from "../db/queries/jobs.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../observability/logger.ts";

/** Shortest idle wait: a clock that stands still (tests) must not turn the wait into a busy loop. */
const MIN_IDLE_WAIT_MS = 20;

/**
 * Longest wait, in poll intervals, after claims that found nothing while nothing is pending or
 * while due work exists that this worker may not take (every due domain's server is saturated by
 * other processes, or other claimers hold it). New jobs wake the wait (NOTIFY), and whoever holds
 * a saturated server's slots claims again when its own session ends (its wake): the others asking
 * every poll interval only added empty claims, W times over with W workers.
 */
const BACKOFF_MAX = 8;

/**
 * How a worker waits after a claim found nothing: until the first pending job falls due (a retry
 * chain's next step), at most WORKER_POLL_INTERVAL_MS; otherwise a poll interval, doubling with
 * each empty claim in a row up to BACKOFF_MAX of them. Woken early:
 * - by one of its own sessions ending: its host has a slot and an idle connection now for the
 *   domains a claim skipped (at the provider hosting most of a list, a poll's gap after every
 *   session made the tail of the pass twice as long as its bound);
 * - by new jobs anywhere in the cluster (NOTIFY on JOBS_DUE_CHANNEL, sent by the transaction
 *   that inserts them);
 * - by the pool stopping.
 */
export class IdleWait {
  private emptyClaims = 0;
  private wakeUp: (() => void) | null = null;
  private subscription: Subscription | null = null;
  private subscribing: Promise<void> | null = null;

  constructor(
    private readonly deps: {
      db: Database;
      clock: Clock;
      logger: Logger;
      pollIntervalMs: number;
      stopping: AbortSignal;
    },
  ) {}

  /** Listens for new jobs (best effort: without it, the poll interval still bounds the wait). */
  start(): void {
    this.subscribing = this.deps.db
      .subscribe(JOBS_DUE_CHANNEL, { message: () => this.wake(), gap: () => this.wake() })
      .then((s) => {
        this.subscription = s;
      })
      .catch((err: unknown) => this.deps.logger.warn({ err }, "listening for new jobs failed"));
  }

  async stop(): Promise<void> {
    this.wake();
    await this.subscribing;
    await this.subscription?.close();
    this.subscription = null;
  }

  /** A claim took work: the next empty one starts the back-off afresh. */
  claimed(): void {
    this.emptyClaims = 0;
  }

  /** Ends the current wait, if any. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Waits after a claim that found nothing. */
  async afterEmptyClaim(): Promise<void> {
    this.emptyClaims++;
    await this.sleep(await this.waitMs());
  }

  private async waitMs(): Promise<number> {
    const { pollIntervalMs } = this.deps;
    try {
      const due = await nextDueAt(this.deps.db);
      const ms = due === null ? null : due.getTime() - this.deps.clock.now().getTime();
      // A retry step falls due soon: be there when it does.
      if (ms !== null && ms > 0) return Math.max(MIN_IDLE_WAIT_MS, Math.min(pollIntervalMs, ms));
      return pollIntervalMs * Math.min(BACKOFF_MAX, 2 ** (this.emptyClaims - 1));
    } catch {
      return pollIntervalMs;
    }
  }

  /** Waits `ms`, or until woken, or until the pool stops. */
  private sleep(ms: number): Promise<void> {
    const { stopping } = this.deps;
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        stopping.removeEventListener("abort", done);
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      stopping.addEventListener("abort", done, { once: true });
      this.wakeUp = done;
    });
  }
}
