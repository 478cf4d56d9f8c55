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
import { webhookRetryDelayMs } from "../jobs/backoff.ts";
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

export interface WebhookDispatcher {
  /** Starts the background loop (idempotent). */
  start(): void;
  /** Stops claiming and waits for the round in flight (bounded by the attempt timeout). */
  stop(): Promise<void>;
  /** one claim+deliver round; returns deliveries attempted */
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
  config: Readonly<WebhookConfig>;
  /** Replaces the HTTP client (tests). */
  fetchImpl?: WebhookHttpPost;
  /** Replaces DNS resolution (tests); default dns.promises.lookup(host, { all: true }). */
  resolve?: (host: string) => Promise<string[]>;
  /** Idle wait between rounds when nothing was due; default 1 s. */
  pollIntervalMs?: number;
  /** Deliveries claimed and sent at once per round; default 8. */
  concurrency?: number;
  /** Jitter source for the backoff, in [0, 1). */
  random?: () => number;
  metrics?: WebhookMetrics;
}

// A lease must outlast one attempt (timeoutMs covers DNS + HTTP) plus the claim and the record
// statements; past it, the sweep hands the delivery to another dispatcher. A minute of slack
// keeps a slow database from causing a double send, at the price of a minute's delay after a crash.
const LEASE_SLACK_MS = 60_000;

export function createWebhookDispatcher(deps: WebhookDispatcherDeps): WebhookDispatcher {
  const { db, clock, logger, config } = deps;
  const post = deps.fetchImpl ?? postWithUndici;
  const resolve: ResolveHost = deps.resolve ?? systemResolve;
  const pollIntervalMs = deps.pollIntervalMs ?? 1_000;
  const concurrency = Math.max(1, deps.concurrency ?? 8);
  const random = deps.random ?? Math.random;
  const metrics = deps.metrics ?? noopWebhookMetrics;
  const log = logger.child({ component: "webhooks" });

  let loop: { stop: AbortController; done: Promise<void> } | null = null;

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
          secret: d.webhookSecret,
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
        : outcome.kind === "refused"
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

  async function runOnce(): Promise<number> {
    const now = clock.now();
    const released = await releaseExpiredWebhookLeases(db, now);
    if (released > 0) log.warn({ released }, "webhook leases expired; deliveries returned to the queue");
    // Claim (one short statement), deliver (no transaction open), record (one statement each).
    const claimed = await claimWebhookDeliveries(db, {
      now,
      limit: concurrency,
      lockedUntil: new Date(now.getTime() + config.timeoutMs + LEASE_SLACK_MS),
    });
    const results = await Promise.allSettled(claimed.map(deliverOne));
    for (const r of results) {
      // Recording failed (database down): the lease expires and the sweep retries the delivery.
      if (r.status === "rejected")
        log.error({ err: r.reason as unknown }, "recording a webhook attempt failed");
    }
    return claimed.length;
  }

  async function run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let attempted = 0;
      try {
        attempted = await runOnce();
      } catch (error) {
        log.error({ err: error }, "webhook dispatch round failed");
      }
      // A full round suggests more is due: go again at once; otherwise wait for the next poll.
      if (attempted < concurrency) await sleep(pollIntervalMs, signal).catch(() => {});
    }
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
