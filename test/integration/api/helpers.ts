// Shared assertions for the HTTP tests: the spec's error envelope, and the authentication matrix
// every protected route must pass (unkey's "security test generator").
import { test } from "node:test";
import type { InjectOptions } from "fastify";
import type { TestContext, TestUser } from "../../support/test-app.ts";

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

import { assertError } from "../../support/assert-error.ts";

export { assertError };

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
