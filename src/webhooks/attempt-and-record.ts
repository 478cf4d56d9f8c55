import type { Database } from "../db/client.ts";
import {
  recordWebhookAttempt,
  type AttemptDisposition,
  type ClaimedWebhookDelivery,
} from "../db/queries/webhook-deliveries.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import type { Logger } from "../observability/logger.ts";
import { attemptDelivery, describeError, type AttemptOutcome, type DeliveryDeps } from "./deliver.ts";
import { serializeWebhookPayload } from "./payload.ts";
import { PING_EVENT_TYPE } from "./ping.ts";
import { webhookRetryDelayMs } from "./retry-schedule.ts";
import type { WebhookSecretCipher } from "./secret-cipher.ts";
import { signingSecrets } from "./signing.ts";

/** How attempts ended, for counters; a noop by default (observability/metrics.ts is not ours). */
export interface WebhookMetrics {
  attempt(outcome: "delivered" | "retry" | "failed", durationMs: number): void;
}

export const noopWebhookMetrics: WebhookMetrics = { attempt: () => {} };

/**
 * Test pings get one attempt (a redelivery is another): whoever sent one is watching the log, and
 * retries of a ping to a dead URL would hold one of the user's few ping slots for a day.
 */
const isRetried = (eventType: string): boolean => eventType !== PING_EVENT_TYPE;

export interface AttemptDeps {
  db: Database;
  clock: Clock;
  log: Logger;
  secrets: WebhookSecretCipher;
  transport: DeliveryDeps;
  /** WEBHOOK_RETRY_HOURS: a delivery still failing after this long has failed for good. */
  retryWindowMs: number;
  /** Jitter source for the backoff, in [0, 1). */
  random: () => number;
  metrics: WebhookMetrics;
}

/** One attempt at a claimed delivery, signed and posted, then recorded under its lease. */
export async function attemptAndRecord(deps: AttemptDeps, d: ClaimedWebhookDelivery): Promise<void> {
  const attemptedAt = deps.clock.now();
  const started = performance.now();
  let outcome: AttemptOutcome;
  try {
    outcome = await attemptDelivery(requestOf(deps.secrets, d, attemptedAt), deps.transport);
  } catch (error) {
    // attemptDelivery returns outcomes; reaching this is a bug (e.g. a malformed secret).
    outcome = { kind: "retry", statusCode: null, error: describeError(error) };
  }
  const durationMs = performance.now() - started;
  const status = await recordWebhookAttempt(deps.db, {
    id: newId(),
    deliveryId: d.id,
    claimAttempts: d.attempts,
    attemptedAt,
    finishedAt: deps.clock.now(),
    durationMs,
    statusCode: outcome.kind === "refused" ? null : outcome.statusCode,
    error: outcome.kind === "delivered" ? null : outcome.error,
    disposition: dispositionOf(deps, d, outcome),
  });
  const fields = { deliveryId: d.id, attempt: d.attempts, outcome: outcome.kind, status };
  if (status === null) deps.log.warn(fields, "webhook lease lost before the attempt was recorded");
  else if (status === "failed")
    deps.log.warn({ ...fields, error: "error" in outcome ? outcome.error : null }, "webhook delivery failed");
  else deps.log.debug(fields, "webhook attempt");
  deps.metrics.attempt(
    status === "failed" ? "failed" : outcome.kind === "delivered" ? "delivered" : "retry",
    durationMs,
  );
}

/** The delivery's body, signed with the user's secret (and the previous one while it overlaps). */
function requestOf(secrets: WebhookSecretCipher, d: ClaimedWebhookDelivery, at: Date) {
  const previous = d.previousSecret && {
    ...d.previousSecret,
    secret: secrets.open(d.userId, d.previousSecret.secret),
  };
  return {
    id: d.id,
    url: d.url,
    body: serializeWebhookPayload(d.payload),
    secret: signingSecrets(secrets.open(d.userId, d.webhookSecret), previous, at),
    at,
  };
}

function dispositionOf(
  deps: AttemptDeps,
  d: ClaimedWebhookDelivery,
  outcome: AttemptOutcome,
): AttemptDisposition {
  if (outcome.kind === "delivered") return { kind: "delivered" };
  if (outcome.kind === "refused" || !isRetried(d.eventType)) return { kind: "failed" };
  return {
    kind: "retry",
    delayMs: webhookRetryDelayMs(d.attempts, deps.random),
    retryWindowMs: deps.retryWindowMs,
  };
}
