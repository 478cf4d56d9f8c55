// The spec's error envelope, asserted the same way by every HTTP test.
import assert from "node:assert/strict";
import type { LightMyRequestResponse } from "fastify";

export interface FieldDetail {
  field: string;
  reason: string;
}

/**
 * Asserts the standard error body `{ error: { code, message, details? } }` with an exact status and
 * code. `details` (when given) must match exactly, in order; `null` asserts that there are none.
 */
export function assertError(
  /** An inject() answer, or any answer shaped like one (a fetch answer adapted by a test). */
  res: Pick<LightMyRequestResponse, "statusCode" | "body"> & {
    headers: Record<string, unknown>;
    json: <T>() => T;
  },
  status: number,
  code: string,
  details?: FieldDetail[] | null,
): { code: string; message: string; details?: FieldDetail[] } {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}: ${res.body}`);
  assert.match(String(res.headers["content-type"]), /^application\/json/);
  const body = res.json<{ error: { code: string; message: string; details?: FieldDetail[] } }>();
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, "string");
  assert.ok(body.error.message.length > 0, "error.message must not be empty");
  if (details === null) assert.equal(body.error.details, undefined);
  else if (details !== undefined) assert.deepEqual(body.error.details, details);
  return body.error;
}
