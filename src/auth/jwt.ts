import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, SignJWT, type JWTPayload } from "jose";
import type { Clock } from "../lib/clock.ts";
import { isUuid } from "../lib/ids.ts";

export interface JwtOptions {
  secret: string | null;
  jwksUrl: string | null;
  issuer: string | null;
  sessionTtlSeconds: number;
  /** Expiry is judged against this clock, the same one that stamps issued tokens. */
  clock: Clock;
}

/** What a valid token says: its user and, for our own sessions, the API key that opened it. */
export interface VerifiedJwt {
  userId: string;
  /** Our HS256 sessions always carry it (claim `api_key_id`); external (JWKS) tokens have null. */
  apiKeyId: string | null;
}

/** The private claim binding a session to the key that opened it (it dies with that key). */
export const SESSION_KEY_CLAIM = "api_key_id";

export interface JwtService {
  /**
   * The subject of a valid token, or null for any invalid, expired, expiry-less or unverifiable
   * token, and for an HS256 token without a valid `api_key_id` claim.
   */
  verify(token: string): Promise<VerifiedJwt | null>;
  /** A short-lived HS256 session opened by an API key; null when no JWT_SECRET is available. */
  issue(userId: string, apiKeyId: string, now: Date): Promise<{ token: string; expiresAt: Date } | null>;
}

export function createJwtService(opts: JwtOptions): JwtService {
  const secret = opts.secret ? new TextEncoder().encode(opts.secret) : null;
  const jwks = opts.jwksUrl ? createRemoteJWKSet(new URL(opts.jwksUrl)) : null;
  const issuer = opts.issuer ?? undefined;

  const subjectOf = (payload: JWTPayload): string | null =>
    typeof payload.sub === "string" && isUuid(payload.sub) ? payload.sub : null;
  // A token without `exp` would be valid forever: refuse it whoever signed it.
  const claims = () => ({ issuer, requiredClaims: ["exp"], currentDate: opts.clock.now() });

  return {
    async verify(token) {
      try {
        const { alg } = decodeProtectedHeader(token);
        // HS256 only with our own secret; asymmetric algorithms only through the JWKS. Never let
        // the token choose (the "alg confusion" attack).
        if (alg === "HS256" && secret) {
          const { payload } = await jwtVerify(token, secret, { algorithms: ["HS256"], ...claims() });
          const userId = subjectOf(payload);
          const apiKeyId = payload[SESSION_KEY_CLAIM];
          // Every session we issue is bound to its key; one that is not cannot be revoked.
          if (!userId || typeof apiKeyId !== "string" || !isUuid(apiKeyId)) return null;
          return { userId, apiKeyId };
        }
        if (alg !== "HS256" && alg !== "none" && jwks) {
          const userId = subjectOf((await jwtVerify(token, jwks, claims())).payload);
          return userId ? { userId, apiKeyId: null } : null;
        }
        return null;
      } catch {
        return null;
      }
    },

    async issue(userId, apiKeyId, now) {
      if (!secret) return null;
      const iat = Math.floor(now.getTime() / 1000);
      const exp = iat + opts.sessionTtlSeconds;
      let jwt = new SignJWT({ [SESSION_KEY_CLAIM]: apiKeyId })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setSubject(userId);
      jwt = jwt.setIssuedAt(iat).setExpirationTime(exp);
      if (issuer) jwt = jwt.setIssuer(issuer);
      return { token: await jwt.sign(secret), expiresAt: new Date(exp * 1000) };
    },
  };
}
