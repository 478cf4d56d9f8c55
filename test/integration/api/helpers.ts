// Shared assertions for the HTTP tests: the spec's error envelope, and the authentication matrix
// every protected route must pass (unkey's "security test generator").
import assert from "node:assert/strict";
import { test } from "node:test";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import type { TestContext, TestUser } from "../../support/test-app.ts";

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface FieldDetail {
  field: string;
  reason: string;
}

/**
 * Asserts the standard error body `{ error: { code, message, details? } }` with an exact status and
 * code. `details` (when given) must match exactly, in order; `null` asserts that there are none.
 */
export function assertError(
  res: LightMyRequestResponse,
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

/** The fields named by an error's details, sorted (for checks that don't care about reasons' order). */
export const detailFields = (res: LightMyRequestResponse): string[] =>
  (res.json<{ error: { details?: FieldDetail[] } }>().error.details ?? []).map((d) => d.field).sort();

export interface ProtectedRoute {
  method: NonNullable<InjectOptions["method"]>;
  url: string;
  payload?: InjectOptions["payload"];
}

/**
 * Registers, for each route, the requests that must all be refused with 401 UNAUTHORIZED before
 * the route does anything: no credential, a garbage key, a well-formed but unknown key, a Basic
 * header, an empty Bearer, and a key sent under the wrong scheme.
 */
export function describeAuthMatrix(getCtx: () => TestContext, routes: ProtectedRoute[]): void {
  const cases: Array<[string, (u: TestUser) => Record<string, string>]> = [
    ["no credentials", () => ({})],
    ["a garbage bearer token", () => ({ authorization: "Bearer not-a-key" })],
    ["a well-formed key that was never issued", () => ({ authorization: `Bearer mpk_${"A".repeat(40)}` })],
    ["a garbage X-API-Key", () => ({ "x-api-key": "garbage" })],
    [
      "Basic credentials",
      (u) => ({ authorization: `Basic ${Buffer.from(`${u.userId}:${u.apiKey}`).toString("base64")}` }),
    ],
    ["an empty Bearer", () => ({ authorization: "Bearer " })],
    ["a valid key under another scheme", (u) => ({ authorization: `Token ${u.apiKey}` })],
  ];
  for (const route of routes) {
    for (const [label, headers] of cases) {
      test(`${route.method} ${route.url} with ${label} → 401 UNAUTHORIZED`, async () => {
        const ctx = getCtx();
        const user = await ctx.createUser(5);
        const res = await ctx.app.inject({
          method: route.method,
          url: route.url,
          headers: headers(user),
          ...(route.payload !== undefined ? { payload: route.payload } : {}),
        });
        assertError(res, 401, "UNAUTHORIZED", null);
      });
    }
  }
}
