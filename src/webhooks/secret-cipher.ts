// Webhook signing secrets at rest (users.webhook_secret, webhook_secret_previous), sealed like
// API keys (lib/sealed-secret.ts: AES-256-GCM under ENCRYPTION_KEY, bound to the user's id) so
// that a copy of the database or of its write-ahead log does not hand out every user's signing
// secret. A server without ENCRYPTION_KEY (PostgreSQL deployments may leave it unset:
// docs/configuration.md) stores them in the clear; the first start with a key seals those
// (sealClearWebhookSecrets).
import type { Queryable } from "../db/client.ts";
import { findClearWebhookSecrets, replaceClearWebhookSecrets } from "../db/queries/webhook-secrets.ts";
import { createSecretSealer, isSealed, type SecretSealer } from "../lib/sealed-secret.ts";

export type WebhookSecretCipher = SecretSealer;

export const createWebhookSecretCipher = (key: Buffer | null): WebhookSecretCipher =>
  createSecretSealer(key, "webhook-secret");

/**
 * Seals every signing secret stored in the clear (users from before sealing, or from a server
 * that ran without ENCRYPTION_KEY), a page at a time; returns how many users it sealed. Run at
 * start once a key is set; several nodes running it at once each seal what the others have not.
 */
export async function sealClearWebhookSecrets(q: Queryable, cipher: WebhookSecretCipher): Promise<number> {
  if (!cipher.sealing) return 0;
  let sealed = 0;
  for (;;) {
    const page = await findClearWebhookSecrets(q, 500);
    let replaced = 0;
    for (const read of page) {
      const seal = (s: string | null): string | null =>
        s === null || isSealed(s) ? s : cipher.seal(read.userId, s);
      if (
        await replaceClearWebhookSecrets(q, {
          userId: read.userId,
          read,
          sealed: { secret: seal(read.secret)!, previous: seal(read.previous) },
        })
      )
        replaced++;
    }
    sealed += replaced;
    // A page none of which could be replaced is being sealed by another node: stop, it will finish.
    if (page.length < 500 || replaced === 0) return sealed;
  }
}
