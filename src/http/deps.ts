import type { Readable } from "node:stream";
import type { Authenticator } from "../auth/authenticate.ts";
import type { JwtService } from "../auth/jwt.ts";
import type { SessionService } from "../auth/sessions.ts";
import type { RememberedDeviceService } from "../auth/remembered-devices.ts";
import type { SignInLinkService } from "../auth/sign-in-links.ts";
import type { CreditsService } from "../credits/service.ts";
import type { ApiKeysService } from "../keys/service.ts";
import type { Clock } from "../lib/clock.ts";
import type { DiskSpaceGuard } from "../observability/disk-space.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { ReadinessService } from "../observability/readiness.ts";
import type { RateLimiter } from "../ratelimit/limiter.ts";
import type { ReportsService } from "../reports/service.ts";
import type { TasksService } from "../tasks/service.ts";
import type { UploadsService } from "../uploads/service.ts";
import type { UsersService } from "../users/service.ts";
import type { OperatorService } from "../users/operator.ts";
import type { RealtimeService } from "../realtime/service.ts";
import type { WebhooksService } from "../webhooks/service.ts";

/** The few configuration values routes read; the rest of Config stays in app/. */
export interface HttpSettings {
  /** MAX_UPLOAD_BYTES: the largest file POST /api/v1/tasks/batch/upload accepts. */
  maxUploadBytes: number;
  /** WEBHOOK_ALLOW_PRIVATE: accept a webhook_url whose host is a literal private address. */
  allowPrivateWebhooks: boolean;
  /** METRICS_TOKEN: the bearer token GET /metrics requires; null leaves it open. */
  metricsToken: string | null;
  /** ADMIN_TOKEN: the bearer token of the operator API (/api/v1/operator); null disables it. */
  operatorToken: string | null;
  /** TASK_RETRY_WINDOW_MINUTES: a task's retry_window_minutes when the request names none. */
  taskRetryWindowMinutes: number;
  /** SESSION_REAUTH_SECONDS in ms: how recent a session's sign-in must be to reveal or create keys. */
  sessionReauthMs: number;
}

/**
 * Everything a route or HTTP plugin may use: domain services and settings. No database, no
 * engine, no Config — a route reaches storage only through a service method (DESIGN.md §4).
 * Built from the composition root's Services by app/http-deps.ts.
 */
export interface HttpDeps {
  settings: Readonly<HttpSettings>;
  clock: Clock;
  metrics: Metrics;
  readiness: ReadinessService;
  /** DATA_DIR free space (embedded engine): work that writes is refused below the threshold. */
  diskSpace: DiskSpaceGuard;
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  jwt: JwtService;
  sessions: SessionService;
  /** One-time dashboard sign-in links tied to a key (auth/sign-in-links.ts). */
  signInLinks: SignInLinkService;
  /** Remembered devices: the cookie that opens sessions of its key (auth/remembered-devices.ts). */
  devices: RememberedDeviceService;
  apiKeys: ApiKeysService;
  credits: CreditsService;
  users: UsersService;
  operator: OperatorService;
  reports: ReportsService;
  realtime: RealtimeService;
  tasks: TasksService;
  uploads: UploadsService;
  webhooks: WebhooksService;
  /** Online backups of the embedded database, each streamed as a tar of its data directory; null on PostgreSQL. */
  databaseBackups: { start(): Promise<Readable>; abort(): Promise<void> } | null;
}
