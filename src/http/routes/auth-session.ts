import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { sessionOpenerKeyOf } from "../../auth/principal.ts";
import { AppError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { SessionReply, toSessionReply } from "../schemas/auth.ts";
import { errorResponses, ref } from "../schemas/common.ts";
import { TAG } from "../schemas/openapi.ts";

export const authSessionRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.post(
    "/api/v1/auth/session",
    {
      schema: {
        operationId: "createSession",
        summary: "Open a session",
        description:
          "Exchange a `custom` API key for a short-lived JWT (used by the dashboard); the session dies with the key. Integration keys and sessions get 403.",
        tags: [TAG.auth],
        response: { 200: ref(SessionReply, "The session token"), ...errorResponses(401, 403, 429, 500) },
      },
      // A signed token, nothing stored: the dashboard still opens (and shows its reads) on a full disk.
      config: { writesNothing: true },
    },
    async (req) => {
      const p = principalOf(req);
      const session = await deps.jwt.issue(p.userId, sessionOpenerKeyOf(p), deps.clock.now());
      if (!session)
        throw new AppError("INTERNAL_ERROR", "Sessions are not configured on this server (JWT_SECRET)");
      return toSessionReply(session, p.userId);
    },
  );
};
