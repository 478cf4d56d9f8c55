import { validationError } from "../lib/app-error.ts";
import { parseDateRange, type DateRange, type DateRangeInput } from "./date-range.ts";

/** A range both reports of credit usage require: 400 VALIDATION_ERROR naming each bad field. */
export function requireRange(input: DateRangeInput): DateRange {
  const outcome = parseDateRange(input, { required: true });
  if (!outcome.ok) throw validationError("Invalid date range", outcome.errors);
  // parseDateRange never returns a null range when it is required.
  if (!outcome.range) throw validationError("Invalid date range", [{ field: "from", reason: "is required" }]);
  return outcome.range;
}

/** An optional range (metrics): both or neither. */
export function optionalRange(input: DateRangeInput): DateRange | null {
  const outcome = parseDateRange(input, { required: false });
  if (!outcome.ok) throw validationError("Invalid date range", outcome.errors);
  return outcome.range;
}
