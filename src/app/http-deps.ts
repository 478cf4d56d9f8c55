import { snapshotterOf } from "../db/pglite.ts";
import { pingDatabase } from "../db/queries/ping.ts";
import type { HttpDeps } from "../http/deps.ts";
import { createReadinessService } from "../observability/readiness.ts";
import type { Services } from "./services.ts";

/** Narrows the composition root's Services to what HTTP may see: no db, no engine, no Config. */
export function httpDepsOf(services: Services): HttpDeps {
  const { config, db } = services;
  return {
    settings: {
      maxUploadBytes: config.maxUploadBytes,
      allowPrivateWebhooks: config.webhooks.allowPrivate,
      metricsToken: config.metricsToken,
      operatorToken: config.operatorToken,
      taskRetryWindowMinutes: config.taskRetryWindowMinutes,
      sessionReauthMs: config.sessionReauthSeconds * 1000,
    },
    clock: services.clock,
    metrics: services.metrics,
    readiness: createReadinessService({
      databaseKind: db.kind,
      warnings: config.warnings,
      ping: () => pingDatabase(db),
      diskSpace: services.diskSpace,
      ...(db.stoppedFor ? { stoppedFor: () => db.stoppedFor?.() ?? null } : {}),
    }),
    diskSpace: services.diskSpace,
    authenticator: services.authenticator,
    rateLimiter: services.rateLimiter,
    jwt: services.jwt,
    sessions: services.sessions,
    apiKeys: services.apiKeys,
    credits: services.credits,
    users: services.users,
    operator: services.operator,
    reports: services.reports,
    verifications: services.verifications,
    tasks: services.tasks,
    uploads: services.uploads,
    webhooks: services.webhooks,
    snapshotDatabase: snapshotterOf(db),
  };
}
