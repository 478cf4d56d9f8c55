import type { Queryable } from "../db/client.ts";
import { listWebhookDeliveriesOfUser, type WebhookDelivery } from "../db/queries/webhook-deliveries.ts";
import type { Clock } from "../lib/clock.ts";
import { queueTestPing, redeliver } from "./ping.ts";
import { rotateSecretOf, webhookSecretOf, type WebhookSecretView } from "./secret.ts";
import type { WebhookSecretCipher } from "./secret-cipher.ts";

export type { WebhookDelivery, WebhookSecretView };

/** What a request may ask of webhooks (attempts themselves belong to the worker role's dispatcher). */
export interface WebhooksService {
  /** The user's Standard Webhooks signing secret; NOT_FOUND for an unknown user. */
  secretOf(userId: string): Promise<WebhookSecretView>;
  /** A new current secret; the old one keeps signing for `graceSeconds`. */
  rotateSecret(userId: string, graceSeconds: number): Promise<WebhookSecretView>;
  /** One page of the user's deliveries, newest first, and their total. */
  listDeliveries(
    userId: string,
    page: { limit: number; offset: number },
  ): Promise<{ deliveries: WebhookDelivery[]; total: number }>;
  /** Queues the delivery again now (same webhook-id and body); NOT_FOUND, CONFLICT if in flight. */
  redeliver(userId: string, deliveryId: string): Promise<WebhookDelivery>;
  /** Queues a signed `ping` to `url` (already checked by the URL policy); RATE_LIMITED past the cap. */
  sendTestPing(userId: string, url: string): Promise<WebhookDelivery>;
}

export function createWebhooksService(
  db: Queryable,
  clock: Clock,
  secrets: WebhookSecretCipher,
): WebhooksService {
  return {
    secretOf: (userId) => webhookSecretOf(db, secrets, userId, clock.now()),
    rotateSecret: (userId, graceSeconds) => rotateSecretOf(db, secrets, userId, graceSeconds, clock.now()),
    listDeliveries: (userId, page) => listWebhookDeliveriesOfUser(db, userId, page),
    redeliver: (userId, id) => redeliver(db, { userId, id, at: clock.now() }),
    sendTestPing: (userId, url) => queueTestPing(db, { userId, url, at: clock.now() }),
  };
}
