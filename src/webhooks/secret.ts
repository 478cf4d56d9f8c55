import type { Queryable } from "../db/client.ts";
import { findWebhookSecret } from "../db/queries/webhook-deliveries.ts";
import { notFound } from "../lib/app-error.ts";

/** The user's signing secret (GET /api/v1/webhooks/secret); NOT_FOUND for an unknown user. */
export async function webhookSecretOf(q: Queryable, userId: string): Promise<string> {
  const secret = await findWebhookSecret(q, userId);
  if (secret === null) throw notFound("User");
  return secret;
}
