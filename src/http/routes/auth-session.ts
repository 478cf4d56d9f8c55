import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AppError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { SessionReply, toSessionReply } from "../schemas/auth.ts";
import { errorResponses } from "../schemas/common.ts";

export const authSessionRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.post(
    "/api/v1/auth/session",
    {
      schema: {
        tags: ["auth"],
        description: "Exchange an API key for a short-lived JWT (used by the dashboard).",
        response: { 200: SessionReply, ...errorResponses(401, 429, 500) },
      },
    },
    async (req) => {
      const p = principalOf(req);
      // A JWT must not mint its successor, or a leaked session token would never expire.
      if (p.source !== "api_key")
        throw new AppError("UNAUTHORIZED", "An API key is required to open a session");
      const session = await deps.jwt.issue(p.userId, deps.clock.now());
      if (!session)
        throw new AppError("INTERNAL_ERROR", "Sessions are not configured on this server (JWT_SECRET)");
      return toSessionReply(session, p.userId);
    },
  );
};
