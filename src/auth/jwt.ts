import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, SignJWT, type JWTPayload } from "jose";
import type { Clock } from "../lib/clock.ts";
import { isUuid } from "../lib/ids.ts";

export interface JwtOptions {
  secret: string | null;
  jwksUrl: string | null;
  issuer: string | null;
  sessionTtlSeconds: number;
  /** Absolute cap of a session and its renewals, counted from the sign-in. */
  sessionMaxSeconds: number;
  /** Expiry is judged against this clock, the same one that stamps issued tokens. */
  clock: Clock;
}

/** What a valid token says: its user and, for our own sessions, the API key that opened it. */
export interface VerifiedJwt {
  userId: string;
  /** Our HS256 sessions always carry it (claim `api_key_id`); external (JWKS) tokens have null. */
  apiKeyId: string | null;
  /**
   * When the user signed in with the key (claim `auth_time`, kept through renewals; `iat` for a
   * session issued before renewals existed); null for external tokens.
   */
  signedInAt: Date | null;
  /** Our sessions: the server-side session the token belongs to (claims `sid`, `gen`); null for external tokens. */
  session: SessionClaims | null;
}

/** A session token as issued, with the bounds the dashboard plans its renewals by. */
export interface IssuedSession {
  token: string;
  expiresAt: Date;
  /** Sign-in + the absolute cap: no renewal reaches past it. */
  renewableUntil: Date;
  /** SESSION_TTL_SECONDS: the lifetime of each token (the last one may be cut by the cap). */
  lifetimeSeconds: number;
}

/**
 * The server-side session a token belongs to, the token's generation within it and, for a session
 * a remembered device opened, that device (claim `did`): such a session is not a fresh sign-in.
 */
export interface SessionClaims {
  id: string;
  generation: number;
  deviceId?: string | null;
}

/** The private claim binding a session to the key that opened it (it dies with that key). */
const SESSION_KEY_CLAIM = "api_key_id";

export interface JwtService {
  /**
   * The subject of a valid token, or null for any invalid, expired, expiry-less or unverifiable
   * token, and for an HS256 token without a valid `api_key_id` claim.
   */
  verify(token: string): Promise<VerifiedJwt | null>;
  /**
   * A short-lived HS256 session opened by an API key (`signedInAt` = `now`) or renewing one opened
   * at `signedInAt`; it never outlives the cap. Null when no JWT_SECRET is available.
   */
  issue(
    userId: string,
    apiKeyId: string,
    session: SessionClaims,
    now: Date,
    signedInAt?: Date,
  ): Promise<IssuedSession | null>;
  /** The instant past which a session signed in at `signedInAt` may no longer be renewed. */
  renewableUntil(signedInAt: Date): Date;
  /** SESSION_TTL_SECONDS and SESSION_MAX_HOURS (in seconds), for the dashboard's sign-in text. */
  readonly sessionPolicy: { lifetimeSeconds: number; maxSeconds: number };
}

/** The OIDC claim for "when the user authenticated", carried unchanged through renewals. */
const SIGNED_IN_CLAIM = "auth_time";
/** The server-side session (auth/sessions.ts) and the generation of this token within it. */
const SESSION_ID_CLAIM = "sid";
const GENERATION_CLAIM = "gen";
/** The remembered device that opened the session (auth/remembered-devices.ts); absent otherwise. */
const DEVICE_CLAIM = "did";

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
          const signedIn = payload[SIGNED_IN_CLAIM];
          if (typeof signedIn !== "number" || !Number.isFinite(signedIn)) return null;
          // A session the server does not hold could be neither renewed once nor signed out.
          const sid = payload[SESSION_ID_CLAIM];
          const gen = payload[GENERATION_CLAIM];
          if (typeof sid !== "string" || !isUuid(sid) || !Number.isSafeInteger(gen)) return null;
          const did = payload[DEVICE_CLAIM];
          if (did !== undefined && (typeof did !== "string" || !isUuid(did))) return null;
          return {
            userId,
            apiKeyId,
            signedInAt: new Date(signedIn * 1000),
            session: { id: sid, generation: gen as number, deviceId: did ?? null },
          };
        }
        if (alg !== "HS256" && alg !== "none" && jwks) {
          const userId = subjectOf((await jwtVerify(token, jwks, claims())).payload);
          return userId ? { userId, apiKeyId: null, signedInAt: null, session: null } : null;
        }
        return null;
      } catch {
        return null;
      }
    },

    async issue(userId, apiKeyId, session, now, signedInAt = now) {
      if (!secret) return null;
      const iat = Math.floor(now.getTime() / 1000);
      const authTime = Math.floor(signedInAt.getTime() / 1000);
      const cap = authTime + opts.sessionMaxSeconds;
      const exp = Math.min(iat + opts.sessionTtlSeconds, cap);
      let jwt = new SignJWT({
        [SESSION_KEY_CLAIM]: apiKeyId,
        [SIGNED_IN_CLAIM]: authTime,
        [SESSION_ID_CLAIM]: session.id,
        [GENERATION_CLAIM]: session.generation,
        ...(session.deviceId ? { [DEVICE_CLAIM]: session.deviceId } : {}),
      })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setSubject(userId);
      jwt = jwt.setIssuedAt(iat).setExpirationTime(exp);
      if (issuer) jwt = jwt.setIssuer(issuer);
      return {
        token: await jwt.sign(secret),
        expiresAt: new Date(exp * 1000),
        renewableUntil: new Date(cap * 1000),
        lifetimeSeconds: opts.sessionTtlSeconds,
      };
    },

    sessionPolicy: { lifetimeSeconds: opts.sessionTtlSeconds, maxSeconds: opts.sessionMaxSeconds },

    renewableUntil: (signedInAt) => new Date(signedInAt.getTime() + opts.sessionMaxSeconds * 1000),
  };
}
