import { Type } from "typebox";
import type { IssuedSession } from "../../auth/jwt.ts";
import { signInLinkUrl } from "../../auth/sign-in-links.ts";
import { DateTime, Uuid } from "./common.ts";

export const SessionReply = Type.Object(
  {
    token: Type.String({ description: "HS256 JWT; send as Authorization: Bearer <token>" }),
    token_type: Type.Literal("Bearer"),
    expires_at: DateTime,
    user_id: Uuid,
    lifetime_seconds: Type.Integer({
      minimum: 1,
      description: "SESSION_TTL_SECONDS: how long each token (the first and every renewal) lives",
    }),
    renewable_until: Type.String({
      format: "date-time",
      description:
        "Sign-in time + SESSION_MAX_HOURS: POST /api/v1/auth/session/refresh renews the session until then, never past it",
    }),
  },
  { $id: "Session", description: "A short-lived session token (source `frontend`)" },
);

export const SessionPolicyReply = Type.Object(
  {
    lifetime_seconds: Type.Integer({ minimum: 1, description: "SESSION_TTL_SECONDS" }),
    max_hours: Type.Integer({ minimum: 1, description: "SESSION_MAX_HOURS" }),
  },
  {
    $id: "SessionPolicy",
    description: "How long a dashboard session lasts, for the sign-in form (needs no credentials)",
  },
);

export const toSessionReply = (session: IssuedSession, userId: string) => ({
  token: session.token,
  token_type: "Bearer" as const,
  expires_at: session.expiresAt.toISOString(),
  user_id: userId,
  lifetime_seconds: session.lifetimeSeconds,
  renewable_until: session.renewableUntil.toISOString(),
});

export const toSessionPolicyReply = (policy: { lifetimeSeconds: number; maxSeconds: number }) => ({
  lifetime_seconds: policy.lifetimeSeconds,
  max_hours: Math.round(policy.maxSeconds / 3600),
});

export const SignInLinkReply = Type.Object(
  {
    url: Type.String({
      description:
        "The dashboard address that signs in with the link: this server's address as the request reached it, the token in the fragment (never sent to a server, so not in access logs or Referer headers)",
    }),
    token: Type.String({ description: "`mpl_` + 40 characters; shown once, stored only as a hash" }),
    expires_at: DateTime,
    user_id: Uuid,
    api_key_id: Type.String({
      format: "uuid",
      description: "The key the link and the session it opens are tied to: revoking the key refuses the link",
    }),
  },
  {
    $id: "SignInLink",
    description: "A one-time dashboard sign-in link (15 minutes, one use)",
  },
);

export const RedeemSignInLinkBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200, description: "The link's token (`mpl_…`)" }) },
  { additionalProperties: false },
);

export const toSignInLinkReply = (
  link: { token: string; userId: string; apiKeyId: string; expiresAt: Date },
  origin: string,
) => ({
  url: signInLinkUrl(origin, link.token),
  token: link.token,
  expires_at: link.expiresAt.toISOString(),
  user_id: link.userId,
  api_key_id: link.apiKeyId,
});
