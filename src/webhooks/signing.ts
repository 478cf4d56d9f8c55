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
  /** "v1,<base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`>". */
  "webhook-signature": string;
}

/**
 * Signs `body` per Standard Webhooks with the user's "whsec_…" secret. The library is the
 * reference implementation receivers verify with, so both sides agree on the key decoding.
 */
export function signWebhook(secret: string, msgId: string, at: Date, body: string): SignedWebhookHeaders {
  return {
    "content-type": "application/json",
    "user-agent": WEBHOOK_USER_AGENT,
    "webhook-id": msgId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign(msgId, at, body),
  };
}
