import { MAX_EMAIL_INPUT_LENGTH } from "../lib/address-shape.ts";
import { validationError } from "../lib/app-error.ts";

/**
 * The request-level checks of POST /verify. Only input that is not an address at all is a 400:
 * empty, too long, or without text on both sides of an "@". Anything else goes to the engine,
 * whose syntax verdict (`invalid_syntax`) is a definitive, billable answer.
 */
export function readRealtimeEmail(raw: string): string {
  const email = raw.trim();
  if (email === "")
    throw validationError("email must not be empty", [{ field: "email", reason: "must not be empty" }]);
  if (email.length > MAX_EMAIL_INPUT_LENGTH) {
    throw validationError("email is too long", [
      { field: "email", reason: `must be at most ${MAX_EMAIL_INPUT_LENGTH} characters` },
    ]);
  }
  const at = email.lastIndexOf("@");
  if (at <= 0 || at === email.length - 1) {
    throw validationError("email is not an address", [
      { field: "email", reason: "must contain an @ with text on both sides" },
    ]);
  }
  return email;
}
