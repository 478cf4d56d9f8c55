import type { Queryable } from "../db/client.ts";
import { webhookSecretOf } from "./secret.ts";

/** What a request may ask of webhooks (deliveries themselves belong to the worker role). */
export interface WebhooksService {
  /** The user's Standard Webhooks signing secret; NOT_FOUND for an unknown user. */
  secretOf(userId: string): Promise<string>;
}

export function createWebhooksService(db: Queryable): WebhooksService {
  return { secretOf: (userId) => webhookSecretOf(db, userId) };
}
