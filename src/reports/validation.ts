import { validationError } from "../lib/app-error.ts";
import type { OpenBounds } from "../db/queries/reports.ts";
import {
  parseDateRange,
  parseRfc3339,
  RFC3339_REASON,
  type DateRange,
  type DateRangeInput,
} from "./date-range.ts";

/** A range both reports of credit usage require: 400 VALIDATION_ERROR naming each bad field. */
export function requireRange(input: DateRangeInput): DateRange {
  const outcome = parseDateRange(input, { required: true });
  if (!outcome.ok) throw validationError("Invalid date range", outcome.errors);
  // parseDateRange never returns a null range when it is required.
  if (!outcome.range) throw validationError("Invalid date range", [{ field: "from", reason: "is required" }]);
  return outcome.range;
}

/**
 * The metrics' from/to. Spec: both optional, and "`series` is included only when both are
 * given". Both: a range under the usual rules (to ≥ from, 90 days), with its series. One: the
 * counters bounded on that side, no series and so no 90-day limit (there are no days to list).
 * Neither: the whole history.
 */
export function metricsScope(
  input: DateRangeInput,
): { kind: "range"; range: DateRange } | { kind: "bounds"; bounds: OpenBounds } | { kind: "all" } {
  if (input.from !== undefined && input.to !== undefined)
    return { kind: "range", range: requireRange(input) };
  if (input.from === undefined && input.to === undefined) return { kind: "all" };
  const read = (field: "from" | "to", text: string | undefined): Date | null => {
    if (text === undefined) return null;
    const parsed = parseRfc3339(text);
    if (!parsed) {
      throw validationError("Invalid date range", [{ field, reason: RFC3339_REASON }]);
    }
    return parsed;
  };
  return { kind: "bounds", bounds: { from: read("from", input.from), to: read("to", input.to) } };
}
