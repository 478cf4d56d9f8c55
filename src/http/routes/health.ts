import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Services } from "../../app/services.ts";
import { errorResponses } from "../schemas/common.ts";
import { AppError } from "../../lib/app-error.ts";

// Set-up problems that don't make this node unready (it serves and verifies) but cost accuracy,
// e.g. a HELO name receivers refuse. Monitors keep reading the status code; people read these.
const ReadyWarning = Type.Object({
  code: Type.String({ description: "stable code, e.g. helo_name_not_fqdn" }),
  variable: Type.String({ description: "the environment variable to set or fix" }),
  message: Type.String({ description: "what is wrong and what to set, with an example" }),
});

export const healthRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/healthz",
    { schema: { tags: ["ops"], response: { 200: Type.Object({ status: Type.Literal("ok") }) } } },
    async () => ({ status: "ok" as const }),
  );

  app.get(
    "/readyz",
    {
      schema: {
        tags: ["ops"],
        response: {
          200: Type.Object({
            status: Type.Literal("ready"),
            database: Type.String(),
            warnings: Type.Array(ReadyWarning),
          }),
          ...errorResponses(503),
        },
      },
    },
    async (req) => {
      try {
        await services.db.query("select 1");
        return {
          status: "ready" as const,
          database: services.db.kind,
          warnings: [...services.config.warnings],
        };
      } catch (err) {
        req.log.warn({ err }, "readiness check failed");
        throw new AppError("DEPENDENCY_UNAVAILABLE", "Database is not reachable");
      }
    },
  );

  app.get("/metrics", { schema: { hide: true } }, async (_req, reply) => {
    reply.header("content-type", services.metrics.registry.contentType);
    return services.metrics.registry.metrics();
  });
};
