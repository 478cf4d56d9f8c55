import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { jsonShapeExcess } from "../../../src/lib/json-shape.ts";

const limits = { maxDepth: 4, maxArrayItems: 3, maxObjectKeys: 5, maxTotalKeys: 8 };

/** `{"k0":0,…}` with `n` properties. */
const objectOf = (n: number): string =>
  JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])));

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

test("properties per object: exactly the limit passes, one more names the object", () => {
  assert.equal(jsonShapeExcess(objectOf(5), limits), null);
  assert.deepEqual(jsonShapeExcess(objectOf(6), limits), {
    field: "body",
    reason: "has more than 5 properties",
  });
  assert.equal(jsonShapeExcess(`{"a":${objectOf(4)}}`, limits), null);
  assert.deepEqual(jsonShapeExcess(`{"a":{"b":[${objectOf(6)}]}}`, limits), {
    field: "a.b[]",
    reason: "has more than 5 properties",
  });
  // Colons and commas inside strings (keys or values) are not properties.
  assert.equal(jsonShapeExcess('{"a:b,c:d,e:f":"g:h,i:j,k:l,m:n,o:p","q":1}', limits), null);
});

test("properties in all: exactly the limit passes, one more is refused naming the body", () => {
  assert.equal(jsonShapeExcess(`[${objectOf(4)},${objectOf(4)}]`, limits), null);
  assert.deepEqual(jsonShapeExcess(`[${objectOf(4)},${objectOf(4)},{"x":1}]`, limits), {
    field: "body",
    reason: "has more than 8 properties in all",
  });
  assert.deepEqual(jsonShapeExcess(`{"a":${objectOf(4)},"b":${objectOf(3)}}`, limits), {
    field: "body",
    reason: "has more than 8 properties in all",
  });
});

test("thousands separators in the reasons", () => {
  const big = { maxDepth: 32, maxArrayItems: 100_000, maxObjectKeys: 1_000, maxTotalKeys: 10_000 };
  assert.equal(jsonShapeExcess(objectOf(1_000), big), null);
  assert.deepEqual(jsonShapeExcess(objectOf(1_001), big), {
    field: "body",
    reason: "has more than 1,000 properties",
  });
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
  const widest = (v: unknown): number =>
    Array.isArray(v)
      ? Math.max(0, ...v.map(widest))
      : v && typeof v === "object"
        ? Math.max(Object.keys(v).length, ...Object.values(v).map(widest))
        : 0;
  const keysInAll = (v: unknown): number =>
    Array.isArray(v)
      ? v.reduce((n: number, x) => n + keysInAll(x), 0)
      : v && typeof v === "object"
        ? Object.values(v).reduce((n: number, x) => n + keysInAll(x), Object.keys(v).length)
        : 0;
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
      const text = JSON.stringify(value);
      const excess = jsonShapeExcess(text, limits) !== null;
      const over =
        depthOf(value) > limits.maxDepth ||
        longest(value) > limits.maxArrayItems ||
        widest(value) > limits.maxObjectKeys ||
        keysInAll(value) > limits.maxTotalKeys;
      assert.equal(excess, over, text);
    }),
    { numRuns: 2_000, seed: 20_261_125 },
  );
});
