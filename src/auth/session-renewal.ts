import type { IssuedSession, JwtService } from "./jwt.ts";
import type { Principal } from "./principal.ts";

/** Why a caller's session was not renewed (each maps to one HTTP answer in the route). */
export type RenewalRefusal = "not_a_session" | "limit_reached" | "not_configured";

export type SessionRenewal = { ok: true; session: IssuedSession } | { ok: false; reason: RenewalRefusal };

/**
 * A fresh token for a live dashboard session: same user, same opening key, same sign-in time.
 * Reaching this means the caller authenticated, so the token is unexpired and its key still
 * active (a revoked key's sessions fail authentication first, 401). Only our own sessions renew:
 * an API key opens a session instead, and an external (JWKS) token's lifetime is its issuer's.
 */
export async function renewSession(jwt: JwtService, p: Principal, now: Date): Promise<SessionRenewal> {
  if (p.source !== "frontend" || !p.sessionKeyId || !p.sessionSignedInAt)
    return { ok: false, reason: "not_a_session" };
  // Tokens never outlive the cap, so this is reached only across clocks; it keeps the rule whole.
  if (now.getTime() >= jwt.renewableUntil(p.sessionSignedInAt).getTime())
    return { ok: false, reason: "limit_reached" };
  const session = await jwt.issue(p.userId, p.sessionKeyId, now, p.sessionSignedInAt);
  return session ? { ok: true, session } : { ok: false, reason: "not_configured" };
}
