import type { ApiKeysService } from "../keys/service.ts";
import type { JwtService } from "./jwt.ts";
import type { Principal } from "./principal.ts";

export type AuthOutcome =
  { ok: true; principal: Principal } | { ok: false; reason: "missing" | "malformed" | "invalid" };

export interface CredentialHeaders {
  authorization?: string | string[] | undefined;
  "x-api-key"?: string | string[] | undefined;
}

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** Reads the credential from `Authorization: Bearer …` (preferred) or `X-API-Key`. */
export function readCredential(headers: CredentialHeaders): { token: string } | "missing" | "malformed" {
  const auth = single(headers.authorization)?.trim();
  if (auth) {
    const m = /^Bearer\s+(\S+)$/i.exec(auth);
    return m ? { token: m[1]! } : "malformed";
  }
  const key = single(headers["x-api-key"])?.trim();
  return key ? { token: key } : "missing";
}

export interface Authenticator {
  authenticate(headers: CredentialHeaders): Promise<AuthOutcome>;
}

export function createAuthenticator(apiKeys: ApiKeysService, jwt: JwtService): Authenticator {
  return {
    async authenticate(headers) {
      const read = readCredential(headers);
      if (read === "missing" || read === "malformed") return { ok: false, reason: read };
      const credential = read.token;

      const key = await apiKeys.authenticate(credential);
      if (key) {
        return {
          ok: true,
          principal: {
            userId: key.userId,
            source: "api_key",
            apiKeyId: key.id,
            apiKeyPurpose: key.purpose,
            credentialId: `key:${key.id}`,
          },
        };
      }
      if (credential.split(".").length === 3) {
        const userId = await jwt.verify(credential);
        if (userId) {
          return {
            ok: true,
            principal: {
              userId,
              source: "frontend",
              apiKeyId: null,
              apiKeyPurpose: null,
              credentialId: `user:${userId}`,
            },
          };
        }
      }
      return { ok: false, reason: "invalid" };
    },
  };
}
