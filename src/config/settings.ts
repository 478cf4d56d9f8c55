// Every environment variable the server reads, declared once: its kind, unit, default, bounds and
// what it does. loadConfig (index.ts) reads each setting through this table, and
// docs/configuration.md's table is generated from it (`npm run docs:config`;
// test/unit/config/docs-drift.test.ts fails when the page drifts or a variable read by loadConfig
// is missing here). The command-line client's own variables (MAILPROBE_URL, MAILPROBE_KEY,
// client-config.ts) are not the server's and are documented in docs/operations.md.
//
// Names are never renamed (deployments set them): a unit is the one the name's suffix says
// (`_MS` ms, `_SECONDS` s, `_MINUTES` min, `_HOURS` h, `_DAYS` days, `_MB` MB = MiB, `_BYTES`
// bytes), and a name without a suffix says its unit here.

/** How the raw value is parsed (env-vars.ts and the parsers beside it). */
export type SettingKind = "int" | "bool" | "enum" | "string" | "url" | "key" | "list";

/** The unit of a value as the operator writes it; loadConfig converts durations and sizes once. */
export type SettingUnit = "ms" | "s" | "min" | "h" | "days" | "MB" | "bytes" | "count" | "none";

export interface Setting {
  kind: SettingKind;
  unit: SettingUnit;
  /** The value when unset, in the setting's own unit; null: unset means "none" or is derived. */
  default: number | boolean | string | readonly number[] | null;
  /** The documented default when it is not the value itself (derived, generated, or explained). */
  defaultText?: string;
  /** Inclusive bounds of an int. */
  min?: number;
  max?: number;
  /** Shortest accepted value of a secret (bytes for JWT_SECRET, characters for ADMIN_TOKEN). */
  minLength?: number;
  /** Accepted values of an enum. */
  values?: readonly string[];
  /** Accepted URL schemes of a url. */
  protocols?: readonly string[];
  /** Markdown, one table row of docs/configuration.md. */
  description: string;
}

export const SETTINGS = {
  PORT: {
    kind: "int",
    unit: "none",
    default: 8080,
    min: 0,
    max: 65_535,
    description:
      "HTTP port. Already taken by another program: `mailprobe: port 8080 is in use; set PORT` on stderr, exit 1",
  },
  HOST: {
    kind: "string",
    unit: "none",
    default: "0.0.0.0",
    description:
      "HTTP bind address. `0.0.0.0` (IPv4) and `::` (IPv6 and IPv4) answer on **every interface** of the machine, and the start banner lists each address; `127.0.0.1` keeps the API on this machine (behind a reverse proxy on the same host: see [docs/deploy.md](deploy.md))",
  },
  DATA_DIR: {
    kind: "string",
    unit: "none",
    default: "./data",
    description: "embedded database (`pgdata/`), generated secrets, admin endpoint file",
  },
  DATA_DIR_MIN_FREE_MB: {
    kind: "int",
    unit: "MB",
    default: 256,
    min: 0,
    max: 1_048_576,
    description:
      "embedded engine: below this much free space in `DATA_DIR` (sampled every second), requests that write answer 503 `SERVICE_UNAVAILABLE` with `Retry-After: 60`, the workers, the webhook dispatcher and the retention sweeper stop claiming and `/readyz` answers 503 (see [A full data directory](operations.md#a-full-data-directory)); 0 turns the guard off. Not used on PostgreSQL",
  },
  DATABASE_URL: {
    kind: "url",
    unit: "none",
    default: null,
    protocols: ["postgres:", "postgresql:"],
    description: "`postgres://…` selects PostgreSQL (cluster mode); unset = embedded PGlite",
  },
  DATABASE_POOL_SIZE: {
    kind: "int",
    unit: "count",
    default: 10,
    min: 1,
    max: 1000,
    description: "PostgreSQL connections per process",
  },
  ENCRYPTION_KEY: {
    kind: "key",
    unit: "none",
    default: null,
    defaultText: "generated in `DATA_DIR/encryption.key` (embedded)",
    description:
      "32 bytes (64 hex chars or base64) for AES-256-GCM encryption of API keys (reveal) and of webhook signing secrets. On PostgreSQL it is required: without it, creating a key answers 500 and webhook secrets stay in the clear (a warning at every start; the next start with a key encrypts them). The workers need the same key to sign webhooks",
  },
  JWT_SECRET: {
    kind: "string",
    unit: "none",
    default: null,
    minLength: 32,
    defaultText: "generated in `DATA_DIR/jwt.secret` (embedded)",
    description: "HS256 secret (≥ 32 bytes) of dashboard sessions; on PostgreSQL set it on every node",
  },
  JWT_JWKS_URL: {
    kind: "url",
    unit: "none",
    default: null,
    protocols: ["https:", "http:"],
    description: "JWKS of an external identity provider whose JWTs (`sub` = user id) are also accepted",
  },
  JWT_ISSUER: {
    kind: "string",
    unit: "none",
    default: null,
    description: "required `iss` of accepted JWTs (and set on issued ones)",
  },
  SESSION_TTL_SECONDS: {
    kind: "int",
    unit: "s",
    default: 900,
    min: 60,
    max: 86_400,
    description:
      "lifetime of JWTs from `POST /api/v1/auth/session` and of each renewal (`POST /api/v1/auth/session/refresh`)",
  },
  SESSION_MAX_HOURS: {
    kind: "int",
    unit: "h",
    default: 12,
    min: 1,
    max: 720,
    description:
      "renewals never take a session past this many hours after its sign-in (1-720; at least `SESSION_TTL_SECONDS`)",
  },
  SESSION_REAUTH_SECONDS: {
    kind: "int",
    unit: "s",
    default: 600,
    min: 60,
    max: 86_400,
    description:
      "a session signed in longer ago than this cannot reveal or create API keys (403: sign in again with the key); 60-86400",
  },
  DEVICE_REMEMBER_DAYS: {
    kind: "int",
    unit: "days",
    default: 30,
    min: 1,
    max: 90,
    description:
      'how long a browser whose user ticked "Remember this device" at sign-in opens sessions without the key, counted from that sign-in (not extended by use); 1-90 ([dashboard-session](dashboard-session.md#remembered-devices))',
  },
  RATE_LIMIT_PER_SECOND: {
    kind: "int",
    unit: "count",
    default: 20,
    min: 1,
    max: 1_000_000,
    description: "sustained requests per second per credential, and per user across all their credentials",
  },
  RATE_LIMIT_BURST: {
    kind: "int",
    unit: "count",
    default: 40,
    min: 1,
    max: 1_000_000,
    description: "requests a credential (and a user) may burst (the extra refills over 10 s)",
  },
  ADMIN_TOKEN: {
    kind: "string",
    unit: "none",
    default: null,
    minLength: 24,
    description:
      "the bearer token of the operator API (`/api/v1/operator/…`) and the dashboard's Operator console, from any address; at least 24 characters (`openssl rand -hex 24`). Unset: the operator API does not exist (404). Not the `DATA_DIR/admin.json` token of the loopback admin API the CLI uses (see [Operator console](operations.md#operator-console))",
  },
  METRICS_TOKEN: {
    kind: "string",
    unit: "none",
    default: null,
    description:
      "when set, `GET /metrics` requires `Authorization: Bearer <token>` (else 401); unset, `/metrics` is public — set it or firewall the port",
  },
  REDIS_URL: {
    kind: "url",
    unit: "none",
    default: null,
    protocols: ["redis:", "rediss:"],
    description: "Redis for rate-limit counters; unset = PostgreSQL table (cluster) or memory (embedded)",
  },
  AUTH_CACHE_TTL_MS: {
    kind: "int",
    unit: "ms",
    default: 5000,
    min: 0,
    max: 3_600_000,
    description:
      "how long a node remembers an authenticated API key (0 = never); revocations made through mailprobe reach every node at once through `LISTEN/NOTIFY`, so this only bounds a lost message or a change made in the database by hand (one lookup per key per TTL either way)",
  },
  RESULT_CACHE_MAX_ENTRIES: {
    kind: "int",
    unit: "count",
    default: 100_000,
    min: 0,
    max: 10_000_000,
    description:
      "most results (user + address) a node remembers for the realtime path; 0 = none (every answer read from the table)",
  },
  RESULT_CACHE_MAX_MB: {
    kind: "int",
    unit: "MB",
    default: 64,
    min: 1,
    max: 16_384,
    description: "memory bound of those remembered results",
  },
  BODY_LIMIT_BYTES: {
    kind: "int",
    unit: "bytes",
    default: 5_242_880,
    min: 1024,
    description: "largest JSON body (a 10,000-address task fits)",
  },
  MAX_UPLOAD_BYTES: {
    kind: "int",
    unit: "bytes",
    default: 10_485_760,
    min: 1024,
    description: "largest uploaded file; larger answers 400 `VALIDATION_ERROR`",
  },
  UPLOAD_STORAGE_PER_USER_MB: {
    kind: "int",
    unit: "MB",
    default: 256,
    min: 1,
    max: 1_048_576,
    description:
      "what the kept rows of one user's uploads may take in the database, together (compressed, as stored); an upload that would pass it answers 409 `CONFLICT` until the user deletes tasks or retention does ([storage](storage.md))",
  },
  UPLOAD_PARSE_THREADS: {
    kind: "int",
    unit: "count",
    default: 1,
    min: 1,
    max: 64,
    description:
      "worker threads that parse uploaded lists (further uploads wait for one, the wait counted in the time cap); each may use up to `UPLOAD_PARSE_MEMORY_MB` of heap, so raise it only with memory to spare (a second thread measured +230 MB of peak RSS under 20 concurrent 10 MB uploads, and no faster on the embedded engine, whose single connection writes the uploads one at a time)",
  },
  UPLOAD_PARSE_MEMORY_MB: {
    kind: "int",
    unit: "MB",
    default: 256,
    min: 64,
    max: 16_384,
    description:
      "heap cap of one parsing thread; a file that needs more is refused with a 400 naming the cap; the server is untouched",
  },
  UPLOADS_MAX_IN_PROGRESS: {
    kind: "int",
    unit: "count",
    default: 4,
    min: 1,
    max: 1000,
    description:
      "uploads this process takes at once (read, parsed and written); one more is answered 503 `SERVICE_UNAVAILABLE` with `Retry-After` before its body is read",
  },
  UPLOADS_MAX_IN_PROGRESS_PER_USER: {
    kind: "int",
    unit: "count",
    default: 2,
    min: 1,
    max: 1000,
    description:
      "uploads one user has in progress at once on this process; one more is answered 429 `RATE_LIMITED` with `Retry-After`",
  },
  UPLOAD_PARSE_TIMEOUT_SECONDS: {
    kind: "int",
    unit: "s",
    default: 60,
    min: 1,
    max: 3600,
    description:
      "wall-time cap of one parse, waiting for a thread included; beyond it the thread is stopped and the file refused (400)",
  },
  TRUST_PROXY: {
    kind: "list",
    unit: "none",
    default: null,
    defaultText: "`false`",
    description:
      "the reverse proxies whose `X-Forwarded-*` is believed: addresses, CIDR ranges or `loopback` / `linklocal` / `uniquelocal`, comma-separated; the client is the rightmost `X-Forwarded-For` entry they did not add. `true` (every hop) is refused at start: a client could write any address",
  },
  HEADERS_TIMEOUT_MS: {
    kind: "int",
    unit: "ms",
    default: 15_000,
    min: 1000,
    max: 120_000,
    description:
      "a request's headers must arrive within this; else 400 `VALIDATION_ERROR` and the connection is closed (1000–120000)",
  },
  BODY_TIMEOUT_MS: {
    kind: "int",
    unit: "ms",
    default: 30_000,
    min: 1000,
    max: 120_000,
    description:
      "a JSON body must arrive within this once it is read (after authentication); else 400 `VALIDATION_ERROR` naming `body`, connection closed. Uploads keep the 120 s request timeout (1000–120000)",
  },
  MAX_CONNECTIONS_PER_IP: {
    kind: "int",
    unit: "count",
    default: 256,
    min: 0,
    max: 1_000_000,
    defaultText: "`256`; `0` when `TRUST_PROXY` lists a proxy",
    description:
      'open connections one client address may hold; more are closed at once, unanswered. `0` = no cap. Behind a proxy every client has the proxy\'s address: keep it `0` there (see "Connections and slow clients")',
  },
  MAX_CONNECTIONS: {
    kind: "int",
    unit: "count",
    default: null,
    min: 0,
    max: 10_000_000,
    defaultText:
      "the open-file limit less a quarter (Linux; `ulimit -n` 20000 → 15000); no cap where unknown",
    description:
      "open connections in all; beyond it only loopback addresses get 16 more (the operator's health checks), the rest are closed at once. `0` = no cap",
  },
  LOG_LEVEL: {
    kind: "enum",
    unit: "none",
    default: "info",
    values: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
    description: "`fatal`…`trace`, `silent` (logs carry `reqId`)",
  },
  LOG_FORMAT: {
    kind: "enum",
    unit: "none",
    default: "auto",
    values: ["auto", "json", "pretty"],
    description:
      "`serve`/`worker` logs: `auto` = human-readable, colourised lines (pino-pretty) when stdout is a terminal, JSON lines otherwise; `json` or `pretty` forces one. Human lines are one per record, a request one line (`GET /api/v1/tasks 200 12 ms`); JSON keeps Fastify's request and response records",
  },
  SHUTDOWN_TIMEOUT_MS: {
    kind: "int",
    unit: "ms",
    default: 30_000,
    min: 0,
    max: 600_000,
    description: "drain time at SIGTERM: running SMTP sessions may finish, then HTTP closes",
  },
  DNS_SERVERS: {
    kind: "list",
    unit: "none",
    default: null,
    defaultText: "system resolvers",
    description:
      "comma-separated resolver addresses: `IPv4`, `IPv4:port`, `IPv6`, `[IPv6]` or `[IPv6]:port` (port 1–65535). Host names are refused at start: Node's resolver takes addresses only",
  },
  DNS_TIMEOUT_MS: {
    kind: "int",
    unit: "ms",
    default: 2000,
    min: 50,
    max: 60_000,
    description: "per-try timeout of each DNS query",
  },
  DNS_TRIES: {
    kind: "int",
    unit: "count",
    default: 2,
    min: 1,
    max: 10,
    description: "tries of each DNS query",
  },
  DNS_CACHE_TTL_MS: {
    kind: "int",
    unit: "ms",
    default: 300_000,
    min: 0,
    max: 86_400_000,
    description: "reuse of MX/address/PTR facts",
  },
  SMTP_PORT: {
    kind: "int",
    unit: "none",
    default: 25,
    min: 1,
    max: 65_535,
    description: "port probed on mail hosts",
  },
  SMTP_HELO_NAME: {
    kind: "string",
    unit: "none",
    default: null,
    defaultText: "the host name if fully qualified, else a stand-in (see below)",
    description:
      "EHLO name: a fully-qualified name (`mail.example.com`) that your egress IP's PTR points at and that resolves back to it. A bare name (`web-1`) or an address literal (`[192.0.2.1]`) is used with a warning; anything that is not a host name stops the process",
  },
  SMTP_MAIL_FROM: {
    kind: "string",
    unit: "none",
    default: null,
    defaultText: "`verify@<SMTP_HELO_NAME>` (`verify@<stand-in>` when that is not fully qualified)",
    description:
      "envelope sender of probes; use an address of a domain you own with MX records. Must be `local@domain`; a domain that is not fully qualified is used with a warning",
  },
  SMTP_CONNECT_TIMEOUT_MS: {
    kind: "int",
    unit: "ms",
    default: 10_000,
    min: 100,
    max: 300_000,
    description: "TCP connect timeout per MX",
  },
  SMTP_GREETING_TIMEOUT_MS: {
    kind: "int",
    unit: "ms",
    default: 15_000,
    min: 100,
    max: 600_000,
    description: "wait for the 220 banner (tarpits)",
  },
  SMTP_COMMAND_TIMEOUT_MS: {
    kind: "int",
    unit: "ms",
    default: 15_000,
    min: 100,
    max: 600_000,
    description: "wait for each reply",
  },
  SMTP_MAX_RCPT: {
    kind: "int",
    unit: "count",
    default: 50,
    min: 1,
    max: 1000,
    description: "RCPTs per SMTP transaction (shrinks on `452 too many recipients`)",
  },
  SMTP_ERROR_BUDGET: {
    kind: "int",
    unit: "count",
    default: 9,
    min: 1,
    max: 1000,
    description:
      "most rejections one SMTP connection may collect; the rest of the group continues on a fresh connection (Postfix slows a client after 10 errors and drops it at 20)",
  },
  SMTP_STARTTLS: {
    kind: "bool",
    unit: "none",
    default: true,
    description: "use STARTTLS when a server offers it (opportunistic, certificate not verified)",
  },
  SMTP_PROXY: {
    kind: "url",
    unit: "none",
    default: null,
    protocols: ["socks5:", "socks5h:"],
    description:
      "`socks5://[user:pass@]host:port` (or `socks5h://`) egress for SMTP (the single identity when `SMTP_EGRESS` is unset; setting both is a start-up error). Any other scheme (`socks://`, `socks4://`, `http://`) stops the process at start with the URL named, credentials never printed; percent-encode `/ @ :` in the user or password",
  },
  SMTP_EGRESS: {
    kind: "list",
    unit: "none",
    default: null,
    defaultText: "unset (empty)",
    description:
      "comma-separated egress identities: local source addresses to bind (IPv4/IPv6 literals this machine carries, e.g. `192.0.2.10,192.0.2.11`) and/or SOCKS5 proxies (`socks5://user:pass@host:port`). Each identity has its own `SMTP_MAX_CONNECTIONS_PER_HOST` slots per server IP, its own idle connections and its own rests; sessions take the least busy identity that is not resting for the server's provider. Unset: one identity, `SMTP_PROXY` or the OS's source address, as before. A malformed entry, a duplicate, `0.0.0.0`/`::` or a non-socks5 URL stops the process with the entry named (credentials never printed), and so does, when `serve` or `worker` starts, an address no interface of the machine carries (each is bound once to check; a missing one would make every probe from it `unknown / connection_failed`). See [smtp-sessions.md](smtp-sessions.md#egress-identities)",
  },
  PROVIDER_PACE_QUIET_SECONDS: {
    kind: "int",
    unit: "s",
    default: 86_400,
    min: 1,
    max: 2_592_000,
    description:
      "a provider's pace (learnt from its volume throttle, tables `provider_paces`, `provider_pace_spends`) not refused again for this long, and at least four of its windows, is forgotten and the provider asked freely again ([pacing.md](pacing.md))",
  },
  SMTP_EGRESS_REST_SECONDS: {
    kind: "int",
    unit: "s",
    default: 900,
    min: 1,
    max: 604_800,
    description:
      'how long an identity that drew a blocklist (`ip_blocklisted`) or client throttling (`rate_limited`, "421 too many connections") reply rests for that provider (cluster-wide, table `smtp_egress_rests`); only with two or more identities',
  },
  SMTP_ALLOW_PRIVATE_HOSTS: {
    kind: "bool",
    unit: "none",
    default: false,
    description:
      "probe mail hosts whose address is loopback/private/link-local/reserved (test worlds and labs only); off, they are `unknown`, `private_host_refused`, never connected to",
  },
  CATCHALL_CACHE_TTL_MS: {
    kind: "int",
    unit: "ms",
    default: 3_600_000,
    min: 0,
    max: 604_800_000,
    description: "reuse of a domain's catch-all verdict",
  },
  VERIFY_TIMEOUT_MS: {
    kind: "int",
    unit: "ms",
    default: 30_000,
    min: 100,
    max: 600_000,
    description: "deadline of a realtime verification; past it: 408 with the partial result",
  },
  VERIFY_CACHE_TTL_SECONDS: {
    kind: "int",
    unit: "s",
    default: 86_400,
    min: 0,
    max: 2_592_000,
    description: "reuse of a definitive result for the same address (0 disables)",
  },
  VERIFY_MAX_IN_FLIGHT_PER_USER: {
    kind: "int",
    unit: "count",
    default: 10,
    min: 1,
    max: 10_000,
    description:
      "distinct addresses one user may have in fresh realtime verification at once; beyond it 429 `RATE_LIMITED` with `Retry-After: 1`. Cached answers do not count, nor does a repeat of an address already in flight. Counted in memory **per node**: with N API nodes a user may reach N × this",
  },
  WORKER_CONCURRENCY: {
    kind: "int",
    unit: "count",
    default: 16,
    min: 1,
    max: 1000,
    description: "SMTP sessions (domain groups) one worker process runs at once",
  },
  MAX_SESSIONS_PER_USER: {
    kind: "int",
    unit: "count",
    default: 0,
    min: 0,
    max: 100_000,
    description:
      "cluster-wide cap on the groups (SMTP sessions) one user's tasks run at once; `0` = no cap. The fair order already gives a waiting user the next free sessions ([docs/scheduling.md](scheduling.md)); a cap also keeps a share free for users not yet arrived, at the cost of idle sessions while one user is alone",
  },
  SMTP_MAX_CONNECTIONS_PER_HOST: {
    kind: "int",
    unit: "count",
    default: 2,
    min: 1,
    max: 100,
    description:
      "cluster-wide concurrent connections per mail server **IP address** (not per MX name: many tenant MX names share one front-end IP), batch and realtime alike (enforced through the database; the CLI's local engine holds it per process)",
  },
  SMTP_IDLE_REUSE_MS: {
    kind: "int",
    unit: "ms",
    default: 1000,
    min: 0,
    max: 60_000,
    description:
      "how long a connection whose conversation ended well stays open for the next domain served from the same server IP (one transaction per domain, `RSET` between); `0` closes every connection at once. See [docs/smtp-sessions.md](smtp-sessions.md)",
  },
  VERIFY_RETRY_DELAYS: {
    kind: "list",
    unit: "s",
    default: [300, 900, 1800],
    description:
      'seconds before re-verifying a greylisted/rate-limited/4xx address, one per retry; a server\'s own hint ("try again in N seconds") replaces the delay',
  },
  VERIFY_UNREACHABLE_RETRY_DELAYS: {
    kind: "list",
    unit: "s",
    default: [30, 120],
    description:
      "seconds before re-verifying an address whose host was unreachable (refused, dropped, timed out) or whose DNS failed, one per retry",
  },
  TASK_RETRY_WINDOW_MINUTES: {
    kind: "int",
    unit: "min",
    default: 60,
    min: 0,
    max: 1440,
    description:
      "a task's `retry_window_minutes` when it names none (0 to 1440): retries (both schedules above) are made only until this long after the task started; an address still deferred or unreachable then is settled as `unknown` (refunded). `0` retries nothing",
  },
  JOB_LEASE_SECONDS: {
    kind: "int",
    unit: "s",
    default: 120,
    min: 5,
    max: 3600,
    description: "a claimed job group is ours this long without heartbeat (crash recovery time)",
  },
  WORKER_POLL_INTERVAL_MS: {
    kind: "int",
    unit: "ms",
    default: 500,
    min: 10,
    max: 60_000,
    description:
      "longest idle wait between claims; an idle worker claims sooner when the next pending job falls due or one of its own sessions ends",
  },
  JOB_MAX_ATTEMPTS: {
    kind: "int",
    unit: "count",
    default: 3,
    min: 1,
    max: 20,
    description: "attempts before a job failing on internal errors is marked `failed` (and refunded)",
  },
  WEBHOOK_ALLOW_PRIVATE: {
    kind: "bool",
    unit: "none",
    default: false,
    description: "allow webhooks to loopback/private/link-local addresses",
  },
  WEBHOOK_TIMEOUT_MS: {
    kind: "int",
    unit: "ms",
    default: 10_000,
    min: 100,
    max: 120_000,
    description: "per delivery attempt",
  },
  WEBHOOK_RETRY_HOURS: {
    kind: "int",
    unit: "h",
    default: 24,
    min: 0,
    max: 720,
    description: "retry a failing delivery this long",
  },
  WEBHOOK_CONCURRENCY: {
    kind: "int",
    unit: "count",
    default: 8,
    min: 1,
    max: 1000,
    description: "deliveries one process has in flight at once (one user holds at most half of them)",
  },
  WEBHOOK_MAX_PER_HOST: {
    kind: "int",
    unit: "count",
    default: 2,
    min: 1,
    max: 1000,
    description: "deliveries in flight to one receiver host at once, across all processes",
  },
  RESULT_RETENTION_DAYS: {
    kind: "int",
    unit: "days",
    default: null,
    min: 1,
    max: 36_500,
    defaultText: "unset (keep forever)",
    description:
      "when set (1 to 36500), finished tasks older than this many days lose their jobs, results and uploaded file, as if deleted with `DELETE /api/v1/tasks/{id}`; credit transactions are kept. The purge runs hourly in every process that runs workers (`serve` without `--no-worker`, `worker`), up to 200 tasks a run, one short transaction per task",
  },
} satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;
