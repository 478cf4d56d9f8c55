import type { FieldError } from "../lib/app-error.ts";

// The date-range rules shared by every report (spec "Limits": 90 days), as pure functions.
//
// A range is the half-open interval [from, to): a row stamped exactly `to` belongs to the next
// range. Consecutive ranges (…&to=2026-02-01T00:00:00Z, then from=2026-02-01T00:00:00Z…) tile
// the timeline with no gap and no overlap, so monthly statements add up to the ledger exactly.
// The daily series lists every UTC date from date(from) to date(to), both included; each point
// counts only the rows of its day that fall inside [from, to), so the points sum to the totals.

/** Longest range a report accepts: `to - from` may be exactly this, not a millisecond more. */
export const MAX_RANGE_DAYS = 90;

const DAY_MS = 86_400_000;

/** A validated range: from <= to, to - from <= MAX_RANGE_DAYS days. */
export interface DateRange {
  from: Date;
  to: Date;
}

export type DateRangeOutcome = { ok: true; range: DateRange | null } | { ok: false; errors: FieldError[] };

export interface DateRangeInput {
  from?: string | undefined;
  to?: string | undefined;
}

// RFC 3339 `date-time` (section 5.6): full-date "T" full-time, with a mandatory offset. "T" and
// "Z" may be lowercase (5.6, NOTE). Any number of fractional digits is read; see parseRfc3339.
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

export const RFC3339_REASON = "must be an RFC 3339 date-time with an offset, e.g. 2026-01-31T00:00:00Z";

function daysInMonth(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0); // day 0 of the next month = last day of this one
  return d.getUTCDate();
}

/**
 * Parses an RFC 3339 date-time into the instant it names, or null. Rejects calendar-invalid
 * values (2026-02-30), leap seconds (:60, which a JS Date can't hold) and instants outside the
 * UTC years 0001-9999. Fractional seconds
 * beyond milliseconds are truncated: both ends of a range are truncated the same way, so
 * adjacent ranges still tile exactly.
 */
export function parseRfc3339(text: string): Date | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const fraction = m[7] ?? "";
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (m[9] !== undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day); // not Date.UTC: it maps years 0-99 to 1900-1999
  d.setUTCHours(hour, minute, second, Number(fraction.slice(0, 3).padEnd(3, "0")));
  const instant = new Date(d.getTime() - offsetMinutes * 60_000);
  // An offset can push 0000-01-01 or 9999-12-31 out of the four-digit years dates are printed in.
  const utcYear = instant.getUTCFullYear();
  return utcYear >= 1 && utcYear <= 9999 ? instant : null;
}

/**
 * Validates `from`/`to` of a report query. They go together: with `required` both must be
 * present; without it both or neither (neither → `range: null`). Every problem is reported at
 * once, each naming its field.
 */
export function parseDateRange(input: DateRangeInput, opts: { required: boolean }): DateRangeOutcome {
  const hasFrom = input.from !== undefined;
  const hasTo = input.to !== undefined;
  if (!hasFrom && !hasTo) {
    return opts.required
      ? {
          ok: false,
          errors: [
            { field: "from", reason: "is required" },
            { field: "to", reason: "is required" },
          ],
        }
      : { ok: true, range: null };
  }
  const errors: FieldError[] = [];
  const read = (field: "from" | "to", value: string | undefined, other: string): Date | null => {
    if (value === undefined) {
      errors.push({ field, reason: opts.required ? "is required" : `is required when ${other} is given` });
      return null;
    }
    const parsed = parseRfc3339(value);
    if (!parsed) errors.push({ field, reason: RFC3339_REASON });
    return parsed;
  };
  const from = read("from", input.from, "to");
  const to = read("to", input.to, "from");
  if (!from || !to) return { ok: false, errors };
  if (to.getTime() < from.getTime()) {
    return { ok: false, errors: [{ field: "to", reason: "must not be earlier than from" }] };
  }
  if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * DAY_MS) {
    return {
      ok: false,
      errors: [{ field: "to", reason: `must be at most ${MAX_RANGE_DAYS} days after from` }],
    };
  }
  return { ok: true, range: { from, to } };
}

/**
 * The last `days` UTC days up to `now`: today and the `days - 1` before it, from the first one's
 * midnight. (`now - days × 24 h` would start inside an extra day: 8 points for "the last 7 days".)
 */
export function lastDays(days: number, now: Date): DateRange {
  const from = new Date(`${utcDateOf(now)}T00:00:00.000Z`);
  from.setUTCDate(from.getUTCDate() - (days - 1));
  return { from, to: now };
}

/** The UTC calendar date of an instant, as YYYY-MM-DD. */
const utcDateOf = (d: Date): string => d.toISOString().slice(0, 10);

/** Every UTC date from date(from) to date(to), both included: the days of a series, in order. */
export function utcDaysOf(range: DateRange): string[] {
  const days: string[] = [];
  const last = utcDateOf(range.to);
  const cursor = new Date(`${utcDateOf(range.from)}T00:00:00.000Z`);
  for (;;) {
    const day = utcDateOf(cursor);
    days.push(day);
    if (day >= last) return days;
    cursor.setUTCDate(cursor.getUTCDate() + 1);
  }
}

/** The window a report's SQL reads: the range plus its first day and the count of days after it. */
export function windowOf(range: DateRange): { from: Date; to: Date; firstDay: string; extraDays: number } {
  const days = utcDaysOf(range);
  return { from: range.from, to: range.to, firstDay: days[0]!, extraDays: days.length - 1 };
}
