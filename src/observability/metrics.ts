import { collectDefaultMetrics, Counter, Histogram, Registry } from "prom-client";

export const METRIC = {
  httpRequests: "mailprobe_http_requests_total",
  httpDuration: "mailprobe_http_request_duration_seconds",
} as const;

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<"method" | "route" | "status">;
  httpDuration: Histogram<"method" | "route">;
}

/** One registry per app instance, so tests building several apps never collide on metric names. */
export function createMetrics(opts: { processMetrics: boolean } = { processMetrics: true }): Metrics {
  const registry = new Registry();
  if (opts.processMetrics) collectDefaultMetrics({ register: registry, prefix: "mailprobe_" });
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
