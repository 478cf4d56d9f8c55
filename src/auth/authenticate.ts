import { DatabaseUnavailableError, isDatabaseUnavailable } from "../db/client.ts";
import type { ApiKeysService } from "../keys/service.ts";
import type { JwtService } from "./jwt.ts";
import type { SessionService } from "./sessions.ts";
import type { Principal } from "./principal.ts";

export type AuthOutcome =
  { ok: true; principal: Principal } | { ok: false; reason: "missing" | "malformed" | "invalid" };

export interface CredentialHeaders {
  authorization?: string | string[] | undefined;
  "x-api-key"?: string | string[] | undefined;
}

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** Reads the credential from `Authorization: Bearer …` (preferred) or `X-API-Key`. */
export function readCredential(
  headers: CredentialHeaders,
): { token: string; via: "bearer" | "x-api-key" } | "missing" | "malformed" {
  const auth = single(headers.authorization)?.trim();
  if (auth) {
    const m = /^Bearer\s+(\S+)$/i.exec(auth);
    return m ? { token: m[1]!, via: "bearer" } : "malformed";
  }
  const key = single(headers["x-api-key"])?.trim();
  return key ? { token: key, via: "x-api-key" } : "missing";
}

export interface Authenticator {
  /**
   * A credential that is wrong is an outcome (`invalid` → 401); one that could not be checked
   * because the key store did not answer throws DatabaseUnavailableError (→ 503): a valid key
   * must never read as "no such key" (it did once, when the embedded engine died mid-lookup).
   */
  authenticate(headers: CredentialHeaders): Promise<AuthOutcome>;
}

/**
 * Runs a key-store lookup. A failure is the store's, never the credential's: it is thrown (a
 * database out of reach as DatabaseUnavailableError → 503; a faulty statement as it is → 500),
 * never read as "no such key".
 */
async function lookup<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw isDatabaseUnavailable(error) && !(error instanceof DatabaseUnavailableError)
      ? new DatabaseUnavailableError(error)
      : error;
  }
}

export function createAuthenticator(
  apiKeys: ApiKeysService,
  jwt: JwtService,
  sessions: Pick<SessionService, "isLive">,
): Authenticator {
  return {
    async authenticate(headers) {
      const read = readCredential(headers);
      if (read === "missing" || read === "malformed") return { ok: false, reason: read };
      const credential = read.token;

      const key = await lookup(() => apiKeys.authenticate(credential));
      if (key) {
        return {
          ok: true,
          principal: {
            userId: key.userId,
            source: "api_key",
            apiKeyId: key.id,
            apiKeyPurpose: key.purpose,
            credentialId: `key:${key.id}`,
            sessionKeyId: null,
          },
        };
      }
      // X-API-Key carries API keys only; a JWT is a Bearer credential (spec, Authentication 1-2).
      if (read.via === "bearer" && credential.split(".").length === 3) {
        const verified = await jwt.verify(credential);
        const openerKeyId = verified?.apiKeyId ?? null;
        // A session dies with the key that opened it (checked on each request, cached ≤ 1 s),
        // when it is signed out, and when a renewal replaced its token (sessions.ts).
        if (
          verified &&
          (await lookup(() =>
            openerKeyId === null
              ? apiKeys.isActiveUser(verified.userId)
              : apiKeys.isActiveKeyOf(verified.userId, openerKeyId),
          )) &&
          (await lookup(() => sessions.isLive(verified)))
        ) {
          return {
            ok: true,
            principal: {
              userId: verified.userId,
              source: "frontend",
              apiKeyId: null,
              apiKeyPurpose: null,
              credentialId: verified.apiKeyId ? `session:${verified.apiKeyId}` : `jwt:${verified.userId}`,
              sessionKeyId: verified.apiKeyId,
              sessionSignedInAt: verified.signedInAt,
              session: verified.session,
            },
          };
        }
      }
      return { ok: false, reason: "invalid" };
    },
  };
}
