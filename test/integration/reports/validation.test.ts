// Every 400 of the report endpoints: VALIDATION_ERROR with a detail naming the field; and the
// authentication matrix (401 before anything else).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError, describeAuthMatrix } from "../api/helpers.ts";

let ctx: TestContext;
let user: TestUser;
before(async () => {
  ctx = await createTestContext();
  user = await ctx.createUser(0);
});
after(async () => {
  await ctx.close();
});

const get = (url: string) => ctx.app.inject({ method: "GET", url, headers: ctx.bearer(user.apiKey) });

const FORMAT = "must be an RFC 3339 date-time with an offset, e.g. 2026-01-31T00:00:00Z";
const OK_FROM = "2026-01-01T00:00:00Z";
const OK_TO = "2026-01-31T00:00:00Z";

const USAGE_PATHS = ["/api/v1/credits/usage", "/api/v1/credits/usage/api-keys"];

describe("credit usage endpoints: the date range is required and checked", () => {
  for (const path of USAGE_PATHS) {
    const cases: Array<[string, string, Array<{ field: string; reason: string }>]> = [
      ["missing from", `to=${OK_TO}`, [{ field: "from", reason: "is required" }]],
      ["missing to", `from=${OK_FROM}`, [{ field: "to", reason: "is required" }]],
      [
        "missing both",
        "",
        [
          { field: "from", reason: "is required" },
          { field: "to", reason: "is required" },
        ],
      ],
      ["unparsable from", `from=yesterday&to=${OK_TO}`, [{ field: "from", reason: FORMAT }]],
      ["unparsable to", `from=${OK_FROM}&to=2026-02-30T00:00:00Z`, [{ field: "to", reason: FORMAT }]],
      ["from without an offset", `from=2026-01-01T00:00:00&to=${OK_TO}`, [{ field: "from", reason: FORMAT }]],
      ["a date without a time", `from=2026-01-01&to=${OK_TO}`, [{ field: "from", reason: FORMAT }]],
      // An unencoded '+' arrives as a space.
      [
        "an offset whose + was not URL-encoded",
        `from=2026-01-01T00:00:00+01:00&to=${OK_TO}`,
        [{ field: "from", reason: FORMAT }],
      ],
      [
        "empty from and to",
        "from=&to=",
        [
          { field: "from", reason: FORMAT },
          { field: "to", reason: FORMAT },
        ],
      ],
      ["reversed", `from=${OK_TO}&to=${OK_FROM}`, [{ field: "to", reason: "must not be earlier than from" }]],
      [
        "91 days",
        "from=2026-01-01T00:00:00Z&to=2026-04-02T00:00:00Z",
        [{ field: "to", reason: "must be at most 90 days after from" }],
      ],
      [
        "90 days and 1 ms",
        "from=2026-01-01T00:00:00Z&to=2026-04-01T00:00:00.001Z",
        [{ field: "to", reason: "must be at most 90 days after from" }],
      ],
      [
        "an unknown parameter",
        `from=${OK_FROM}&to=${OK_TO}&limit=5`,
        [{ field: "limit", reason: "is not allowed" }],
      ],
    ];
    for (const [label, query, details] of cases) {
      test(`${path}: ${label} → 400 VALIDATION_ERROR naming ${details.map((d) => d.field).join(", ")}`, async () => {
        assertError(await get(`${path}?${query}`), 400, "VALIDATION_ERROR", details);
      });
    }

    test(`${path}: exactly 90 days → 200`, async () => {
      const res = await get(`${path}?from=2026-01-01T00:00:00Z&to=2026-04-01T00:00:00Z`);
      assert.equal(res.statusCode, 200, res.body);
    });

    test(`${path}: 90 days written with offsets → 200`, async () => {
      const res = await get(`${path}?from=2026-01-01T01:00:00%2B01:00&to=2026-03-31T22:00:00-02:00`);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        [res.json().from, res.json().to],
        ["2026-01-01T00:00:00.000Z", "2026-04-01T00:00:00.000Z"],
      );
    });
  }

  const sources: Array<[string, string]> = [
    ["an unknown source", "everything"],
    ["a source in the wrong case", "API_KEY"],
    ["an empty source", ""],
  ];
  for (const [label, source] of sources) {
    test(`/api/v1/credits/usage: ${label} → 400 naming source`, async () => {
      const res = await get(`/api/v1/credits/usage?from=${OK_FROM}&to=${OK_TO}&source=${source}`);
      assertError(res, 400, "VALIDATION_ERROR", [
        { field: "source", reason: "must be equal to one of the allowed values" },
      ]);
    });
  }

  test("/api/v1/credits/usage: a bad source and a bad date are reported together", async () => {
    const res = await get(`/api/v1/credits/usage?to=${OK_TO}&source=nope`);
    assertError(res, 400, "VALIDATION_ERROR", [
      { field: "from", reason: "is required" },
      { field: "source", reason: "must be equal to one of the allowed values" },
    ]);
  });

  for (const [label, id] of [
    ["not a UUID", "not-a-uuid"],
    ["a UUID missing a digit", "0b9a2c2e-5f7e-4c43-9a1e-3c2d1b0a9f8"],
    ["an empty id", ""],
  ] as const) {
    test(`/api/v1/credits/usage/api-keys: api_key_id ${label} → 400 naming api_key_id`, async () => {
      const res = await get(`/api/v1/credits/usage/api-keys?from=${OK_FROM}&to=${OK_TO}&api_key_id=${id}`);
      assertError(res, 400, "VALIDATION_ERROR", [{ field: "api_key_id", reason: "must be a valid uuid" }]);
    });
  }
});

describe("metrics: from/to optional, a series only with both, and checked", () => {
  const cases: Array<[string, string, Array<{ field: string; reason: string }>]> = [
    ["unparsable from alone", "from=yesterday", [{ field: "from", reason: FORMAT }]],
    ["unparsable to alone", "to=2026-02-30T00:00:00Z", [{ field: "to", reason: FORMAT }]],
    ["unparsable from", `from=2026-13-01T00:00:00Z&to=${OK_TO}`, [{ field: "from", reason: FORMAT }]],
    ["unparsable to", `from=${OK_FROM}&to=tomorrow`, [{ field: "to", reason: FORMAT }]],
    ["reversed", `from=${OK_TO}&to=${OK_FROM}`, [{ field: "to", reason: "must not be earlier than from" }]],
    [
      "91 days",
      "from=2026-01-01T00:00:00Z&to=2026-04-02T00:00:00Z",
      [{ field: "to", reason: "must be at most 90 days after from" }],
    ],
    ["an unknown parameter", "source=all", [{ field: "source", reason: "is not allowed" }]],
  ];
  for (const [label, query, details] of cases) {
    test(`${label} → 400 VALIDATION_ERROR naming ${details.map((d) => d.field).join(", ")}`, async () => {
      assertError(await get(`/api/v1/metrics/verifications?${query}`), 400, "VALIDATION_ERROR", details);
    });
  }

  test("only from, or only to → 200 without a series (spec: series only when both are given)", async () => {
    for (const query of [
      `from=${OK_FROM}`,
      `to=${OK_TO}`,
      "from=2000-01-01T00:00:00Z",
      "to=9999-12-31T23:59:59Z",
    ]) {
      const res = await get(`/api/v1/metrics/verifications?${query}`);
      assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
      assert.equal("series" in res.json(), false, query);
    }
  });

  test("exactly 90 days → 200 with 91 points", async () => {
    const res = await get("/api/v1/metrics/verifications?from=2026-01-01T00:00:00Z&to=2026-04-01T00:00:00Z");
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().series.length, 91);
  });
});

describe("authentication", () => {
  describeAuthMatrix(
    () => ctx,
    [
      { method: "GET", url: `/api/v1/credits/usage?from=${OK_FROM}&to=${OK_TO}` },
      { method: "GET", url: `/api/v1/credits/usage/api-keys?from=${OK_FROM}&to=${OK_TO}` },
      { method: "GET", url: "/api/v1/metrics/verifications" },
    ],
  );

  test("credentials are checked before the query: a bad range without a key → 401", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/api/v1/credits/usage?from=nope" });
    assertError(res, 401, "UNAUTHORIZED", null);
  });
});
