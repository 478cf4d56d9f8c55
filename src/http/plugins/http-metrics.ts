import type { FastifyInstance } from "fastify";
import type { Metrics } from "../../observability/metrics.ts";

export function installHttpMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook("onResponse", async (req, reply) => {
    // The route pattern, not the raw URL, keeps label cardinality bounded.
    const route = req.routeOptions.url ?? "unmatched";
    metrics.httpRequests.inc({ method: req.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });
}
