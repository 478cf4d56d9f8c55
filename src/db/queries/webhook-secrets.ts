import type { Queryable } from "../client.ts";

// The users' Standard Webhooks secrets (users.webhook_secret*). A rotation keeps the previous
// secret signing until `previous_until` (migration 0011).

/** A user's signing secrets. */
export interface WebhookSecrets {
  /** The current "whsec_…" secret. */
  secret: string;
  /** The secret before the last rotation and the end of its grace period; null if never rotated. */
  previous: { secret: string; until: Date } | null;
}

interface SecretsRow {
  webhook_secret: string;
  webhook_secret_previous: string | null;
  webhook_secret_previous_until: Date | null;
}

const toSecrets = (r: SecretsRow): WebhookSecrets => ({
  secret: r.webhook_secret,
  previous:
    r.webhook_secret_previous !== null && r.webhook_secret_previous_until !== null
      ? { secret: r.webhook_secret_previous, until: r.webhook_secret_previous_until }
      : null,
});

/** The user's secrets, or null when the user does not exist. */
export async function findWebhookSecrets(q: Queryable, userId: string): Promise<WebhookSecrets | null> {
  const { rows } = await q.query<SecretsRow>(
    "select webhook_secret, webhook_secret_previous, webhook_secret_previous_until from users where id = $1",
    [userId],
  );
  return rows[0] ? toSecrets(rows[0]) : null;
}

/**
 * Makes `secret` the user's current secret; the one it replaces keeps signing until
 * `previousUntil` (an older previous secret is dropped). One statement, so two concurrent
 * rotations each demote the secret the other installed; null when the user does not exist.
 */
export async function rotateWebhookSecret(
  q: Queryable,
  r: { userId: string; secret: string; previousUntil: Date; at: Date },
): Promise<WebhookSecrets | null> {
  const { rows } = await q.query<SecretsRow>(
    `update users
        set webhook_secret_previous = webhook_secret, webhook_secret_previous_until = $3,
            webhook_secret = $2, updated_at = $4
      where id = $1
     returning webhook_secret, webhook_secret_previous, webhook_secret_previous_until`,
    [r.userId, r.secret, r.previousUntil, r.at],
  );
  return rows[0] ? toSecrets(rows[0]) : null;
}

/** Users with a signing secret stored in the clear ("whsec_…", current or previous), up to `limit`. */
export async function findClearWebhookSecrets(
  q: Queryable,
  limit: number,
): Promise<Array<{ userId: string; secret: string; previous: string | null }>> {
  const { rows } = await q.query<{
    id: string;
    webhook_secret: string;
    webhook_secret_previous: string | null;
  }>(
    `select id, webhook_secret, webhook_secret_previous from users
      where webhook_secret like 'whsec\\_%' or webhook_secret_previous like 'whsec\\_%'
      order by id limit $1`,
    [limit],
  );
  return rows.map((r) => ({ userId: r.id, secret: r.webhook_secret, previous: r.webhook_secret_previous }));
}

/**
 * Stores the sealed forms of a user's secrets, if they are still the ones read (a rotation in
 * between wins: it wrote sealed values already). True when replaced.
 */
export async function replaceClearWebhookSecrets(
  q: Queryable,
  r: {
    userId: string;
    read: { secret: string; previous: string | null };
    sealed: { secret: string; previous: string | null };
  },
): Promise<boolean> {
  const { rowCount } = await q.query(
    `update users set webhook_secret = $4, webhook_secret_previous = $5
      where id = $1 and webhook_secret = $2 and webhook_secret_previous is not distinct from $3`,
    [r.userId, r.read.secret, r.read.previous, r.sealed.secret, r.sealed.previous],
  );
  return rowCount > 0;
}
