import type { Queryable } from "../db/client.ts";
import {
  countUnsettledWebhookDeliveries,
  insertWebhookDelivery,
  requeueWebhookDelivery,
  findWebhookDelivery,
  type WebhookDelivery,
} from "../db/queries/webhook-deliveries.ts";
import { conflict, notFound, rateLimited } from "../lib/app-error.ts";
import { newId } from "../lib/ids.ts";

/** The event type of a test delivery (POST /api/v1/webhooks/test). */
export const PING_EVENT_TYPE = "ping";

/** The body of a test delivery: the completion envelope with an empty `data`. */
export interface PingPayload {
  type: typeof PING_EVENT_TYPE;
  timestamp: string;
  data: Record<string, never>;
}

const pingPayload = (at: Date): PingPayload => ({
  type: PING_EVENT_TYPE,
  timestamp: at.toISOString(),
  data: {},
});

/**
 * Test pings a user may have waiting (pending or being attempted) at once. A ping costs nothing,
 * unlike a task's webhook, so without a bound one key could keep the outbox busy with retries
 * to URLs that never answer; the general rate limit alone allows thousands a minute.
 */
export const MAX_UNSETTLED_PINGS = 5;
/** Retry-After of a refused ping: the first retry of a waiting ping is 30 s away (webhooks/retry-schedule.ts). */
const PING_RETRY_AFTER_SECONDS = 30;

/**
 * Queues a signed `ping` to `url` through the outbox (the URL is already checked by the caller,
 * like a task's webhook_url; the dispatcher applies the address guard again at delivery time).
 * 429 RATE_LIMITED when the user already has MAX_UNSETTLED_PINGS waiting.
 */
export async function queueTestPing(
  q: Queryable,
  r: { userId: string; url: string; at: Date },
): Promise<WebhookDelivery> {
  const unsettled = await countUnsettledWebhookDeliveries(q, r.userId, PING_EVENT_TYPE);
  if (unsettled >= MAX_UNSETTLED_PINGS) throw rateLimited(PING_RETRY_AFTER_SECONDS);
  const id = newId();
  await insertWebhookDelivery(q, {
    id,
    userId: r.userId,
    taskId: null,
    eventType: PING_EVENT_TYPE,
    url: r.url,
    payload: pingPayload(r.at),
    at: r.at,
  });
  const delivery = await findWebhookDelivery(q, id);
  if (delivery === null) throw new Error(`webhook delivery ${id} vanished after insert`);
  return delivery;
}

/**
 * Sends one of the user's deliveries again, now: same id (`webhook-id`) and body, fresh
 * signature and timestamp. Another user's delivery is NOT_FOUND (no existence leak, as for
 * tasks); one being attempted right now is CONFLICT.
 */
export async function redeliver(
  q: Queryable,
  r: { userId: string; id: string; at: Date },
): Promise<WebhookDelivery> {
  const outcome = await requeueWebhookDelivery(q, r);
  switch (outcome.kind) {
    case "requeued":
      return outcome.delivery;
    case "in_flight":
      throw conflict("The delivery is being attempted right now; ask again once the attempt has ended");
    case "not_found":
      throw notFound("Webhook delivery");
  }
}
