import { forbidden } from "../lib/app-error.ts";
import type { SessionClaims } from "./jwt.ts";

/** Who is calling, as established by authentication. */
export interface Principal {
  userId: string;
  /** `api_key` for integration keys, `frontend` for dashboard JWTs (ledger attribution). */
  source: "api_key" | "frontend";
  apiKeyId: string | null;
  apiKeyPurpose: string | null;
  /** Identity of the credential itself, the unit of rate limiting (with the user, see auth plugin). */
  credentialId: string;
  /** For a dashboard session: the API key that opened it (the session dies with it). */
  sessionKeyId?: string | null;
  /** For a dashboard session: when its user signed in (renewals are capped from there). */
  sessionSignedInAt?: Date | null;
  /** For a dashboard session: the server-side session and this token's generation (auth/sessions.ts). */
  session?: SessionClaims | null;
}

/**
 * DESIGN §5 "Key scopes": `zapier`, `n8n` and `google sheets` keys are integration keys (verify,
 * tasks, uploads, downloads, reports); `custom` keys and sessions also manage keys.
 */
export const INTEGRATION_PURPOSES: readonly string[] = ["zapier", "n8n", "google sheets"];

/** May a key of this purpose open a dashboard session (and so manage keys through it)? */
export const canOpenSessions = (purpose: string): boolean => !INTEGRATION_PURPOSES.includes(purpose);

/** May this caller list, create, reveal or delete API keys? */
export const mayManageKeys = (p: Principal): boolean =>
  p.source === "frontend" || (p.apiKeyPurpose !== null && canOpenSessions(p.apiKeyPurpose));

/** Throws 403 FORBIDDEN unless the caller may manage keys. */
export function requireKeyManagement(p: Principal): void {
  if (!mayManageKeys(p))
    throw forbidden(
      `An integration key (purpose "${p.apiKeyPurpose}") cannot manage API keys; use a "custom" key or a session`,
    );
}

/**
 * The id of the key that may open a dashboard session for this caller; 403 FORBIDDEN unless the
 * caller is a `custom` key.
 */
export function sessionOpenerKeyOf(p: Principal): string {
  if (p.source !== "api_key" || !p.apiKeyId)
    // A session must not mint its successor, or a leaked session token would never expire.
    throw forbidden("Only an API key can open a session");
  if (!mayManageKeys(p))
    throw forbidden(`An integration key (purpose "${p.apiKeyPurpose}") cannot open a session`);
  return p.apiKeyId;
}

/**
 * Throws 403 FORBIDDEN when a dashboard session signed in longer than `windowMs` ago asks to see
 * or make a key: a stolen session token must not turn into a key that outlives it. An API key
 * and a fresh session pass; signing in again with the key opens a fresh session. A session a
 * remembered device opened is never fresh: the cookie on a stolen laptop's disk must not become
 * a key either, so seeing or making one takes the key itself.
 */
export function requireRecentSignIn(p: Principal, now: Date, windowMs: number): void {
  if (p.source !== "frontend" || !p.sessionSignedInAt) return;
  if (p.session?.deviceId)
    throw forbidden(
      "This session was opened by a remembered device: revealing or creating API keys needs a sign-in with your API key",
    );
  if (now.getTime() - p.sessionSignedInAt.getTime() <= windowMs) return;
  throw forbidden(
    `Revealing or creating API keys needs a session signed in within the last ${String(Math.round(windowMs / 60_000))} minutes: sign in again with your API key`,
  );
}

/** Ledger metadata attributing a credit movement to the caller (spec: Authentication rule 6). */
export function attributionOf(p: Principal): Record<string, string> {
  return p.source === "api_key" && p.apiKeyId
    ? {
        source: "api_key",
        api_key_id: p.apiKeyId,
        ...(p.apiKeyPurpose ? { api_key_purpose: p.apiKeyPurpose } : {}),
      }
    : { source: "frontend" };
}
