// The report date-range rules (src/reports/date-range.ts) as pure functions: RFC 3339 parsing,
// "from/to together", to >= from, at most 90 days, and the list of UTC days of a series.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  MAX_RANGE_DAYS,
  parseDateRange,
  parseRfc3339,
  utcDaysOf,
  windowOf,
  type DateRangeOutcome,
} from "../../../src/reports/date-range.ts";

const FORMAT_REASON = "must be an RFC 3339 date-time with an offset, e.g. 2026-01-31T00:00:00Z";
const DAY_MS = 86_400_000;

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

describe("parseRfc3339", () => {
  const accepted: Array<[string, string]> = [
    ["2026-03-01T00:00:00Z", "2026-03-01T00:00:00.000Z"],
    ["2026-03-01t10:20:30z", "2026-03-01T10:20:30.000Z"],
    ["2026-03-01T10:20:30.5Z", "2026-03-01T10:20:30.500Z"],
    ["2026-03-01T10:20:30.123Z", "2026-03-01T10:20:30.123Z"],
    // Beyond milliseconds: truncated, never rounded up into the next millisecond.
    ["2026-03-01T10:20:30.123999999Z", "2026-03-01T10:20:30.123Z"],
    ["2026-03-01T07:00:00+01:00", "2026-03-01T06:00:00.000Z"],
    ["2026-03-01T00:30:00+05:30", "2026-02-28T19:00:00.000Z"],
    ["2026-02-28T22:00:00-03:00", "2026-03-01T01:00:00.000Z"],
    ["2026-03-01T00:00:00-00:00", "2026-03-01T00:00:00.000Z"],
    ["2024-02-29T12:00:00Z", "2024-02-29T12:00:00.000Z"],
    ["2026-12-31T23:59:59.999Z", "2026-12-31T23:59:59.999Z"],
    ["0050-06-01T00:00:00Z", "0050-06-01T00:00:00.000Z"],
  ];
  for (const [text, expected] of accepted) {
    test(`${text} → ${expected}`, () => assert.equal(iso(parseRfc3339(text)), expected));
  }

  const rejected: Array<[string, string]> = [
    ["", "empty"],
    ["yesterday", "not a date"],
    ["2026-03-01", "date only"],
    ["2026-03-01T00:00:00", "no offset"],
    ["2026-03-01 00:00:00Z", "space instead of T"],
    // A '+' that was not URL-encoded arrives as a space.
    ["2026-03-01T00:00:00 01:00", "offset sign lost to URL decoding"],
    ["2026-03-01T00:00Z", "no seconds"],
    ["2026-3-01T00:00:00Z", "one-digit month"],
    ["2026-02-30T00:00:00Z", "30 February"],
    ["2025-02-29T00:00:00Z", "29 February of a common year"],
    ["2026-13-01T00:00:00Z", "month 13"],
    ["2026-00-10T00:00:00Z", "month 0"],
    ["2026-04-31T00:00:00Z", "31 April"],
    ["2026-03-01T24:00:00Z", "hour 24"],
    ["2026-03-01T10:60:00Z", "minute 60"],
    ["2026-12-31T23:59:60Z", "leap second"],
    ["2026-03-01T00:00:00+24:00", "offset hour 24"],
    ["2026-03-01T00:00:00+01:60", "offset minute 60"],
    ["2026-03-01T00:00:00+0100", "offset without colon"],
    ["2026-03-01T00:00:00.Z", "empty fraction"],
    ["9999-12-31T23:00:00-02:00", "year 10000 in UTC"],
    ["0000-01-01T00:00:00Z", "year 0"],
    ["1772323200000", "epoch milliseconds"],
    [" 2026-03-01T00:00:00Z", "leading space"],
  ];
  for (const [text, why] of rejected) {
    test(`rejects ${JSON.stringify(text)} (${why})`, () => assert.equal(parseRfc3339(text), null));
  }
});

describe("parseDateRange", () => {
  const ok = (o: DateRangeOutcome) => {
    assert.ok(o.ok, `expected ok, got ${JSON.stringify(o)}`);
    return o.range;
  };
  const errors = (o: DateRangeOutcome) => {
    assert.ok(!o.ok, `expected errors, got ${JSON.stringify(o)}`);
    return o.errors;
  };

  test("required: both missing → both fields named", () => {
    assert.deepEqual(errors(parseDateRange({}, { required: true })), [
      { field: "from", reason: "is required" },
      { field: "to", reason: "is required" },
    ]);
  });

  test("optional: both missing → no range", () => {
    assert.equal(ok(parseDateRange({}, { required: false })), null);
  });

  test("required: one missing → that field", () => {
    assert.deepEqual(errors(parseDateRange({ to: "2026-03-02T00:00:00Z" }, { required: true })), [
      { field: "from", reason: "is required" },
    ]);
    assert.deepEqual(errors(parseDateRange({ from: "2026-03-02T00:00:00Z" }, { required: true })), [
      { field: "to", reason: "is required" },
    ]);
  });

  test("optional: one without the other → the missing one, saying they go together", () => {
    assert.deepEqual(errors(parseDateRange({ from: "2026-03-02T00:00:00Z" }, { required: false })), [
      { field: "to", reason: "is required when from is given" },
    ]);
    assert.deepEqual(errors(parseDateRange({ to: "2026-03-02T00:00:00Z" }, { required: false })), [
      { field: "from", reason: "is required when to is given" },
    ]);
  });

  test("a missing and an unparsable field are both reported", () => {
    assert.deepEqual(errors(parseDateRange({ from: "soon" }, { required: true })), [
      { field: "from", reason: FORMAT_REASON },
      { field: "to", reason: "is required" },
    ]);
  });

  test("both unparsable → both named", () => {
    assert.deepEqual(errors(parseDateRange({ from: "x", to: "" }, { required: true })), [
      { field: "from", reason: FORMAT_REASON },
      { field: "to", reason: FORMAT_REASON },
    ]);
  });

  test("reversed → to", () => {
    assert.deepEqual(
      errors(
        parseDateRange({ from: "2026-03-02T00:00:00Z", to: "2026-03-01T23:59:59.999Z" }, { required: true }),
      ),
      [{ field: "to", reason: "must not be earlier than from" }],
    );
  });

  test("reversed only once offsets are applied", () => {
    // 10:00+02:00 is 08:00Z, earlier than 09:00Z.
    assert.deepEqual(
      errors(
        parseDateRange({ from: "2026-03-01T09:00:00Z", to: "2026-03-01T10:00:00+02:00" }, { required: true }),
      ),
      [{ field: "to", reason: "must not be earlier than from" }],
    );
  });

  test("from = to is an empty but valid range", () => {
    const r = ok(
      parseDateRange({ from: "2026-03-01T12:00:00Z", to: "2026-03-01T12:00:00Z" }, { required: true }),
    );
    assert.equal(r?.to.getTime(), r?.from.getTime());
  });

  test(`exactly ${MAX_RANGE_DAYS} days is accepted`, () => {
    const r = ok(
      parseDateRange({ from: "2026-01-01T00:00:00Z", to: "2026-04-01T00:00:00Z" }, { required: true }),
    );
    assert.equal(r!.to.getTime() - r!.from.getTime(), 90 * DAY_MS);
  });

  test("90 days and 1 ms → to", () => {
    assert.deepEqual(
      errors(
        parseDateRange({ from: "2026-01-01T00:00:00Z", to: "2026-04-01T00:00:00.001Z" }, { required: true }),
      ),
      [{ field: "to", reason: "must be at most 90 days after from" }],
    );
  });

  test("91 days → to", () => {
    assert.deepEqual(
      errors(
        parseDateRange({ from: "2026-01-01T00:00:00Z", to: "2026-04-02T00:00:00Z" }, { required: true }),
      ),
      [{ field: "to", reason: "must be at most 90 days after from" }],
    );
  });

  test("the 90 days are measured between instants, offsets applied", () => {
    // 2026-04-01T01:00+01:00 = 2026-04-01T00:00Z: exactly 90 days.
    assert.ok(
      parseDateRange({ from: "2026-01-01T00:00:00Z", to: "2026-04-01T01:00:00+01:00" }, { required: true })
        .ok,
    );
    // 2026-04-01T00:00-01:00 = 01:00Z: one hour too many.
    assert.ok(
      !parseDateRange({ from: "2026-01-01T00:00:00Z", to: "2026-04-01T00:00:00-01:00" }, { required: true })
        .ok,
    );
  });
});

describe("utcDaysOf / windowOf", () => {
  const range = (from: string, to: string) => ({ from: new Date(from), to: new Date(to) });

  test("every UTC date from date(from) to date(to), both included", () => {
    assert.deepEqual(utcDaysOf(range("2026-02-27T06:00:00Z", "2026-03-02T18:00:00Z")), [
      "2026-02-27",
      "2026-02-28",
      "2026-03-01",
      "2026-03-02",
    ]);
  });

  test("a range inside one day has one day", () => {
    assert.deepEqual(utcDaysOf(range("2026-03-01T10:00:00Z", "2026-03-01T10:00:00Z")), ["2026-03-01"]);
  });

  test("a `to` at midnight still lists its date (whose point can only be zero)", () => {
    assert.deepEqual(utcDaysOf(range("2026-03-01T00:00:00Z", "2026-03-03T00:00:00Z")), [
      "2026-03-01",
      "2026-03-02",
      "2026-03-03",
    ]);
  });

  test("UTC dates, not the offset's local dates", () => {
    // 2026-03-01T23:30-02:00 is 2026-03-02T01:30Z.
    const parsed = parseDateRange(
      { from: "2026-03-01T23:30:00-02:00", to: "2026-03-02T23:00:00Z" },
      { required: true },
    );
    assert.ok(parsed.ok && parsed.range);
    assert.deepEqual(utcDaysOf(parsed.range), ["2026-03-02"]);
  });

  test("a leap day and a year boundary", () => {
    assert.deepEqual(utcDaysOf(range("2024-02-28T00:00:00Z", "2024-03-01T00:00:00Z")), [
      "2024-02-28",
      "2024-02-29",
      "2024-03-01",
    ]);
    assert.deepEqual(utcDaysOf(range("2025-12-31T23:00:00Z", "2026-01-01T01:00:00Z")), [
      "2025-12-31",
      "2026-01-01",
    ]);
  });

  test("the longest range has 91 days", () => {
    const days = utcDaysOf(range("2026-01-01T00:00:00Z", "2026-04-01T00:00:00Z"));
    assert.equal(days.length, 91);
    assert.equal(days[0], "2026-01-01");
    assert.equal(days[90], "2026-04-01");
  });

  test("windowOf: first day and the count of days after it", () => {
    assert.deepEqual(windowOf(range("2026-02-27T06:00:00Z", "2026-03-02T18:00:00Z")), {
      from: new Date("2026-02-27T06:00:00Z"),
      to: new Date("2026-03-02T18:00:00Z"),
      firstDay: "2026-02-27",
      extraDays: 3,
    });
  });
});
