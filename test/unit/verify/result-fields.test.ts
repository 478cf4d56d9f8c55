import assert from "node:assert/strict";
import { test } from "node:test";
import { VerificationReply } from "../../../src/http/schemas/verification.ts";
import {
  cellsInOrder,
  columnsNamed,
  FILE_COLUMNS,
  pickResultFields,
  RESULT_FIELDS,
  resultCells,
  resultFieldsJson,
} from "../../../src/verify/result-fields.ts";
import type { VerificationResult } from "../../../src/verify/types.ts";

const result: VerificationResult = {
  email: "ann@example.test",
  status: "unknown",
  isRoleBased: false,
  isDisposable: true,
  hasMxRecords: true,
  hasReverseDns: false,
  domainName: "example.test",
  hostName: "mx.example.test",
  serverType: "postfix",
  isCatchall: false,
  validatedAt: new Date("2024-05-06T07:08:09.010Z"),
  unknownReason: "greylisted",
  needsPhysicalVerify: true,
  didYouMean: null,
  isFreeProvider: false,
  checks: {
    syntax: { status: "passed", reason: null },
    dns: { status: "passed", reason: null },
    mx: { status: "passed", reason: "mx_records" },
    reverse_dns: { status: "failed", reason: "no_ptr" },
    smtp: { status: "error", reason: "greylisted" },
  },
  evidence: "450 4.2.0 greylisted",
  retryAfterMs: 300_000,
};

/** The engine's properties that are not public result fields. */
const INTERNAL = ["evidence", "retryAfterMs", "dependencyFailure"];

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

void test("every public property of a VerificationResult is in the table exactly once", () => {
  const keys = RESULT_FIELDS.map((f) => f.key);
  assert.equal(new Set(keys).size, keys.length);
  assert.deepEqual(
    [...keys].sort(),
    Object.keys(result)
      .filter((k) => !INTERNAL.includes(k))
      .sort(),
  );
  assert.equal(new Set(RESULT_FIELDS.map((f) => f.name)).size, RESULT_FIELDS.length);
});

void test("each field's name is its key in snake_case", () => {
  for (const f of RESULT_FIELDS) assert.equal(f.name, snake(f.key));
});

void test("the table follows the spec's result field order (the API's JSON order), then the extensions", () => {
  assert.deepEqual(
    RESULT_FIELDS.map((f) => f.name),
    "email,status,is_role_based,is_disposable,has_mx_records,has_reverse_dns,domain_name,host_name,server_type,is_catchall,validated_at,unknown_reason,needs_physical_verify,did_you_mean,is_free_provider,checks".split(
      ",",
    ),
  );
});

void test("download columns are DESIGN §5's list plus the extensions, validated_at, then one column per check", () => {
  assert.deepEqual(
    FILE_COLUMNS.map((c) => c.name),
    "email,status,is_role_based,is_disposable,has_mx_records,has_reverse_dns,domain_name,host_name,server_type,is_catchall,unknown_reason,needs_physical_verify,did_you_mean,is_free_provider,validated_at,check_syntax,check_dns,check_mx,check_reverse_dns,check_smtp".split(
      ",",
    ),
  );
});

void test("resultFieldsJson: snake_case keys in table order, RFC 3339 time, null reason kept", () => {
  const json = resultFieldsJson(result);
  assert.deepEqual(
    Object.keys(json),
    RESULT_FIELDS.map((f) => f.name),
  );
  assert.deepEqual(json, {
    email: "ann@example.test",
    status: "unknown",
    is_role_based: false,
    is_disposable: true,
    has_mx_records: true,
    has_reverse_dns: false,
    domain_name: "example.test",
    host_name: "mx.example.test",
    server_type: "postfix",
    is_catchall: false,
    validated_at: "2024-05-06T07:08:09.010Z",
    unknown_reason: "greylisted",
    needs_physical_verify: true,
    did_you_mean: null,
    is_free_provider: false,
    checks: result.checks,
  });
  assert.equal(resultFieldsJson({ ...result, unknownReason: null }).unknown_reason, null);
  assert.equal(resultFieldsJson({ ...result, didYouMean: "ann@gmail.com" }).did_you_mean, "ann@gmail.com");
});

void test("file cells: booleans stay typed, a null reason is blank, missing cells are blank", () => {
  assert.deepEqual(
    cellsInOrder(
      resultCells({ ...result, unknownReason: null, didYouMean: "ann@gmail.com", isFreeProvider: true }),
    ),
    [
      "ann@example.test",
      "unknown",
      false,
      true,
      true,
      false,
      "example.test",
      "mx.example.test",
      "postfix",
      false,
      "",
      true,
      "ann@gmail.com",
      true,
      "2024-05-06T07:08:09.010Z",
      "passed",
      "passed",
      "passed",
      "failed",
      "error",
    ],
  );
  assert.deepEqual(
    cellsInOrder({ email: "x@y.test", status: "pending" }, columnsNamed(["status", "email"])),
    ["pending", "x@y.test"],
  );
  assert.deepEqual(
    cellsInOrder({}),
    FILE_COLUMNS.map(() => ""),
  );
});

void test("pickResultFields drops the engine's internal properties", () => {
  const picked = pickResultFields(result);
  assert.ok(!("evidence" in picked) && !("retryAfterMs" in picked));
  assert.deepEqual(
    Object.keys(picked),
    RESULT_FIELDS.map((f) => f.key),
  );
});

void test("the API schema is id plus the table's fields, the spec's required, the extensions optional", () => {
  const names = ["id", ...RESULT_FIELDS.map((f) => f.name)];
  assert.deepEqual(Object.keys(VerificationReply.properties), names);
  assert.deepEqual(VerificationReply.required, [
    "id",
    ...RESULT_FIELDS.filter((f) => f.extension === null).map((f) => f.name),
  ]);
  assert.deepEqual(
    RESULT_FIELDS.filter((f) => f.extension !== null).map((f) => f.name),
    ["did_you_mean", "is_free_provider", "checks"],
  );
  assert.match(
    String((VerificationReply.properties.did_you_mean as { description?: unknown }).description),
    /typo of a popular mail domain/,
  );
  assert.equal(VerificationReply.properties.is_free_provider.type, "boolean");
  assert.deepEqual(VerificationReply.properties.unknown_reason, {
    anyOf: [{ type: "string" }, { type: "null" }],
  });
  // One named enum component (VerificationStatus), not a union of single-value enums.
  assert.deepEqual(VerificationReply.properties.status, { $ref: "VerificationStatus#" });
  assert.deepEqual(VerificationReply.properties.checks, {
    $ref: "ResultChecks#",
    description: RESULT_FIELDS.find((f) => f.name === "checks")?.extension?.description,
  });
});
