// The database being out of reach answers 503 SERVICE_UNAVAILABLE with Retry-After, mapped in one
// place (http/errors.ts with db/client.ts's classifier), for every way it shows: a refused or
// dropped connection (the adapter's DatabaseUnavailableError, with no SQLSTATE), a pool connect
// timeout, the server's shutdown codes and class 08, and an error caused by one of those.
// Statement errors stay 500. The real server under a real outage:
// test/integration/faults/db-outage.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DatabaseUnavailableError, isDatabaseUnavailable } from "../../../src/db/client.ts";
import { DATABASE_RETRY_AFTER_SECONDS, mapError } from "../../../src/http/errors.ts";
import { AppError, serviceUnavailable } from "../../../src/lib/app-error.ts";

const withCode = (code: string, message = "server said so"): Error =>
  Object.assign(new Error(message), { code });

const OUTAGES: Array<[string, unknown]> = [
  [
    "connection refused",
    new DatabaseUnavailableError(withCode("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432")),
  ],
  ["terminated mid-query", new DatabaseUnavailableError(new Error("Connection terminated unexpectedly"))],
  [
    "pool connect timeout",
    new DatabaseUnavailableError(new Error("timeout exceeded when trying to connect")),
  ],
  ["57P01 admin_shutdown", withCode("57P01", "terminating connection due to administrator command")],
  ["57P02 crash_shutdown", withCode("57P02")],
  ["57P03 cannot_connect_now", withCode("57P03", "the database system is starting up")],
  ["53300 too_many_connections", withCode("53300")],
  [
    "53100 disk_full (the server's disk)",
    withCode("53100", "could not extend file: No space left on device"),
  ],
  ["08006 connection_failure", withCode("08006")],
  ["08001 unable to connect", withCode("08001")],
  ["08P01 protocol_violation", withCode("08P01")],
  [
    "a host slot not taken because the slot table did not answer",
    new Error("SMTP slots of mx.example.com unavailable", {
      cause: new DatabaseUnavailableError(new Error("Connection terminated unexpectedly")),
    }),
  ],
];

for (const [name, error] of OUTAGES) {
  test(`${name} → 503 SERVICE_UNAVAILABLE with Retry-After, a warning, not a fault`, () => {
    assert.equal(isDatabaseUnavailable(error), true);
    const mapped = mapError(error, isDatabaseUnavailable);
    assert.equal(mapped.status, 503);
    assert.equal(mapped.body.error.code, "SERVICE_UNAVAILABLE");
    assert.equal(mapped.headers?.["retry-after"], String(DATABASE_RETRY_AFTER_SECONDS));
    assert.doesNotMatch(mapped.body.error.message, /ECONNREFUSED|terminat|timeout exceeded|administrator/);
    assert.equal(mapped.isServerFault, false);
    assert.equal(mapped.isOutage, true);
  });
}

const FAULTS: Array<[string, unknown]> = [
  ["23505 unique_violation", withCode("23505")],
  ["42P01 undefined_table", withCode("42P01")],
  ["57014 query_canceled", withCode("57014")],
  ["a programming error", new TypeError("x is not a function")],
  ["an errno that is not the database's", withCode("ECONNREFUSED")],
];

for (const [name, error] of FAULTS) {
  test(`${name} → 500 INTERNAL_ERROR, a fault`, () => {
    assert.equal(isDatabaseUnavailable(error), false);
    const mapped = mapError(error, isDatabaseUnavailable);
    assert.equal(mapped.status, 500);
    assert.equal(mapped.isServerFault, true);
  });
}

test("without the classifier nothing is an outage (the default of mapError)", () => {
  assert.equal(mapError(new DatabaseUnavailableError(new Error("down"))).status, 500);
});

test("an AppError is never reclassified; SERVICE_UNAVAILABLE thrown directly is an outage too", () => {
  const thrown = serviceUnavailable("Data directory nearly full", 30);
  const mapped = mapError(thrown, () => true);
  assert.equal(mapped.status, 503);
  assert.equal(mapped.body.error.message, "Data directory nearly full");
  assert.equal(mapped.headers?.["retry-after"], "30");
  assert.equal(mapped.isOutage, true);
  assert.equal(mapped.isServerFault, false);
  assert.equal(mapError(new AppError("NOT_FOUND", "x"), () => true).status, 404);
});
