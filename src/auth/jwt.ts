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

export interface JwtService {
  /** The user id (`sub`) of a valid token, or null for any invalid, expired or unverifiable token. */
  verify(token: string): Promise<string | null>;
  /** A short-lived HS256 token for the dashboard; null when no JWT_SECRET is available. */
  issue(userId: string, now: Date): Promise<{ token: string; expiresAt: Date } | null>;
}

export function createJwtService(opts: JwtOptions): JwtService {
  const secret = opts.secret ? new TextEncoder().encode(opts.secret) : null;
  const jwks = opts.jwksUrl ? createRemoteJWKSet(new URL(opts.jwksUrl)) : null;
  const issuer = opts.issuer ?? undefined;

  const subjectOf = (payload: JWTPayload): string | null =>
    typeof payload.sub === "string" && isUuid(payload.sub) ? payload.sub : null;

  return {
    async verify(token) {
      try {
        const { alg } = decodeProtectedHeader(token);
        // HS256 only with our own secret; asymmetric algorithms only through the JWKS. Never let
        // the token choose (the "alg confusion" attack).
        if (alg === "HS256" && secret) {
          return subjectOf(
            (await jwtVerify(token, secret, { algorithms: ["HS256"], issuer, currentDate: opts.clock.now() }))
              .payload,
          );
        }
        if (alg !== "HS256" && alg !== "none" && jwks) {
          return subjectOf((await jwtVerify(token, jwks, { issuer, currentDate: opts.clock.now() })).payload);
        }
        return null;
      } catch {
        return null;
      }
    },

    async issue(userId, now) {
      if (!secret) return null;
      const iat = Math.floor(now.getTime() / 1000);
      const exp = iat + opts.sessionTtlSeconds;
      let jwt = new SignJWT({}).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setSubject(userId);
      jwt = jwt.setIssuedAt(iat).setExpirationTime(exp);
      if (issuer) jwt = jwt.setIssuer(issuer);
      return { token: await jwt.sign(secret), expiresAt: new Date(exp * 1000) };
    },
  };
}
