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
 * When the user was last known to be there: the later of their last interaction (pointer, key,
 * wheel, touch) and the last poll of a page watching something change while it was visible (a
 * running task's progress). A hidden tab does not poll (hooks.ts useInterval), so a background tab
 * left alone is never "present"; a page on screen that keeps updating is being watched.
 */
export function lastPresence(lastActivityMs: number | null, lastWatchedMs: number | null): number | null {
  if (lastActivityMs === null) return lastWatchedMs;
  if (lastWatchedMs === null) return lastActivityMs;
  return Math.max(lastActivityMs, lastWatchedMs);
}

/**
 * Renew now? Only inside the window, before the expiry, below the cap, and only if the user was
 * present (lastPresence) during this token's life: a dashboard nobody touches and nothing on
 * screen is updating lets its session end (a tab left open on a shared computer must not stay
 * signed in for SESSION_MAX_HOURS).
 */
export function shouldRenew(t: TokenTimes, lastPresenceMs: number | null, nowMs: number): boolean {
  return (
    isRenewable(t) &&
    lastPresenceMs !== null &&
    lastPresenceMs >= t.issuedAtMs &&
    nowMs >= renewalOpensAt(t) &&
    nowMs < t.expiresAtMs
  );
}
