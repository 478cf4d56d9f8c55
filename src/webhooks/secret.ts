import { newWebhookSecret } from "../lib/tokens.ts";
import type { Queryable } from "../db/client.ts";
import { findWebhookSecrets, rotateWebhookSecret } from "../db/queries/webhook-secrets.ts";
import { notFound } from "../lib/app-error.ts";
import type { WebhookSecretCipher } from "./secret-cipher.ts";

/** What GET /api/v1/webhooks/secret and the rotation show. */
export interface WebhookSecretView {
  /** The current "whsec_…" secret. */
  secret: string;
  /** While the secret before the last rotation still signs too: until when; null otherwise. */
  previousExpiresAt: Date | null;
}

/** Default grace period of a rotation: a day for receivers to switch to the new secret. */
export const DEFAULT_ROTATION_GRACE_SECONDS = 24 * 3600;
/** Longest grace period: a leaked secret being rotated out must not live on for long. */
export const MAX_ROTATION_GRACE_SECONDS = 7 * 24 * 3600;

/** The user's signing secret (GET /api/v1/webhooks/secret); NOT_FOUND for an unknown user. */
export async function webhookSecretOf(
  q: Queryable,
  secrets: WebhookSecretCipher,
  userId: string,
  now: Date,
): Promise<WebhookSecretView> {
  const found = await findWebhookSecrets(q, userId);
  if (found === null) throw notFound("User");
  return viewOf(secrets.open(userId, found.secret), now, found.previous);
}

/**
 * Replaces the user's secret with a new one; the old one keeps signing (beside the new) for
 * `graceSeconds` (0: stops at once). NOT_FOUND for an unknown user.
 */
export async function rotateSecretOf(
  q: Queryable,
  secrets: WebhookSecretCipher,
  userId: string,
  graceSeconds: number,
  now: Date,
): Promise<WebhookSecretView> {
  const grace = Math.min(MAX_ROTATION_GRACE_SECONDS, Math.max(0, Math.floor(graceSeconds)));
  const secret = newWebhookSecret();
  const rotated = await rotateWebhookSecret(q, {
    userId,
    secret: secrets.seal(userId, secret),
    previousUntil: new Date(now.getTime() + grace * 1000),
    at: now,
  });
  if (rotated === null) throw notFound("User");
  return viewOf(secret, now, rotated.previous);
}

const viewOf = (secret: string, now: Date, previous: { until: Date } | null): WebhookSecretView => ({
  secret,
  previousExpiresAt: previous !== null && previous.until.getTime() > now.getTime() ? previous.until : null,
});
