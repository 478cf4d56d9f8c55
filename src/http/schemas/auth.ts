import { Type } from "typebox";
import { DateTime, Uuid } from "./common.ts";

export const SessionReply = Type.Object(
  {
    token: Type.String({ description: "HS256 JWT; send as Authorization: Bearer <token>" }),
    token_type: Type.Literal("Bearer"),
    expires_at: DateTime,
    user_id: Uuid,
  },
  { $id: "Session", description: "A short-lived session token (source `frontend`)" },
);

export const toSessionReply = (session: { token: string; expiresAt: Date }, userId: string) => ({
  token: session.token,
  token_type: "Bearer" as const,
  expires_at: session.expiresAt.toISOString(),
  user_id: userId,
});
