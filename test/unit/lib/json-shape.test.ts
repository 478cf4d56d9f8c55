import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { jsonShapeExcess } from "../../../src/lib/json-shape.ts";

const limits = { maxDepth: 4, maxArrayItems: 3 };

test("within the limits: null", () => {
  for (const text of [
    "{}",
    "[]",
    '{"emails":["a","b","c"]}',
    '{"a":{"b":{"c":[1]}}}',
    '"just a string with [[[[ and ,,,, inside"',
    '{"k":"quote \\" and [ , inside a string","l":[1,2,3]}',
    "not json at all",
  ]) {
    assert.equal(jsonShapeExcess(text, limits), null, text);
  }
});

test("too many items in one array names the array's field", () => {
  assert.deepEqual(jsonShapeExcess('{"emails":[1,2,3,4]}', limits), {
    field: "emails",
    reason: "has more than 3 items",
  });
  assert.deepEqual(jsonShapeExcess("[1,2,3,4]", limits), { field: "body", reason: "has more than 3 items" });
  assert.deepEqual(jsonShapeExcess('{"a":{"list":[[1,2,3,4]]}}', limits), {
    field: "a.list[]",
    reason: "has more than 3 items",
  });
});

test("commas inside strings and in objects are not array items", () => {
  assert.equal(jsonShapeExcess('{"emails":["a,b,c,d,e","f"]}', limits), null);
  assert.equal(jsonShapeExcess('{"a":1,"b":2,"c":3,"d":4,"e":5}', limits), null);
  assert.equal(jsonShapeExcess('{"list":[{"a":1,"b":2,"c":3,"d":4}]}', limits), null);
});

test("too deep names the path, runs of arrays said once", () => {
  assert.deepEqual(jsonShapeExcess('{"emails":[[[[]]]]}', limits), {
    field: "emails[]",
    reason: "nests deeper than 4 levels",
  });
  assert.deepEqual(jsonShapeExcess('{"a":{"b":{"c":{"d":{}}}}}', limits), {
    field: "a.b.c",
    reason: "nests deeper than 4 levels",
  });
});

test("keys are read after escapes and only in key position", () => {
  assert.deepEqual(jsonShapeExcess('{"x":"v","e\\"k":[1,2,3,4]}', limits), {
    field: 'e\\"k',
    reason: "has more than 3 items",
  });
});

test("agrees with JSON.parse on any value: an excess is reported exactly when the parsed value has one", () => {
  const depthOf = (v: unknown): number =>
    Array.isArray(v)
      ? 1 + Math.max(0, ...v.map(depthOf))
      : v && typeof v === "object"
        ? 1 + Math.max(0, ...Object.values(v).map(depthOf))
        : 0;
  const longest = (v: unknown): number =>
    Array.isArray(v)
      ? Math.max(v.length, ...v.map(longest))
      : v && typeof v === "object"
        ? Math.max(0, ...Object.values(v).map(longest))
        : 0;
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
      const text = JSON.stringify(value);
      const excess = jsonShapeExcess(text, limits) !== null;
      assert.equal(excess, depthOf(value) > limits.maxDepth || longest(value) > limits.maxArrayItems, text);
    }),
    { numRuns: 2_000, seed: 20_261_125 },
  );
});
