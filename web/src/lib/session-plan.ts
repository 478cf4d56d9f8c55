// When a dashboard tab renews its session token: pure rules over the token's own times, so the
// same rule serves a 15-minute token and a test's 15-second one (docs/dashboard-session.md).

/** The times of one session token, in epoch milliseconds. */
export interface TokenTimes {
  issuedAtMs: number;
  expiresAtMs: number;
  /** Sign-in + SESSION_MAX_HOURS; null when the server did not say (the server still enforces it). */
  renewableUntilMs: number | null;
}

/** The renewal window opens when a third of the token's lifetime is left. */
export const renewalOpensAt = (t: TokenTimes): number => t.expiresAtMs - (t.expiresAtMs - t.issuedAtMs) / 3;

/** A token that already ends at the cap cannot be extended: renewing would only spend a request. */
export const isRenewable = (t: TokenTimes): boolean =>
  t.renewableUntilMs === null || t.expiresAtMs < t.renewableUntilMs;

/**
 * Renew now? Only inside the window, before the expiry, below the cap, and only if the user did
 * something during this token's life: an idle dashboard lets its session end (a tab left open on
 * a shared computer must not stay signed in for SESSION_MAX_HOURS).
 */
export function shouldRenew(t: TokenTimes, lastActivityMs: number | null, nowMs: number): boolean {
  return (
    isRenewable(t) &&
    lastActivityMs !== null &&
    lastActivityMs >= t.issuedAtMs &&
    nowMs >= renewalOpensAt(t) &&
    nowMs < t.expiresAtMs
  );
}
