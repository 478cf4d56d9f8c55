import { collectDefaultMetrics, Counter, Histogram, Registry } from "prom-client";

const METRIC = {
  httpRequests: "mailprobe_http_requests_total",
  httpDuration: "mailprobe_http_request_duration_seconds",
  deadlockRetries: "mailprobe_db_deadlock_retries_total",
} as const;

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<"method" | "route" | "status">;
  httpDuration: Histogram<"method" | "route">;
}

export interface MetricsOptions {
  processMetrics: boolean;
  /** The database's count of transactions re-run after a deadlock (Database.stats), read at each scrape. */
  deadlockRetries?: () => number;
}

/** One registry per app instance, so tests building several apps never collide on metric names. */
export function createMetrics(opts: MetricsOptions = { processMetrics: true }): Metrics {
  const registry = new Registry();
  if (opts.processMetrics) collectDefaultMetrics({ register: registry, prefix: "mailprobe_" });
  const deadlockRetries = opts.deadlockRetries;
  if (deadlockRetries) {
    new Counter({
      name: METRIC.deadlockRetries,
      help: "Database transactions run again after PostgreSQL chose them as a deadlock victim",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(deadlockRetries());
      },
    });
  }
  return {
    registry,
    httpRequests: new Counter({
      name: METRIC.httpRequests,
      help: "HTTP requests by route and status",
      labelNames: ["method", "route", "status"],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: METRIC.httpDuration,
      help: "HTTP request duration",
      labelNames: ["method", "route"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
  };
}
