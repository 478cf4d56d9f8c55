import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { readCredential } from "../../auth/authenticate.ts";
import { AppError, rateLimited } from "../../lib/app-error.ts";
import { safeEqual } from "../../lib/tokens.ts";
import type { HttpDeps } from "../deps.ts";
import { errorResponses, ref } from "../schemas/common.ts";
import { TAG } from "../schemas/openapi.ts";
import { HealthReply, ReadyReply, toReadyReply } from "../schemas/ops.ts";

export const healthRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get(
    "/healthz",
    {
      schema: {
        operationId: "getHealth",
        summary: "Liveness probe",
        description: "200 while the process runs. Needs no credentials and is not rate limited.",
        tags: [TAG.health],
        security: [],
        response: { 200: ref(HealthReply, "Alive") },
      },
    },
    async () => ({ status: "ok" as const }),
  );

  app.get(
    "/readyz",
    {
      schema: {
        operationId: "getReadiness",
        summary: "Readiness probe",
        description:
          "200 when the database answers (with set-up warnings that cost accuracy), 503 when it does not. Needs no credentials.",
        tags: [TAG.health],
        security: [],
        response: { 200: ref(ReadyReply, "Ready"), ...errorResponses(503) },
      },
    },
    async (req) => {
      try {
        return toReadyReply(await deps.readiness.check());
      } catch (err) {
        req.log.warn({ err }, "readiness check failed");
        throw new AppError("DEPENDENCY_UNAVAILABLE", "Database is not reachable");
      }
    },
  );

  // Public unless METRICS_TOKEN is set (then Bearer <token>, compared in constant time). Either set
  // it or keep the port away from the internet (README: "Keys, sessions and scopes").
  const metricsToken = deps.settings.metricsToken;
  app.get("/metrics", { schema: { hide: true } }, async (req, reply) => {
    if (metricsToken !== null) {
      const read = readCredential({ authorization: req.headers.authorization });
      if (typeof read !== "object" || !safeEqual(read.token, metricsToken)) {
        // A wrong token spends the address's failed-auth allowance, as on every other route.
        const admission = await deps.rateLimiter.consume(`ip:${req.ip}`);
        if (!admission.allowed) throw rateLimited(admission.retryAfterMs / 1000);
        throw new AppError("UNAUTHORIZED", "Metrics require Authorization: Bearer <METRICS_TOKEN>");
      }
    }
    reply.header("content-type", deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
};
