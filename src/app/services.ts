import type { Config } from "../config/index.ts";
import type { Database } from "../db/client.ts";
import { createAuthenticator, type Authenticator } from "../auth/authenticate.ts";
import { createJwtService, type JwtService } from "../auth/jwt.ts";
import { createCreditsService, type CreditsService } from "../credits/service.ts";
import { createListParserPool } from "../files/index.ts";
import { createInvalidationBus, type InvalidationBus } from "../db/invalidation-bus.ts";
import { createApiKeysService, type ApiKeysService } from "../keys/service.ts";
import { createRecentResults } from "../realtime/recent-results.ts";
import { systemClock, type Clock } from "../lib/clock.ts";
import type { Logger } from "../observability/logger.ts";
import { noDiskSpaceGuard, type DiskSpaceGuard } from "../observability/disk-space.ts";
import { createMetrics, type Metrics } from "../observability/metrics.ts";
import { createRateLimiter, type RateLimiter, type RateLimitStore } from "../ratelimit/limiter.ts";
import { createUsersService, type UsersService } from "../users/service.ts";
import { createOperatorService, type OperatorService } from "../users/operator.ts";
import { createRealtimeService, type RealtimeService } from "../realtime/service.ts";
import { createReportsService, type ReportsService } from "../reports/service.ts";
import { createTasksService, type TasksService } from "../tasks/service.ts";
import { createUploadAdmission } from "../uploads/admission.ts";
import { createUploadsService, type UploadsService } from "../uploads/service.ts";
import { createWebhooksService, type WebhooksService } from "../webhooks/service.ts";
import { createSessionService, type SessionService } from "../auth/sessions.ts";
import { createSignInLinkService, type SignInLinkService } from "../auth/sign-in-links.ts";
import { createRememberedDeviceService, type RememberedDeviceService } from "../auth/remembered-devices.ts";
import { stopWorkOf } from "../tasks/stop-work.ts";
import { createWebhookSecretCipher, type WebhookSecretCipher } from "../webhooks/secret-cipher.ts";
import { createPgHostGate, HostBusyError } from "../politeness/host-gate.ts";
import { newWorkerId } from "../jobs/runner.ts";
import {
  createEngine,
  createIdleConnections,
  type Engine,
  type EnginePorts,
  type IdleConnections,
} from "../verify/index.ts";
import { engineOptionsFrom, gateEgressFrom, guardPorts, paceFrom } from "./engine-options.ts";

/** Everything a request handler or a worker may call. Built once per process (or per test). */
export interface Services {
  config: Readonly<Config>;
  db: Database;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  apiKeys: ApiKeysService;
  credits: CreditsService;
  users: UsersService;
  /** The operator console's reads and actions across users (ADMIN_TOKEN API, `mailprobe users`). */
  operator: OperatorService;
  jwt: JwtService;
  /** Dashboard sessions held on the server: open, renew (rotating), sign out (auth/sessions.ts). */
  sessions: SessionService;
  /** One-time sign-in links: minted by a key or the operator, redeemed for a session (auth/sign-in-links.ts). */
  signInLinks: SignInLinkService;
  /** Remembered devices: a cookie that opens sessions of its key without it (auth/remembered-devices.ts). */
  devices: RememberedDeviceService;
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  engine: Engine;
  /** Idle SMTP connections, shared by this process's engines (realtime and batch). */
  idleConnections: IdleConnections;
  realtime: RealtimeService;
  reports: ReportsService;
  tasks: TasksService;
  uploads: UploadsService;
  webhooks: WebhooksService;
  /** Seals and opens the users' webhook signing secrets at rest (webhooks/secret-cipher.ts). */
  webhookSecrets: WebhookSecretCipher;
  /** Tells every node's caches what changed (db/invalidation-bus.ts). */
  invalidations: InvalidationBus;
  /** Free space of DATA_DIR (embedded engine); the no-op guard on PostgreSQL and in tests. */
  diskSpace: DiskSpaceGuard;
  /** Releases what the services hold (engine sessions, limiter stores); not the database. */
  close(): Promise<void>;
}

export interface ServiceOptions {
  config: Readonly<Config>;
  db: Database;
  logger: Logger;
  clock?: Clock;
  /** Effective secrets: from the environment, or generated into DATA_DIR in embedded mode. */
  encryptionKey: Buffer | null;
  jwtSecret: string | null;
  rateLimitStore?: RateLimitStore;
  processMetrics?: boolean;
  /** Replaces engine ports (tests only: e.g. a custom DNS port). */
  enginePorts?: Partial<EnginePorts>;
  /** A started DATA_DIR guard (app/runtime.ts, embedded engine); stopped by close(). */
  diskSpace?: DiskSpaceGuard;
}

export function buildServices(opts: ServiceOptions): Services {
  const { config, db, logger } = opts;
  const clock = opts.clock ?? systemClock;
  const invalidations = createInvalidationBus(db, (e) =>
    logger.warn({ err: e }, "cache invalidation channel unavailable; caches bypassed until it is back"),
  );
  const webhookSecrets = createWebhookSecretCipher(opts.encryptionKey);
  // A credential's end ends what it opened (tasks/stop-work.ts): tasks cancelled, webhooks dropped.
  const apiKeys = createApiKeysService(
    db,
    clock,
    opts.encryptionKey,
    { bus: invalidations, ttlMs: config.hotCache.authTtlMs },
    async (tx, userId, keyIds, at) => {
      await stopWorkOf(tx, { userId, apiKeyIds: keyIds, reason: "the API key was revoked" }, at);
    },
  );
  const jwt = createJwtService({
    secret: opts.jwtSecret,
    jwksUrl: config.jwtJwksUrl,
    issuer: config.jwtIssuer,
    sessionTtlSeconds: config.sessionTtlSeconds,
    sessionMaxSeconds: config.sessionMaxHours * 3600,
    clock,
  });
  const sessions = createSessionService(db, jwt, clock);
  // Realtime sessions take the same cluster-wide per-host slots as the batch workers, waiting
  // (within the request's deadline) for one rather than opening a third connection.
  const realtimeGate = createPgHostGate({
    db,
    clock,
    holder: `realtime:${newWorkerId()}`,
    slotsPerHost: config.verify.maxSessionsPerHost,
    // Realtime sessions end within their deadline, so their slots need no heartbeat.
    leaseMs: Math.max(config.worker.leaseMs, config.verify.verifyTimeoutMs + 30_000),
    maxWaitMs: config.verify.verifyTimeoutMs,
    waitLocally: true,
    // A request has no later to defer to: with every identity resting, the server answers.
    ...gateEgressFrom(config.verify),
    whenAllResting: "try",
    priority: "realtime",
  });
  // One set of idle SMTP connections per process, shared by the realtime and the batch engine:
  // both reach the same server IPs, and a connection one leaves idle serves the other's next domain.
  const idleConnections = createIdleConnections(engineOptionsFrom(config.verify));
  const engine = createEngine(engineOptionsFrom(config.verify), {
    clock,
    hostGate: realtimeGate,
    idleConnections,
    // A request has no later: without room under a provider's pace it answers unknown, unasked.
    pace: paceFrom({ db, clock, logger, config }, "answer"),
    ...guardPorts,
    ...opts.enginePorts,
  });
  const listParser = createListParserPool(config.uploadParse, (error) =>
    logger.error({ err: error }, "a list-parsing thread failed"),
  );
  const rateLimiter = createRateLimiter(
    { perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst },
    opts.rateLimitStore ?? { kind: "memory" },
  );
  return {
    config,
    db,
    clock,
    logger,
    idleConnections,
    metrics: createMetrics({
      processMetrics: opts.processMetrics ?? true,
      deadlockRetries: () => db.stats?.deadlockRetries ?? 0,
    }),
    apiKeys,
    credits: createCreditsService(db, clock),
    users: createUsersService(db, clock, apiKeys, webhookSecrets),
    operator: createOperatorService(db, clock, apiKeys, invalidations, async (tx, userId, at) => {
      await stopWorkOf(tx, { userId, apiKeyIds: null, reason: "the user was deactivated" }, at);
    }),
    jwt,
    sessions,
    signInLinks: createSignInLinkService(db, sessions, clock),
    devices: createRememberedDeviceService(db, sessions, clock, config.deviceRememberDays * 86_400_000),
    authenticator: createAuthenticator(apiKeys, jwt, sessions),
    rateLimiter,
    engine,
    realtime: createRealtimeService(db, clock, engine, {
      timeoutMs: config.verify.verifyTimeoutMs,
      cacheTtlMs: config.verify.resultCacheTtlMs,
      maxInFlightPerUser: config.verify.maxInFlightPerUser,
      onEvidenceDecision: (r) =>
        logger.info({ domain: r.domainName, email: r.email, evidence: r.evidence }, "decided by evidence"),
      isHostBusy: (error) => error instanceof HostBusyError,
      recent: createRecentResults(invalidations, {
        maxEntries: config.hotCache.resultMaxEntries,
        maxBytes: config.hotCache.resultMaxBytes,
      }),
    }),
    tasks: createTasksService(db, clock, engine, invalidations),
    uploads: createUploadsService(db, clock, engine, listParser, {
      admission: createUploadAdmission({ ...config.uploadsInProgress, retryAfterSeconds: 2 }),
      maxUploadBytes: config.maxUploadBytes,
      storagePerUserBytes: config.uploadStoragePerUserBytes,
    }),
    reports: createReportsService(db),
    webhooks: createWebhooksService(db, clock, webhookSecrets),
    webhookSecrets,
    invalidations,
    diskSpace: opts.diskSpace ?? noDiskSpaceGuard,
    async close() {
      opts.diskSpace?.stop();
      await invalidations.close();
      await engine.close();
      await rateLimiter.close();
      await listParser.close();
    },
  };
}
