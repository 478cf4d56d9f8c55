import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { readCredential } from "../../auth/authenticate.ts";
import { AppError, rateLimited, serviceUnavailable } from "../../lib/app-error.ts";
import { safeEqual } from "../../lib/tokens.ts";
import { DISK_SPACE_RETRY_AFTER_SECONDS } from "../../observability/disk-space.ts";
import type { Readiness } from "../../observability/readiness.ts";
import type { HttpDeps } from "../deps.ts";
import { DATABASE_RETRY_AFTER_SECONDS } from "../errors.ts";
import { errorResponses, ref } from "../schemas/common.ts";
import { TAG } from "../schemas/openapi.ts";
import { HealthReply, ReadyReply, toDataDirReply, toReadyReply } from "../schemas/ops.ts";

export const healthRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get(
    "/healthz",
    {
      schema: {
        operationId: "getHealth",
        summary: "Liveness probe",
        description:
          "200 while the process can serve; 503 once it cannot until it is restarted (the embedded database stopped after a fatal error, e.g. a full disk), so a supervisor's liveness probe restarts it. Never queries the database. Needs no credentials and is not rate limited.",
        tags: [TAG.health],
        security: [],
        response: { 200: ref(HealthReply, "Alive"), ...errorResponses(503) },
      },
    },
    async () => {
      const live = deps.readiness.liveness();
      // No Retry-After: waiting does not help this process, a restart does.
      if (!live.alive) throw new AppError("SERVICE_UNAVAILABLE", `Restart this process: ${live.reason}`);
      return { status: "ok" as const };
    },
  );

  app.get(
    "/readyz",
    {
      schema: {
        operationId: "getReadiness",
        summary: "Readiness probe",
        description:
          "200 when the database answers (with set-up warnings that cost accuracy and, on the embedded engine, the free space of DATA_DIR), 503 when it does not or when DATA_DIR has less than DATA_DIR_MIN_FREE_MB free (`data_dir` beside the error). Needs no credentials.",
        tags: [TAG.health],
        security: [],
        response: { 200: ref(ReadyReply, "Ready"), ...errorResponses(503) },
      },
    },
    async (req) => {
      let readiness: Readiness;
      try {
        readiness = await deps.readiness.check();
      } catch (err) {
        req.log.warn({ err }, "readiness check failed");
        throw serviceUnavailable("Database is not reachable", DATABASE_RETRY_AFTER_SECONDS);
      }
      const dataDir = readiness.dataDir;
      if (dataDir?.refusal)
        throw new AppError("SERVICE_UNAVAILABLE", dataDir.refusal, undefined, {
          headers: { "retry-after": String(DISK_SPACE_RETRY_AFTER_SECONDS) },
          extra: { data_dir: toDataDirReply(dataDir) },
        });
      return toReadyReply(readiness);
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
