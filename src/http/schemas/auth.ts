import { Type } from "typebox";
import { DateTime, Uuid } from "./common.ts";

export const SessionReply = Type.Object({
  token: Type.String({ description: "HS256 JWT; send as Authorization: Bearer <token>" }),
  token_type: Type.Literal("Bearer"),
  expires_at: DateTime,
  user_id: Uuid,
});
