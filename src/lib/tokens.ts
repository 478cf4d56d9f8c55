import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** A random base62 string; `bytes` of entropy from the CSPRNG (rejection sampling keeps it unbiased). */
export function randomToken(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}

export const sha256Hex = (text: string): string => createHash("sha256").update(text).digest("hex");

/** Constant-time string comparison (lengths are compared through fixed-size digests). */
export function safeEqual(a: string, b: string): boolean {
  const da = createHash("sha256").update(a).digest();
  const db = createHash("sha256").update(b).digest();
  return timingSafeEqual(da, db);
}

/** A new Standard Webhooks signing secret: "whsec_" + base64 of 24 random bytes. */
export const newWebhookSecret = (): string => "whsec_" + randomBytes(24).toString("base64");
