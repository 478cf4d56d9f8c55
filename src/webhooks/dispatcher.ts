import type { WebhookConfig } from "../config/index.ts";
import type { Database } from "../db/client.ts";
import {
  claimWebhookDeliveries,
  recordWebhookAttempt,
  releaseExpiredWebhookLeases,
  type AttemptDisposition,
  type ClaimedWebhookDelivery,
} from "../db/queries/webhook-deliveries.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import { sleep } from "../lib/sleep.ts";
import type { Logger } from "../observability/logger.ts";
import { outageBackoffMs } from "../lib/backoff.ts";
import { webhookRetryDelayMs } from "./retry-schedule.ts";
import {
  attemptDelivery,
  describeError,
  postWithUndici,
  systemResolve,
  type AttemptOutcome,
  type ResolveHost,
  type WebhookHttpPost,
} from "./deliver.ts";
import { serializeWebhookPayload } from "./payload.ts";
import { PING_EVENT_TYPE } from "./ping.ts";
import { signingSecrets } from "./signing.ts";
import type { WebhookSecretCipher } from "./secret-cipher.ts";

export interface WebhookDispatcher {
  /** Starts the background loop (idempotent). */
  start(): void;
  /** Stops claiming and waits for the deliveries in flight (bounded by the attempt timeout). */
  stop(): Promise<void>;
  /** One claim (into the free slots) and the attempts it started; returns deliveries attempted. */
  runOnce(): Promise<number>;
}

/** How attempts ended, for counters; a noop by default (observability/metrics.ts is not ours). */
export interface WebhookMetrics {
  attempt(outcome: "delivered" | "retry" | "failed", durationMs: number): void;
}

export const noopWebhookMetrics: WebhookMetrics = { attempt: () => {} };

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

/**
 * Test pings get one attempt (a redelivery is another): whoever sent one is watching the log, and
 * retries of a ping to a dead URL would hold one of the user's few ping slots for a day.
 */
export const isRetried = (eventType: string): boolean => eventType !== PING_EVENT_TYPE;

// A lease must outlast one attempt (timeoutMs covers DNS + HTTP) plus the claim and the record
// statements; past it, the sweep hands the delivery to another dispatcher. A minute of slack
// keeps a slow database from causing a double send, at the price of a minute's delay after a crash.
const LEASE_SLACK_MS = 60_000;

export function createWebhookDispatcher(deps: WebhookDispatcherDeps): WebhookDispatcher {
  const { db, clock, logger, config } = deps;
  const post = deps.fetchImpl ?? postWithUndici;
  const resolve: ResolveHost = deps.resolve ?? systemResolve;
  const pollIntervalMs = deps.pollIntervalMs ?? 1_000;
  // Scheduling (DESIGN §5 "Webhook"): deliveries run side by side, each in a slot of its own; a
  // slot is refilled as soon as its attempt ends. The claim keeps a slow receiver to its host's
  // slots and a busy user to its share, and lets users take turns (claimWebhookDeliveries).
  const concurrency = Math.max(1, deps.concurrency ?? config.concurrency ?? 8);
  const maxPerHost = Math.max(1, config.maxPerHost ?? 2);
  const maxPerUser = Math.max(1, deps.maxPerUser ?? Math.ceil(concurrency / 2));
  const random = deps.random ?? Math.random;
  const metrics = deps.metrics ?? noopWebhookMetrics;
  const log = logger.child({ component: "webhooks" });

  let loop: { stop: AbortController; done: Promise<void> } | null = null;
  /** Attempts running now (claimed, not yet recorded). */
  const inFlight = new Set<Promise<void>>();
  /** Set when an attempt ends: the loop claims again at once instead of waiting for the poll. */
  let slotFreed = false;
  let wake: AbortController | null = null;

  async function deliverOne(d: ClaimedWebhookDelivery): Promise<void> {
    const attemptedAt = clock.now();
    const started = performance.now();
    let outcome: AttemptOutcome;
    try {
      outcome = await attemptDelivery(
        {
          id: d.id,
          url: d.url,
          body: serializeWebhookPayload(d.payload),
          secret: signingSecrets(
            deps.secrets.open(d.userId, d.webhookSecret),
            d.previousSecret && {
              ...d.previousSecret,
              secret: deps.secrets.open(d.userId, d.previousSecret.secret),
            },
            attemptedAt,
          ),
          at: attemptedAt,
        },
        { allowPrivate: config.allowPrivate, timeoutMs: config.timeoutMs, resolve, post },
      );
    } catch (error) {
      // attemptDelivery returns outcomes; reaching this is a bug (e.g. a malformed secret).
      outcome = { kind: "retry", statusCode: null, error: describeError(error) };
    }
    const durationMs = performance.now() - started;
    const disposition: AttemptDisposition =
      outcome.kind === "delivered"
        ? { kind: "delivered" }
        : outcome.kind === "refused" || !isRetried(d.eventType)
          ? { kind: "failed" }
          : {
              kind: "retry",
              delayMs: webhookRetryDelayMs(d.attempts, random),
              retryWindowMs: config.retryWindowMs,
            };
    const status = await recordWebhookAttempt(db, {
      id: newId(),
      deliveryId: d.id,
      claimAttempts: d.attempts,
      attemptedAt,
      finishedAt: clock.now(),
      durationMs,
      statusCode: outcome.kind === "refused" ? null : outcome.statusCode,
      error: outcome.kind === "delivered" ? null : outcome.error,
      disposition,
    });
    const fields = { deliveryId: d.id, attempt: d.attempts, outcome: outcome.kind, status };
    if (status === null) log.warn(fields, "webhook lease lost before the attempt was recorded");
    else if (status === "failed")
      log.warn({ ...fields, error: "error" in outcome ? outcome.error : null }, "webhook delivery failed");
    else log.debug(fields, "webhook attempt");
    metrics.attempt(
      status === "failed" ? "failed" : outcome.kind === "delivered" ? "delivered" : "retry",
      durationMs,
    );
  }

  /** Runs one attempt in a slot; the slot frees (and wakes the loop) when it is recorded. */
  function occupySlot(d: ClaimedWebhookDelivery): Promise<void> {
    const attempt = deliverOne(d)
      // Recording failed (database down): the lease expires and the sweep retries the delivery.
      .catch((error: unknown) => log.error({ err: error }, "recording a webhook attempt failed"))
      .finally(() => {
        inFlight.delete(attempt);
        slotFreed = true;
        wake?.abort();
      });
    inFlight.add(attempt);
    return attempt;
  }

  /** Sweeps expired leases and claims due deliveries into the free slots; returns their attempts. */
  async function fillSlots(): Promise<Promise<void>[]> {
    const free = concurrency - inFlight.size;
    if (free <= 0) return [];
    // Below the disk's threshold nothing new is claimed: a claim, an attempt and its record all
    // write (and the completion waits, it is not lost). Attempts in flight are recorded.
    if (deps.claimPause?.() != null) return [];
    const now = clock.now();
    const released = await releaseExpiredWebhookLeases(db, now);
    if (released > 0) log.warn({ released }, "webhook leases expired; deliveries returned to the queue");
    // Claim (one short transaction), deliver (no transaction open), record (one statement each).
    const claimed = await claimWebhookDeliveries(db, {
      now,
      limit: free,
      lockedUntil: new Date(now.getTime() + config.timeoutMs + LEASE_SLACK_MS),
      maxPerHost,
      maxPerUser,
    });
    return claimed.map(occupySlot);
  }

  async function runOnce(): Promise<number> {
    const started = await fillSlots();
    await Promise.all(started);
    return started.length;
  }

  async function run(signal: AbortSignal): Promise<void> {
    // Consecutive failed rounds (the database is down or restarting): the wait grows until it answers.
    let failures = 0;
    while (!signal.aborted) {
      slotFreed = false;
      try {
        // The attempts run on in their slots; the loop hears of each end through slotFreed/wake.
        void (await fillSlots());
        failures = 0;
      } catch (error) {
        failures++;
        log.error({ err: error, failures }, "webhook dispatch round failed");
      }
      // Claim again when a slot frees (an attempt ended) or at the next poll, whichever is first.
      if ((slotFreed && failures === 0) || signal.aborted) continue;
      // During an outage only the backoff ends the wait: a freed slot can't claim anything either.
      wake = failures === 0 ? new AbortController() : null;
      const waitMs = failures > 0 ? outageBackoffMs(failures, pollIntervalMs) : pollIntervalMs;
      await sleep(waitMs, wake === null ? signal : AbortSignal.any([signal, wake.signal])).catch(() => {});
      wake = null;
    }
    await Promise.all(inFlight);
  }

  return {
    start() {
      if (loop) return;
      const stop = new AbortController();
      loop = { stop, done: run(stop.signal) };
    },
    async stop() {
      if (!loop) return;
      const current = loop;
      loop = null;
      current.stop.abort();
      await current.done;
    },
    runOnce,
  };
}
