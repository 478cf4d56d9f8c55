import { embeddedEngineOf } from "../db/pglite.ts";
import { BackupInProgressError, onlineBackups } from "../db/pglite-online-backup.ts";
import { conflict } from "../lib/app-error.ts";
import type { Database } from "../db/client.ts";
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
    signInLinks: services.signInLinks,
    devices: services.devices,
    apiKeys: services.apiKeys,
    credits: services.credits,
    users: services.users,
    operator: services.operator,
    reports: services.reports,
    realtime: services.realtime,
    tasks: services.tasks,
    uploads: services.uploads,
    webhooks: services.webhooks,
    databaseBackups: backupsOf(db),
  };
}

/** The online backups, a second one at once answered 409. */
function backupsOf(db: Database): HttpDeps["databaseBackups"] {
  const engine = embeddedEngineOf(db);
  if (!engine) return null;
  const backups = onlineBackups(engine.session, engine.dataDir);
  return {
    start: () =>
      backups.start().catch((e: unknown) => {
        throw e instanceof BackupInProgressError ? conflict(e.message) : e;
      }),
    abort: () => backups.abort(),
  };
}
