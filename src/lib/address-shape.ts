// DESIGN §5 "Syntax, one rule everywhere": what counts as an email at all, before RFC syntax.
// Realtime, JSON tasks and uploads share this test; what passes it but breaks RFC 5321/6531 is
// an `invalid_syntax` result (billed), what fails it is not an email (400, or a skipped row).

/** Longest address accepted at the API edge (the spec's 400 rule; RFC 5321's own limit is 254). */
export const MAX_EMAIL_INPUT_LENGTH = 320;

/**
 * Why trimmed input is not an email at all, or null when it is address-shaped: not empty, at most
 * MAX_EMAIL_INPUT_LENGTH characters, and an "@" with text on both sides.
 */
export function notAnAddressReason(trimmed: string): string | null {
  if (trimmed === "") return "must not be empty";
  if (trimmed.length > MAX_EMAIL_INPUT_LENGTH) return `must be at most ${MAX_EMAIL_INPUT_LENGTH} characters`;
  const at = trimmed.lastIndexOf("@");
  if (at <= 0 || at === trimmed.length - 1) return "must contain an @ with text on both sides";
  return null;
}

export const isAddressShaped = (cell: string): boolean => notAnAddressReason(cell.trim()) === null;
