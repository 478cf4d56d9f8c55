import { Webhook } from "standardwebhooks";

/** Sent on every delivery; receivers filter and rate-limit on it. */
export const WEBHOOK_USER_AGENT = "mailprobe-webhooks/1";

/** The headers of one signed delivery attempt. */
export interface SignedWebhookHeaders {
  "content-type": "application/json";
  "user-agent": string;
  /** The delivery id: stable across retries, so receivers can deduplicate. */
  "webhook-id": string;
  /** Unix seconds of this attempt (receivers reject stale ones, 5 min by default). */
  "webhook-timestamp": string;
  /** "v1,<base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`>", one per signing secret, space-separated. */
  "webhook-signature": string;
}

/**
 * Signs `body` per Standard Webhooks with the user's "whsec_…" secret — or with each of several
 * (the current one and, during a rotation's grace period, the previous one): the header then
 * carries their "v1,…" signatures space-separated, and a receiver holding either secret accepts
 * it. The library is the reference implementation receivers verify with, so both sides agree on
 * the key decoding.
 */
export function signWebhook(
  secret: string | readonly string[],
  msgId: string,
  at: Date,
  body: string,
): SignedWebhookHeaders {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (secrets.length === 0) throw new TypeError("signWebhook needs at least one secret");
  return {
    "content-type": "application/json",
    "user-agent": WEBHOOK_USER_AGENT,
    "webhook-id": msgId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": secrets.map((s) => new Webhook(s).sign(msgId, at, body)).join(" "),
  };
}

/**
 * The secrets that sign a delivery attempted at `at`: the current one first, then the previous
 * one while its grace period lasts (until `previous.until`, exclusive).
 */
export function signingSecrets(
  current: string,
  previous: { secret: string; until: Date } | null,
  at: Date,
): string[] {
  return previous !== null && at.getTime() < previous.until.getTime() && previous.secret !== current
    ? [current, previous.secret]
    : [current];
}
