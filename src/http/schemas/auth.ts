import { Type } from "typebox";
import type { IssuedSession } from "../../auth/jwt.ts";
import type { DeviceListing } from "../../auth/remembered-devices.ts";
import { signInLinkUrl } from "../../auth/sign-in-links.ts";
import { DateTime, ref, Uuid } from "./common.ts";

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
    device_remembered_until: Type.Optional(
      Type.String({
        format: "date-time",
        description:
          "Only when this browser is remembered (`remember_device` at sign-in, or a session opened by its device cookie): until when its cookie opens sessions without the key",
      }),
    ),
  },
  { $id: "Session", description: "A short-lived session token (source `frontend`)" },
);

const RememberDevice = Type.Boolean({
  description:
    "Remember this browser for DEVICE_REMEMBER_DAYS (30 by default): the reply sets an HttpOnly cookie that POST /api/v1/auth/device exchanges for a session of the same key, listed with the key and ending with it",
});

export const OpenSessionBody = Type.Object(
  { remember_device: Type.Optional(RememberDevice) },
  { additionalProperties: false },
);

export const SessionPolicyReply = Type.Object(
  {
    lifetime_seconds: Type.Integer({ minimum: 1, description: "SESSION_TTL_SECONDS" }),
    max_hours: Type.Integer({ minimum: 1, description: "SESSION_MAX_HOURS" }),
    device_remember_days: Type.Integer({
      minimum: 1,
      description:
        "DEVICE_REMEMBER_DAYS: how long a browser remembered at sign-in opens sessions without the key",
    }),
  },
  {
    $id: "SessionPolicy",
    description: "How long a dashboard session lasts, for the sign-in form (needs no credentials)",
  },
);

export const toSessionReply = (session: IssuedSession, userId: string, rememberedUntil?: Date) => ({
  token: session.token,
  token_type: "Bearer" as const,
  expires_at: session.expiresAt.toISOString(),
  user_id: userId,
  lifetime_seconds: session.lifetimeSeconds,
  renewable_until: session.renewableUntil.toISOString(),
  ...(rememberedUntil ? { device_remembered_until: rememberedUntil.toISOString() } : {}),
});

export const toSessionPolicyReply = (
  policy: { lifetimeSeconds: number; maxSeconds: number },
  deviceLifetimeMs: number,
) => ({
  lifetime_seconds: policy.lifetimeSeconds,
  max_hours: Math.round(policy.maxSeconds / 3600),
  device_remember_days: Math.round(deviceLifetimeMs / 86_400_000),
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
  {
    token: Type.String({ minLength: 1, maxLength: 200, description: "The link's token (`mpl_…`)" }),
    remember_device: Type.Optional(RememberDevice),
  },
  { additionalProperties: false },
);

/**
 * The device route's body: none is needed, but an empty JSON object is required, so that a
 * cross-origin page can only send it after a CORS preflight this server never grants.
 */
export const DeviceSessionBody = Type.Object({}, { additionalProperties: false });

export const RememberedDevice = Type.Object(
  {
    id: Uuid,
    label: Type.String({ description: "The browser and system it signed in from, e.g. `Firefox on Linux`" }),
    created_at: DateTime,
    last_used_at: Type.Union([DateTime, Type.Null()], {
      description: "The last session it opened; null when it has opened none since the sign-in",
    }),
    expires_at: DateTime,
    is_current: Type.Boolean({ description: "The caller's session was opened by this device" }),
  },
  { $id: "RememberedDevice", description: "A browser remembered at sign-in with a key" },
);

export const RememberedDeviceList = Type.Object(
  { devices: Type.Array(ref(RememberedDevice)) },
  {
    $id: "RememberedDeviceList",
    description: "A key's remembered devices that can still open sessions, most recently used first",
  },
);

export const DeviceParams = Type.Object({ id: Uuid, device_id: Uuid });

export const toRememberedDevice = (d: DeviceListing, currentDeviceId: string | null) => ({
  id: d.id,
  label: d.label,
  created_at: d.createdAt.toISOString(),
  last_used_at: d.lastUsedAt?.toISOString() ?? null,
  expires_at: d.expiresAt.toISOString(),
  is_current: d.id === currentDeviceId,
});

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
