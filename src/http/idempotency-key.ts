import { validationError } from "../lib/app-error.ts";

const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** Reads the optional Idempotency-Key header (Stripe's convention) of a request that creates a task. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return null;
  const key = value.trim();
  if (key === "" || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw validationError("Invalid Idempotency-Key header", [
      { field: "Idempotency-Key", reason: `must be 1-${MAX_IDEMPOTENCY_KEY_LENGTH} characters` },
    ]);
  }
  return key;
}
