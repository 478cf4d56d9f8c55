/** Who is calling, as established by authentication. */
export interface Principal {
  userId: string;
  /** `api_key` for integration keys, `frontend` for dashboard JWTs (ledger attribution). */
  source: "api_key" | "frontend";
  apiKeyId: string | null;
  apiKeyPurpose: string | null;
  /** Identity of the credential itself, the unit of rate limiting. */
  credentialId: string;
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
