// Verifies mailprobe's completion webhooks on the receiving side. The server signs per Standard
// Webhooks (src/webhooks/signing.ts, DESIGN §5): `webhook-signature` is a space-separated list of
// "v1,<base64 HMAC-SHA256 of `${webhook-id}.${webhook-timestamp}.${raw body}`>", keyed with the
// base64-decoded part of the user's "whsec_…" secret (GET /api/v1/webhooks/secret). After a
// secret rotation the header carries one signature per secret during the grace period; any
// match is enough. WebCrypto only, so the same code runs on Node 22, Deno, Bun, workers and
// browsers.
import type { TaskCompletedEvent } from "./index.js";
import type { components } from "./schema.js";

export type { TaskCompletedEvent } from "./index.js";
/** A test delivery (POST /api/v1/webhooks/test): `{ type: "ping", timestamp, data: {} }`. */
export type PingEvent = components["schemas"]["PingEvent"];

/** The delivery id: stable across retries of one event, so receivers can deduplicate on it. */
export const WEBHOOK_ID_HEADER = "webhook-id";
/** Unix seconds of the delivery attempt. */
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp";
/** One or more space-separated "v1,<base64>" signatures. */
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature";
/** How far (either way) a delivery's timestamp may be from the receiver's clock, by default. */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

/** Every event mailprobe sends: task completions and test pings (switch on `type`). */
export type WebhookEvent = TaskCompletedEvent | PingEvent;

/** Why a delivery was refused. */
export type WebhookFailureReason =
  /** webhook-id, webhook-timestamp or webhook-signature is absent or empty. */
  | "missing_headers"
  /** webhook-timestamp is not a whole number of seconds. */
  | "malformed_timestamp"
  /** Older than the tolerance: possibly a replay. */
  | "timestamp_too_old"
  /** Further in the future than the tolerance. */
  | "timestamp_too_new"
  /** webhook-signature holds no "v1,<base64>" entry. */
  | "malformed_signature"
  /** No v1 signature matches (tampered body or headers, or another secret). */
  | "signature_mismatch"
  /** Signed correctly but the body is not JSON. */
  | "malformed_payload";

export type WebhookVerification =
  | { ok: true; id: string; timestamp: number; event: WebhookEvent }
  | { ok: false; reason: WebhookFailureReason };

/** Fetch Headers, Node's IncomingHttpHeaders, or a plain record (any letter case). */
export type WebhookHeaders =
  { get(name: string): string | null } | Record<string, string | string[] | undefined>;

interface VerifyCommon {
  /** The raw request body exactly as received (re-serialised JSON will not verify). */
  payload: string | Uint8Array;
  /** The user's "whsec_…" secret. */
  secret: string;
  /** Default 300 s, as the server's documentation promises receivers. */
  toleranceSeconds?: number;
  /** The receiver's clock (tests). */
  now?: Date | number;
}

export type VerifyWebhookInput = VerifyCommon &
  (
    | { headers: WebhookHeaders }
    | {
        id: string | null | undefined;
        timestamp: string | null | undefined;
        signature: string | null | undefined;
      }
  );

/**
 * Checks a delivery's signature and timestamp and parses its body. Outcomes are values:
 * `{ ok: true, event }` or `{ ok: false, reason }`; answer 2xx only for `ok`. Throws only for a
 * secret that is not a "whsec_" + base64 string (a configuration fault).
 */
export async function verifyWebhookSignature(input: VerifyWebhookInput): Promise<WebhookVerification> {
  const key = await importSecret(input.secret);
  const { id, timestamp, signature } =
    "headers" in input
      ? {
          id: readHeader(input.headers, WEBHOOK_ID_HEADER),
          timestamp: readHeader(input.headers, WEBHOOK_TIMESTAMP_HEADER),
          signature: readHeader(input.headers, WEBHOOK_SIGNATURE_HEADER),
        }
      : input;
  if (!id || !timestamp || !signature) return { ok: false, reason: "missing_headers" };

  if (!/^\d{1,15}$/.test(timestamp.trim())) return { ok: false, reason: "malformed_timestamp" };
  const sentAt = Number(timestamp.trim());
  const now = Math.floor(toMs(input.now ?? Date.now()) / 1000);
  const tolerance = input.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  if (now - sentAt > tolerance) return { ok: false, reason: "timestamp_too_old" };
  if (sentAt - now > tolerance) return { ok: false, reason: "timestamp_too_new" };

  const candidates = signature
    .split(/\s+/)
    .map((entry) => /^v1,([A-Za-z0-9+/]+={0,2})$/.exec(entry)?.[1])
    .filter((s): s is string => s !== undefined);
  if (candidates.length === 0) return { ok: false, reason: "malformed_signature" };

  const body = typeof input.payload === "string" ? encoder.encode(input.payload) : input.payload;
  const expected = await sign(key, `${id}.${timestamp.trim()}.`, body);
  // Every candidate is compared in full (no early exit), so timing reveals nothing of the match.
  let matched = false;
  for (const candidate of candidates) matched = constantTimeEqual(candidate, expected) || matched;
  if (!matched) return { ok: false, reason: "signature_mismatch" };

  try {
    const text = typeof input.payload === "string" ? input.payload : new TextDecoder().decode(input.payload);
    return { ok: true, id, timestamp: sentAt, event: JSON.parse(text) as WebhookEvent };
  } catch {
    return { ok: false, reason: "malformed_payload" };
  }
}

const encoder = new TextEncoder();

function readHeader(headers: WebhookHeaders, name: string): string | null {
  if (typeof headers.get === "function") return headers.get(name);
  const record = headers as Record<string, string | string[] | undefined>;
  for (const [key, value] of Object.entries(record)) {
    if (key.toLowerCase() !== name) continue;
    return (Array.isArray(value) ? value[0] : value) ?? null;
  }
  return null;
}

function toMs(at: Date | number): number {
  return typeof at === "number" ? at : at.getTime();
}

type HmacKey = Awaited<ReturnType<typeof importSecret>>;

/** The HMAC key of a "whsec_" + base64 secret (the prefix is optional, as in standardwebhooks). */
async function importSecret(secret: string) {
  const encoded = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  let raw: Uint8Array<ArrayBuffer>;
  try {
    raw = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
  } catch {
    throw new TypeError('The webhook secret must be "whsec_" followed by base64');
  }
  if (raw.length === 0) throw new TypeError("The webhook secret is empty");
  return globalThis.crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

async function sign(key: HmacKey, prefix: string, body: Uint8Array): Promise<string> {
  const head = encoder.encode(prefix);
  const message = new Uint8Array(head.length + body.length);
  message.set(head);
  message.set(body, head.length);
  const mac = new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", key, message));
  return btoa(String.fromCharCode(...mac));
}

/** Compares two strings without an early exit (lengths are public: a SHA-256 MAC is 44 chars). */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
