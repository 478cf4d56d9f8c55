import type { WebhookConfig } from "../config/index.ts";
import type { Database } from "../db/client.ts";
import {
  claimWebhookDeliveries,
  releaseExpiredWebhookLeases,
  type ClaimedWebhookDelivery,
} from "../db/queries/webhook-deliveries.ts";
import type { Clock } from "../lib/clock.ts";
import { sleep } from "../lib/sleep.ts";
import type { Logger } from "../observability/logger.ts";
import { outageBackoffMs } from "../lib/backoff.ts";
import {
  attemptAndRecord,
  noopWebhookMetrics,
  type AttemptDeps,
  type WebhookMetrics,
} from "./attempt-and-record.ts";
import { postWithUndici, systemResolve, type WebhookHttpPost } from "./deliver.ts";
import type { WebhookSecretCipher } from "./secret-cipher.ts";

export interface WebhookDispatcher {
  /** Starts the background loop (idempotent). */
  start(): void;
  /** Stops claiming and waits for the deliveries in flight (bounded by the attempt timeout). */
  stop(): Promise<void>;
  /** One claim (into the free slots) and the attempts it started; returns deliveries attempted. */
  runOnce(): Promise<number>;
}

export type { WebhookMetrics } from "./attempt-and-record.ts";

export interface WebhookDispatcherDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** `concurrency` and `maxPerHost` default to 8 and 2 (WEBHOOK_CONCURRENCY, WEBHOOK_MAX_PER_HOST). */
  config: Readonly<
    Pick<WebhookConfig, "allowPrivate" | "timeoutMs" | "retryWindowMs"> &
      Partial<Pick<WebhookConfig, "concurrency" | "maxPerHost">>
  >;
  /** Replaces the HTTP client (tests). */
  fetchImpl?: WebhookHttpPost;
  /** Replaces DNS resolution (tests); default dns.promises.lookup(host, { all: true }). */
  resolve?: (host: string) => Promise<string[]>;
  /** Idle wait between rounds when nothing was due; default 1 s. */
  pollIntervalMs?: number;
  /** Deliveries in flight at once in this dispatcher; default config.concurrency. */
  concurrency?: number;
  /** Deliveries in flight at once per user, cluster-wide; default half the concurrency (at least 1). */
  maxPerUser?: number;
  /** Jitter source for the backoff, in [0, 1). */
  random?: () => number;
  /** Opens the users' stored signing secrets (secret-cipher.ts). */
  secrets: WebhookSecretCipher;
  /** Why nothing may be claimed now (DATA_DIR below its free-space threshold), or null. */
  claimPause?: () => string | null;
  metrics?: WebhookMetrics;
}

// A lease must outlast one attempt (timeoutMs covers DNS + HTTP) plus the claim and the record
// statements; past it, the sweep hands the delivery to another dispatcher. A minute of slack
// keeps a slow database from causing a double send, at the price of a minute's delay after a crash.
const LEASE_SLACK_MS = 60_000;

export function createWebhookDispatcher(deps: WebhookDispatcherDeps): WebhookDispatcher {
  return new DeliveryLoop(deps);
}

/**
 * Scheduling (DESIGN §5 "Webhook"): deliveries run side by side, each in a slot of its own; a
 * slot is refilled as soon as its attempt ends. The claim keeps a slow receiver to its host's
 * slots and a busy user to its share, and lets users take turns (claimWebhookDeliveries).
 */
class DeliveryLoop implements WebhookDispatcher {
  private readonly log: Logger;
  private readonly attempt: AttemptDeps;
  private readonly pollIntervalMs: number;
  private readonly concurrency: number;
  private readonly maxPerHost: number;
  private readonly maxPerUser: number;
  private loop: { stop: AbortController; done: Promise<void> } | null = null;
  /** Attempts running now (claimed, not yet recorded). */
  private readonly inFlight = new Set<Promise<void>>();
  /** Set when an attempt ends: the loop claims again at once instead of waiting for the poll. */
  private slotFreed = false;
  private wake: AbortController | null = null;

  constructor(private readonly deps: WebhookDispatcherDeps) {
    const { config } = deps;
    this.log = deps.logger.child({ component: "webhooks" });
    this.pollIntervalMs = deps.pollIntervalMs ?? 1_000;
    this.concurrency = Math.max(1, deps.concurrency ?? config.concurrency ?? 8);
    this.maxPerHost = Math.max(1, config.maxPerHost ?? 2);
    this.maxPerUser = Math.max(1, deps.maxPerUser ?? Math.ceil(this.concurrency / 2));
    this.attempt = {
      db: deps.db,
      clock: deps.clock,
      log: this.log,
      secrets: deps.secrets,
      transport: {
        allowPrivate: config.allowPrivate,
        timeoutMs: config.timeoutMs,
        resolve: deps.resolve ?? systemResolve,
        post: deps.fetchImpl ?? postWithUndici,
      },
      retryWindowMs: config.retryWindowMs,
      random: deps.random ?? Math.random,
      metrics: deps.metrics ?? noopWebhookMetrics,
    };
  }

  start(): void {
    if (this.loop) return;
    const stop = new AbortController();
    this.loop = { stop, done: this.run(stop.signal) };
  }

  async stop(): Promise<void> {
    if (!this.loop) return;
    const current = this.loop;
    this.loop = null;
    current.stop.abort();
    await current.done;
  }

  async runOnce(): Promise<number> {
    const started = await this.fillSlots();
    await Promise.all(started);
    return started.length;
  }

  private async run(signal: AbortSignal): Promise<void> {
    // Consecutive failed rounds (the database is down or restarting): the wait grows until it answers.
    let failures = 0;
    while (!signal.aborted) {
      this.slotFreed = false;
      try {
        // The attempts run on in their slots; the loop hears of each end through slotFreed/wake.
        void (await this.fillSlots());
        failures = 0;
      } catch (error) {
        failures++;
        this.log.error({ err: error, failures }, "webhook dispatch round failed");
      }
      // Claim again when a slot frees (an attempt ended) or at the next poll, whichever is first.
      if ((this.slotFreed && failures === 0) || signal.aborted) continue;
      // During an outage only the backoff ends the wait: a freed slot can't claim anything either.
      this.wake = failures === 0 ? new AbortController() : null;
      const waitMs = failures > 0 ? outageBackoffMs(failures, this.pollIntervalMs) : this.pollIntervalMs;
      const until = this.wake === null ? signal : AbortSignal.any([signal, this.wake.signal]);
      await sleep(waitMs, until).catch(() => {});
      this.wake = null;
    }
    await Promise.all(this.inFlight);
  }

  /** Sweeps expired leases and claims due deliveries into the free slots; returns their attempts. */
  private async fillSlots(): Promise<Promise<void>[]> {
    const { db, clock, config } = this.deps;
    const free = this.concurrency - this.inFlight.size;
    if (free <= 0) return [];
    // Below the disk's threshold nothing new is claimed: a claim, an attempt and its record all
    // write (and the completion waits, it is not lost). Attempts in flight are recorded.
    if (this.deps.claimPause?.() != null) return [];
    const now = clock.now();
    const released = await releaseExpiredWebhookLeases(db, now);
    if (released > 0) this.log.warn({ released }, "webhook leases expired; deliveries returned to the queue");
    // Claim (one short transaction), deliver (no transaction open), record (one statement each).
    const claimed = await claimWebhookDeliveries(db, {
      now,
      limit: free,
      lockedUntil: new Date(now.getTime() + config.timeoutMs + LEASE_SLACK_MS),
      maxPerHost: this.maxPerHost,
      maxPerUser: this.maxPerUser,
    });
    return claimed.map((d) => this.occupySlot(d));
  }

  /** Runs one attempt in a slot; the slot frees (and wakes the loop) when it is recorded. */
  private occupySlot(d: ClaimedWebhookDelivery): Promise<void> {
    const attempt = attemptAndRecord(this.attempt, d)
      // Recording failed (database down): the lease expires and the sweep retries the delivery.
      .catch((error: unknown) => this.log.error({ err: error }, "recording a webhook attempt failed"))
      .finally(() => {
        this.inFlight.delete(attempt);
        this.slotFreed = true;
        this.wake?.abort();
      });
    this.inFlight.add(attempt);
    return attempt;
  }
}
