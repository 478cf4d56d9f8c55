// Engine configuration: plain values handed in by the caller (config/ reads the environment,
// the engine never does).

export interface EngineOptions {
  /** DNS servers as "host" or "host:port"; empty = the system's resolvers. */
  dnsServers: string[];
  /** c-ares per-try timeout. */
  dnsTimeoutMs: number;
  /** c-ares attempts per query. */
  dnsTries: number;
  /** How long domain facts (MX hosts, addresses, PTR) are reused. */
  dnsCacheTtlMs: number;
  /** Port the mail hosts are probed on (25 in production; the simulator's port in tests). */
  smtpPort: number;
  /** Name we announce in EHLO/HELO; should match our egress IP's PTR. */
  smtpHeloName: string;
  /** Envelope sender of the probe (MAIL FROM). */
  smtpMailFrom: string;
  smtpConnectTimeoutMs: number;
  /** Wait for the 220 banner (tarpits delay it). */
  smtpGreetingTimeoutMs: number;
  /** Wait for each reply after the banner. */
  smtpCommandTimeoutMs: number;
  /** Most RCPT commands per transaction (shrunk on "452 too many recipients"). */
  smtpMaxRcpt: number;
  /**
   * Most rejections one SMTP connection may collect before the rest continue on a new one.
   * Postfix slows a client down after 10 errors (smtpd_soft_error_limit) and drops it at 20.
   */
  smtpErrorBudget: number;
  /** Use STARTTLS when a server offers it (opportunistic, certificate not verified). */
  smtpStartTls: boolean;
  /**
   * Most concurrent sessions to one mail host from this engine when no host gate is plugged in
   * (a plugged-in gate, e.g. the cluster-wide one, enforces its own limit).
   */
  maxSessionsPerHost: number;
  /**
   * How long a connection whose conversation ended well stays open for the next domain served
   * from the same server IP (idle-connections.ts); 0 closes it at once.
   */
  smtpIdleReuseMs: number;
  /** How long "this host accepted an ordinary recipient from us" counts as evidence. */
  hostEvidenceTtlMs: number;
  /** Concurrent verifyOne calls for one domain within this window share one SMTP session. */
  microBatchWindowMs: number;
  /** How long a domain's catch-all verdict is reused. */
  catchallCacheTtlMs: number;
  /** `socks5://[user:pass@]host:port` to tunnel SMTP through, or null for direct connections. */
  smtpProxy: string | null;
  /**
   * Egress identities (SMTP_EGRESS): local source addresses to bind and socks5:// proxy URLs,
   * each with its own per-server-IP slots; empty: one identity (smtpProxy, else direct).
   */
  smtpEgress: readonly string[];
  /**
   * Connect to mail hosts whose address the guard (the `addressPolicy` port) calls non-public:
   * loopback, private, link-local, reserved. Off in production; test worlds and labs set it.
   */
  smtpAllowPrivateHosts: boolean;
}

// The library's defaults. The server's come from src/config/settings.ts; verify/ may not import
// config/, so test/unit/config/engine-defaults.test.ts holds the two equal.
export const defaultEngineOptions: Readonly<EngineOptions> = Object.freeze({
  dnsServers: [],
  dnsTimeoutMs: 2_000,
  dnsTries: 2,
  dnsCacheTtlMs: 300_000,
  smtpPort: 25,
  smtpHeloName: "localhost",
  smtpMailFrom: "",
  smtpConnectTimeoutMs: 10_000,
  smtpGreetingTimeoutMs: 15_000,
  smtpCommandTimeoutMs: 15_000,
  smtpMaxRcpt: 50,
  smtpErrorBudget: 9,
  smtpStartTls: true,
  maxSessionsPerHost: 2,
  smtpIdleReuseMs: 1_000,
  hostEvidenceTtlMs: 3_600_000,
  microBatchWindowMs: 5,
  catchallCacheTtlMs: 3_600_000,
  smtpProxy: null,
  smtpEgress: [],
  smtpAllowPrivateHosts: false,
});
