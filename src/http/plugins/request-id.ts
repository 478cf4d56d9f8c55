import { randomUUID } from "node:crypto";
import type { FastifyInstance, RawRequestDefaultExpression } from "fastify";

// Echo a caller's X-Request-ID when it is a sane token (printable, bounded); otherwise mint a
// UUID. A hostile value must not be able to inject log lines or huge headers.
const ACCEPTABLE = /^[\x21-\x7e]{1,200}$/;

export function requestIdFrom(req: RawRequestDefaultExpression): string {
  const raw = req.headers["x-request-id"];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value && ACCEPTABLE.test(value) ? value : randomUUID();
}

export function installRequestIdHeader(app: FastifyInstance): void {
  app.addHook("onRequest", async (req, reply) => {
    reply.header("x-request-id", req.id);
  });
}
