// The SDK's error reading (sdk/src/index.ts) on responses a real deployment can produce besides
// the happy path: the spec's envelope with Retry-After, a proxy's non-JSON error page, an empty
// 204. The envelope cases against the live server are in test/integration/sdk/client.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { isMailprobeError, MailprobeError, unwrap } from "../../../sdk/src/index.ts";

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

test("429 envelope: code, message, Retry-After seconds and request id", async () => {
  const body = { error: { code: "RATE_LIMITED", message: "Too many requests, retry later" } };
  const response = json(429, body, { "retry-after": "3", "x-request-id": "req-1" });
  const error = await unwrap({ error: body, response }).then(
    () => assert.fail("expected a rejection"),
    (e: unknown) => e,
  );
  assert.ok(isMailprobeError(error, "RATE_LIMITED"));
  assert.equal(error.status, 429);
  assert.equal(error.retryAfterSeconds, 3);
  assert.equal(error.requestId, "req-1");
  assert.deepEqual(error.details, []);
  assert.equal(error.name, "MailprobeError");
  assert.ok(error instanceof Error);
});

test("details, truncation count and extra members (408 result) stay reachable", () => {
  const body = {
    error: { code: "VERIFICATION_TIMEOUT", message: "timed out", details: [{ field: "email", reason: "x" }] },
    result: { status: "unknown", unknown_reason: "smtp_timeout" },
  };
  const error = MailprobeError.fromResponse(json(408, body), body);
  assert.equal(error.code, "VERIFICATION_TIMEOUT");
  assert.deepEqual(error.details, [{ field: "email", reason: "x" }]);
  assert.deepEqual((error.body as typeof body).result.unknown_reason, "smtp_timeout");
  assert.equal(error.retryAfterSeconds, null);
});

test("a non-envelope body (a proxy's 502 page) becomes HTTP_502 with the status text", () => {
  const response = new Response("<html>Bad gateway</html>", { status: 502, statusText: "Bad Gateway" });
  const error = MailprobeError.fromResponse(response, "<html>Bad gateway</html>");
  assert.equal(error.code, "HTTP_502");
  assert.equal(error.message, "HTTP 502 Bad Gateway");
  assert.equal(error.requestId, null);
  assert.equal(error.body, "<html>Bad gateway</html>");
});

test("an HTTP-date Retry-After is not a number of seconds: null", () => {
  const body = { error: { code: "RATE_LIMITED", message: "slow down" } };
  const error = MailprobeError.fromResponse(
    json(429, body, { "retry-after": "Wed, 21 Oct 2026 07:28:00 GMT" }),
    body,
  );
  assert.equal(error.retryAfterSeconds, null);
});

test("the status decides: a 2xx without a body resolves, an error without a body rejects", async () => {
  assert.equal(await unwrap({ data: undefined, response: new Response(null, { status: 204 }) }), undefined);
  await assert.rejects(unwrap({ response: new Response(null, { status: 404 }) }), (e: unknown) =>
    isMailprobeError(e, "HTTP_404"),
  );
});
