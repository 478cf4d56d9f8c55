import { hostname as osHostname } from "node:os";
import { resolve } from "node:path";
import { ConfigError, keyVar, optionalVar } from "./env-vars.ts";
import {
  boolSetting,
  durationMsSetting,
  enumSetting,
  intSetting,
  optionalIntSetting,
  optionalStringSetting,
  secondsListSetting,
  sizeBytesSetting,
  stringSetting,
  urlSetting,
} from "./read-setting.ts";
import { SETTINGS } from "./settings.ts";
import type { HeloNameSource } from "../lib/host-names.ts";
import { dnsServersVar } from "./dns-servers.ts";
import { checkProxyUrl, parseEgressList } from "./egress.ts";
import { parseTrustProxy } from "./trust-proxy.ts";
import { resolveSmtpIdentity, type ConfigWarning } from "./smtp-identity.ts";

export { ConfigError, type ConfigWarning };
export type { ConfigWarningCode } from "./smtp-identity.ts";

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

/** LOG_FORMAT: `auto` is human-readable on a terminal, JSON lines otherwise. */
export type LogFormat = "auto" | "json" | "pretty";

/** The whole runtime configuration. Built once by loadConfig; nothing else reads process.env. */
export interface Config {
  /** HTTP port. */
  port: number;
  /** HTTP bind address. */
  host: string;
  /** Embedded database directory and local secrets (admin token, generated keys). */
  dataDir: string;
  /**
   * DATA_DIR_MIN_FREE_MB: below this much free space in dataDir the embedded engine refuses work
   * that writes (503) and its workers stop claiming; 0 turns the guard off. Unused on PostgreSQL.
   */
  dataDirMinFreeMb: number;
  /** PostgreSQL connection string; null selects embedded PGlite in dataDir. */
  databaseUrl: string | null;
  /** Max connections in the PostgreSQL pool of this process. */
  databasePoolSize: number;
  /** AES-256-GCM key for API-key reveal; null until generated (embedded) or when missing (cluster). */
  encryptionKey: Buffer | null;
  /** HS256 secret for dashboard JWTs (issued by /api/v1/auth/session and accepted as bearer). */
  jwtSecret: string | null;
  /** JWKS URL whose keys may also sign accepted JWTs (an external identity provider). */
  jwtJwksUrl: string | null;
  /** Expected `iss` of JWTs, when set. */
  jwtIssuer: string | null;
  /** Lifetime of JWTs issued by /api/v1/auth/session and by each renewal. */
  sessionTtlSeconds: number;
  /** How recent a session's sign-in must be to reveal or create API keys (SESSION_REAUTH_SECONDS). */
  sessionReauthSeconds: number;
  /** Absolute cap of a renewed session, counted from the sign-in (SESSION_MAX_HOURS). */
  sessionMaxHours: number;
  /** How long a remembered device opens sessions without the key, from the sign-in that remembered it (DEVICE_REMEMBER_DAYS). */
  deviceRememberDays: number;
  /** Sustained requests per second allowed per credential. */
  rateLimitPerSecond: number;
  /** Requests a credential may burst above the sustained rate. */
  rateLimitBurst: number;
  /** Per-node memory of the realtime path: authenticated keys and recent results. */
  hotCache: { authTtlMs: number; resultMaxEntries: number; resultMaxBytes: number };
  /** Redis for cluster-wide rate-limit counters; null → PostgreSQL (cluster) or memory (embedded). */
  redisUrl: string | null;
  /** Largest JSON request body accepted. */
  bodyLimitBytes: number;
  /** Largest uploaded list file accepted. */
  maxUploadBytes: number;
  /** Bytes of stored upload rows one user may keep (docs/storage.md); a larger upload is refused. */
  uploadStoragePerUserBytes: number;
  /** Uploaded lists are parsed on worker threads (files/parse/parse-pool.ts) with these caps. */
  uploadParse: { threads: number; maxMemoryMb: number; timeoutMs: number };
  /** Uploads in progress at once on this process, all users and one user (uploads/admission.ts). */
  uploadsInProgress: { perProcess: number; perUser: number };
  /** TRUST_PROXY: the reverse proxies whose X-Forwarded-* headers are believed (trust-proxy.ts); empty: none. */
  trustProxy: readonly string[];
  /** Limits of the HTTP server against slow and piled-up clients. */
  httpServer: HttpServerConfig;
  /** METRICS_TOKEN: when set, GET /metrics requires `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /**
   * ADMIN_TOKEN: the bearer token of the operator API and console (/api/v1/operator, any client
   * address); null (unset) disables them (404). At least 24 characters.
   */
  operatorToken: string | null;
  logLevel: LogLevel;
  /** LOG_FORMAT (default auto): serve/worker logs as JSON lines, or pretty on a terminal. */
  logFormat: LogFormat;
  /** Grace period for in-flight work at SIGTERM before the process exits anyway. */
  shutdownTimeoutMs: number;
  /** Verification engine settings (DNS, SMTP probing). */
  verify: VerifyConfig;
  /** Batch workers: concurrency, politeness, leases, retries. */
  worker: WorkerConfig;
  /** Completion webhooks. */
  webhooks: WebhookConfig;
  /**
   * RESULT_RETENTION_DAYS: finished tasks older than this many days lose their jobs, results and
   * uploaded file (the ledger stays); null (unset) keeps them forever.
   */
  resultRetentionDays: number | null;
  /**
   * TASK_RETRY_WINDOW_MINUTES: a task's retry window when it names none: deferred or unreachable
   * addresses are retried for at most this long after the task starts, then settled as unknown.
   */
  taskRetryWindowMinutes: number;
  /**
   * Set-up problems that don't stop the process but cost accuracy (a HELO name receivers refuse);
   * logged at WARN when serve/worker start and listed by /readyz.
   */
  warnings: readonly ConfigWarning[];
}

export interface HttpServerConfig {
  /** HEADERS_TIMEOUT_MS: a request's headers must arrive within this (else 400 and close). */
  headersTimeoutMs: number;
  /** BODY_TIMEOUT_MS: a JSON body must arrive within this; uploads keep the request timeout. */
  bodyTimeoutMs: number;
  /**
   * MAX_CONNECTIONS_PER_IP: open connections one client address may hold; 0 = no cap. Unset: 256,
   * or 0 with TRUST_PROXY (every client then shares the proxy's address).
   */
  maxConnectionsPerIp: number;
  /** MAX_CONNECTIONS: open connections in all; null (unset) = derived from the open-file limit. */
  maxConnections: number | null;
}

export interface WorkerConfig {
  /** SMTP sessions (domain groups) one worker process runs at once. */
  concurrency: number;
  /** Cluster-wide cap on the groups (SMTP sessions) one user's tasks run at once; 0 = none. */
  maxSessionsPerUser: number;
  /** Delays before re-verifying a greylisted / temporarily failed address, one per retry. */
  retryDelaysMs: number[];
  /** Delays before retrying an address whose host was unreachable or whose DNS failed. */
  unreachableRetryDelaysMs: number[];
  /** How long a claimed job group stays ours without a heartbeat. */
  leaseMs: number;
  /** Idle wait between claims when no work is due. */
  pollIntervalMs: number;
  /** Attempts before a job that keeps failing internally is marked failed. */
  maxAttempts: number;
}

export interface WebhookConfig {
  /** Deliver to loopback/private/link-local addresses (off: SSRF protection). */
  allowPrivate: boolean;
  /** Per-attempt timeout. */
  timeoutMs: number;
  /** Give up retrying a delivery this long after it was created. */
  retryWindowMs: number;
  /** Deliveries one dispatcher has in flight at once. */
  concurrency: number;
  /** Deliveries in flight to one receiver host at once, across dispatchers. */
  maxPerHost: number;
}

export interface VerifyConfig {
  /** Resolver addresses (IPv4[:port], IPv6, [IPv6]:port); empty = the system's. */
  dnsServers: string[];
  dnsTimeoutMs: number;
  dnsTries: number;
  dnsCacheTtlMs: number;
  smtpPort: number;
  /** EHLO name: SMTP_HELO_NAME, else os.hostname() when fully qualified, else a derived FQDN. */
  smtpHeloName: string;
  /** Where smtpHeloName came from; anything but "configured" comes with a warning. */
  smtpHeloNameSource: HeloNameSource;
  /** Envelope sender: SMTP_MAIL_FROM, else verify@<the HELO name, when it is an FQDN>. */
  smtpMailFrom: string;
  smtpConnectTimeoutMs: number;
  smtpGreetingTimeoutMs: number;
  smtpCommandTimeoutMs: number;
  /** Most RCPTs per SMTP transaction. */
  smtpMaxRcpt: number;
  /** Most rejections one SMTP connection may collect before the rest continue on a new one. */
  smtpErrorBudget: number;
  /** Use STARTTLS when a mail server offers it. */
  smtpStartTls: boolean;
  /**
   * SMTP_MAX_CONNECTIONS_PER_HOST: concurrent SMTP sessions to one mail server IP per identity;
   * cluster-wide through the host gate (serve, worker), per process in engines without one (CLI).
   */
  maxSessionsPerHost: number;
  /** How long a connection stays open, idle, for the next domain on the same server IP. */
  smtpIdleReuseMs: number;
  catchallCacheTtlMs: number;
  /** socks5:// URL for SMTP egress, or null. */
  smtpProxy: string | null;
  /** SMTP_EGRESS: source addresses and socks5:// URLs, one identity each; empty: smtpProxy or direct. */
  smtpEgress: readonly string[];
  /** SMTP_EGRESS_REST_SECONDS, in ms: how long a blocked or throttled identity rests for a provider. */
  smtpEgressRestMs: number;
  /** PROVIDER_PACE_QUIET_SECONDS, in ms: a provider's pace not refused for this long is forgotten (docs/pacing.md). */
  providerPaceQuietMs: number;
  /** Probe mail hosts on loopback/private/link-local addresses (test worlds, labs); off: refused. */
  smtpAllowPrivateHosts: boolean;
  /** Deadline of one realtime verification; past it the answer is 408 with partial results. */
  verifyTimeoutMs: number;
  /** How long a definitive result is reused for the same address (0 disables the cache). */
  resultCacheTtlMs: number;
  /** Distinct addresses one user may have in fresh realtime verification at once, per process. */
  maxInFlightPerUser: number;
}

/** What loadConfig may ask of the machine (tests pin it). */
export interface ConfigHost {
  hostname: () => string;
}

/** DATA_DIR when unset, relative to the working directory. */
export const DEFAULT_DATA_DIR: string = SETTINGS.DATA_DIR.default;

export function loadConfig(
  env: Record<string, string | undefined>,
  host: ConfigHost = { hostname: osHostname },
): Readonly<Config> {
  const jwtSecret = optionalVar(env, "JWT_SECRET");
  if (jwtSecret !== null && Buffer.byteLength(jwtSecret) < SETTINGS.JWT_SECRET.minLength) {
    throw new ConfigError(`JWT_SECRET must be at least ${String(SETTINGS.JWT_SECRET.minLength)} bytes long`);
  }
  const trustProxy = Object.freeze(parseTrustProxy(env.TRUST_PROXY));
  const smtp = resolveSmtpIdentity({
    heloName: optionalStringSetting(env, "SMTP_HELO_NAME"),
    mailFrom: optionalStringSetting(env, "SMTP_MAIL_FROM"),
    hostname: host.hostname(),
  });
  return Object.freeze({
    port: intSetting(env, "PORT"),
    host: stringSetting(env, "HOST"),
    dataDir: resolve(stringSetting(env, "DATA_DIR")),
    // PGlite adds WAL 16 MiB at a time and, like PostgreSQL, PANICs when it cannot create the next
    // segment (docs/disk-space.md). A verified 10,000-address list took about 19 MB of tables and
    // 32-48 MB of WAL (measured), so 256 MB leaves room for a few such lists accepted just before
    // the guard trips and for the WAL segments they need.
    dataDirMinFreeMb: intSetting(env, "DATA_DIR_MIN_FREE_MB"),
    databaseUrl: urlSetting(env, "DATABASE_URL"),
    databasePoolSize: intSetting(env, "DATABASE_POOL_SIZE"),
    encryptionKey: keyVar(env, "ENCRYPTION_KEY"),
    jwtSecret,
    jwtJwksUrl: urlSetting(env, "JWT_JWKS_URL"),
    jwtIssuer: optionalStringSetting(env, "JWT_ISSUER"),
    ...loadSessionConfig(env),
    rateLimitPerSecond: intSetting(env, "RATE_LIMIT_PER_SECOND"),
    rateLimitBurst: intSetting(env, "RATE_LIMIT_BURST"),
    hotCache: Object.freeze({
      authTtlMs: durationMsSetting(env, "AUTH_CACHE_TTL_MS"),
      resultMaxEntries: intSetting(env, "RESULT_CACHE_MAX_ENTRIES"),
      resultMaxBytes: sizeBytesSetting(env, "RESULT_CACHE_MAX_MB"),
    }),
    redisUrl: urlSetting(env, "REDIS_URL"),
    bodyLimitBytes: sizeBytesSetting(env, "BODY_LIMIT_BYTES"),
    maxUploadBytes: sizeBytesSetting(env, "MAX_UPLOAD_BYTES"),
    uploadStoragePerUserBytes: sizeBytesSetting(env, "UPLOAD_STORAGE_PER_USER_MB"),
    uploadParse: Object.freeze({
      // One: a parsing thread may take its whole heap cap, and the server's memory bound
      // (hostile-load suite: < 1 GiB under 20 concurrent 10 MB uploads) leaves room for one.
      threads: intSetting(env, "UPLOAD_PARSE_THREADS"),
      maxMemoryMb: intSetting(env, "UPLOAD_PARSE_MEMORY_MB"),
      timeoutMs: durationMsSetting(env, "UPLOAD_PARSE_TIMEOUT_SECONDS"),
    }),
    uploadsInProgress: Object.freeze({
      perProcess: intSetting(env, "UPLOADS_MAX_IN_PROGRESS"),
      perUser: intSetting(env, "UPLOADS_MAX_IN_PROGRESS_PER_USER"),
    }),
    trustProxy,
    httpServer: loadHttpServerConfig(env, trustProxy),
    metricsToken: optionalStringSetting(env, "METRICS_TOKEN"),
    // An operator token opens every account: short ones are refused rather than guessed (the
    // failed attempts limit makes 24 random characters far beyond reach).
    operatorToken: optionalStringSetting(
      env,
      "ADMIN_TOKEN",
      "ADMIN_TOKEN must be at least 24 characters long (e.g. openssl rand -hex 24)",
    ),
    logLevel: enumSetting<LogLevel>(env, "LOG_LEVEL"),
    logFormat: enumSetting<LogFormat>(env, "LOG_FORMAT"),
    shutdownTimeoutMs: durationMsSetting(env, "SHUTDOWN_TIMEOUT_MS"),
    verify: loadVerifyConfig(env, smtp),
    worker: loadWorkerConfig(env),
    webhooks: Object.freeze({
      allowPrivate: boolSetting(env, "WEBHOOK_ALLOW_PRIVATE"),
      timeoutMs: durationMsSetting(env, "WEBHOOK_TIMEOUT_MS"),
      retryWindowMs: durationMsSetting(env, "WEBHOOK_RETRY_HOURS"),
      concurrency: intSetting(env, "WEBHOOK_CONCURRENCY"),
      maxPerHost: intSetting(env, "WEBHOOK_MAX_PER_HOST"),
    }),
    resultRetentionDays: optionalIntSetting(env, "RESULT_RETENTION_DAYS"),
    // 60: the default VERIFY_RETRY_DELAYS (5 + 15 + 30 min) fit for an address tried in the
    // task's first 10 minutes; longer lists lose their last retries rather than stay open. The
    // bound is MAX_RETRY_WINDOW_MINUTES (tasks/task-input.ts; config/ imports only lib/).
    taskRetryWindowMinutes: intSetting(env, "TASK_RETRY_WINDOW_MINUTES"),
    warnings: Object.freeze(smtp.warnings),
  });
}

function loadSessionConfig(env: Record<string, string | undefined>): {
  sessionTtlSeconds: number;
  sessionMaxHours: number;
  sessionReauthSeconds: number;
  deviceRememberDays: number;
} {
  const sessionTtlSeconds = intSetting(env, "SESSION_TTL_SECONDS");
  const sessionMaxHours = intSetting(env, "SESSION_MAX_HOURS");
  // A cap shorter than one lifetime would cut every session's first token short: refuse the pair
  // rather than silently honour one of them.
  if (sessionMaxHours * 3600 < sessionTtlSeconds)
    throw new ConfigError(
      `SESSION_MAX_HOURS (${sessionMaxHours} h) must be at least SESSION_TTL_SECONDS (${sessionTtlSeconds} s)`,
    );
  // Seeing or making a key from a session needs a recent sign-in (principal.ts requireRecentSignIn).
  const sessionReauthSeconds = intSetting(env, "SESSION_REAUTH_SECONDS");
  // A remembered device outlives every session it opens; 90 days bounds what a cookie left on a
  // disk can do, as browsers' own "keep me signed in" offers do (30 days is the common choice).
  const deviceRememberDays = intSetting(env, "DEVICE_REMEMBER_DAYS");
  return { sessionTtlSeconds, sessionMaxHours, sessionReauthSeconds, deviceRememberDays };
}

function loadHttpServerConfig(
  env: Record<string, string | undefined>,
  trustProxy: readonly string[],
): Readonly<HttpServerConfig> {
  return Object.freeze({
    // Node's own default is 60 s: long enough for 19,900 silent connections from one address to
    // pile up and exhaust 20,000 file descriptors.
    headersTimeoutMs: durationMsSetting(env, "HEADERS_TIMEOUT_MS"),
    // A JSON body is at most BODY_LIMIT_BYTES (5 MiB by default): 30 s is ~1.4 Mbit/s.
    bodyTimeoutMs: durationMsSetting(env, "BODY_TIMEOUT_MS"),
    // Behind a proxy every client has the proxy's address: no per-address cap unless set.
    maxConnectionsPerIp: intSetting(env, "MAX_CONNECTIONS_PER_IP", trustProxy.length > 0 ? 0 : undefined),
    maxConnections: optionalIntSetting(env, "MAX_CONNECTIONS"),
  });
}

function loadWorkerConfig(env: Record<string, string | undefined>): Readonly<WorkerConfig> {
  return Object.freeze({
    concurrency: intSetting(env, "WORKER_CONCURRENCY"),
    // The fair order already gives a waiting user the next free sessions; a cap also keeps a
    // share free for users who have not arrived yet, at the cost of idle sessions when one is alone.
    maxSessionsPerUser: intSetting(env, "MAX_SESSIONS_PER_USER"),
    // Greylisting windows are typically 5-15 minutes; an immediate retry never helps.
    retryDelaysMs: secondsListSetting(env, "VERIFY_RETRY_DELAYS"),
    // Unreachable hosts and DNS failures: retry soon, give up within minutes (a dead domain must
    // not hold a task open).
    unreachableRetryDelaysMs: secondsListSetting(env, "VERIFY_UNREACHABLE_RETRY_DELAYS"),
    leaseMs: durationMsSetting(env, "JOB_LEASE_SECONDS"),
    pollIntervalMs: durationMsSetting(env, "WORKER_POLL_INTERVAL_MS"),
    maxAttempts: intSetting(env, "JOB_MAX_ATTEMPTS"),
  });
}

function loadVerifyConfig(
  env: Record<string, string | undefined>,
  smtp: { heloName: string; heloNameSource: HeloNameSource; mailFrom: string },
): Readonly<VerifyConfig> {
  const proxyVar = optionalVar(env, "SMTP_PROXY"); // checkProxyUrl: its schemes, credentials never printed
  const smtpProxy = proxyVar === null ? null : checkProxyUrl("SMTP_PROXY", proxyVar);
  return Object.freeze({
    dnsServers: dnsServersVar(env, "DNS_SERVERS"),
    dnsTimeoutMs: durationMsSetting(env, "DNS_TIMEOUT_MS"),
    dnsTries: intSetting(env, "DNS_TRIES"),
    dnsCacheTtlMs: durationMsSetting(env, "DNS_CACHE_TTL_MS"),
    smtpPort: intSetting(env, "SMTP_PORT"),
    smtpHeloName: smtp.heloName,
    smtpHeloNameSource: smtp.heloNameSource,
    smtpMailFrom: smtp.mailFrom,
    smtpConnectTimeoutMs: durationMsSetting(env, "SMTP_CONNECT_TIMEOUT_MS"),
    smtpGreetingTimeoutMs: durationMsSetting(env, "SMTP_GREETING_TIMEOUT_MS"),
    smtpCommandTimeoutMs: durationMsSetting(env, "SMTP_COMMAND_TIMEOUT_MS"),
    smtpMaxRcpt: intSetting(env, "SMTP_MAX_RCPT"),
    // Postfix slows a client after 10 errors (smtpd_soft_error_limit) and drops it at 20.
    smtpErrorBudget: intSetting(env, "SMTP_ERROR_BUDGET"),
    smtpStartTls: boolSetting(env, "SMTP_STARTTLS"),
    maxSessionsPerHost: intSetting(env, "SMTP_MAX_CONNECTIONS_PER_HOST"),
    smtpIdleReuseMs: durationMsSetting(env, "SMTP_IDLE_REUSE_MS"),
    catchallCacheTtlMs: durationMsSetting(env, "CATCHALL_CACHE_TTL_MS"),
    smtpProxy,
    smtpEgress: Object.freeze(parseEgressList(env.SMTP_EGRESS, smtpProxy)),
    smtpEgressRestMs: durationMsSetting(env, "SMTP_EGRESS_REST_SECONDS"),
    providerPaceQuietMs: durationMsSetting(env, "PROVIDER_PACE_QUIET_SECONDS"),
    smtpAllowPrivateHosts: boolSetting(env, "SMTP_ALLOW_PRIVATE_HOSTS"),
    verifyTimeoutMs: durationMsSetting(env, "VERIFY_TIMEOUT_MS"),
    resultCacheTtlMs: durationMsSetting(env, "VERIFY_CACHE_TTL_SECONDS"),
    maxInFlightPerUser: intSetting(env, "VERIFY_MAX_IN_FLIGHT_PER_USER"),
  });
}
