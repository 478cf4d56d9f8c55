import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AppError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { errorResponses } from "../schemas/common.ts";
import { HealthReply, ReadyReply, toReadyReply } from "../schemas/ops.ts";

export const healthRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get("/healthz", { schema: { tags: ["ops"], response: { 200: HealthReply } } }, async () => ({
    status: "ok" as const,
  }));

  app.get(
    "/readyz",
    { schema: { tags: ["ops"], response: { 200: ReadyReply, ...errorResponses(503) } } },
    async (req) => {
      try {
        return toReadyReply(await deps.readiness.check());
      } catch (err) {
        req.log.warn({ err }, "readiness check failed");
        throw new AppError("DEPENDENCY_UNAVAILABLE", "Database is not reachable");
      }
    },
  );

  app.get("/metrics", { schema: { hide: true } }, async (_req, reply) => {
    reply.header("content-type", deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
};
