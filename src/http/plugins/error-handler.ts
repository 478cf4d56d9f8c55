import type { FastifyInstance } from "fastify";
import { mapError } from "../errors.ts";

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler(async (error, req, reply) => {
    const mapped = mapError(error);
    if (mapped.isServerFault) req.log.error({ err: error }, "request failed");
    else req.log.info({ code: mapped.body.error.code, status: mapped.status }, mapped.body.error.message);
    if (mapped.headers) reply.headers(mapped.headers);
    return reply.status(mapped.status).send(mapped.body);
  });

  app.setNotFoundHandler(async (req, reply) =>
    reply.status(404).send({
      error: { code: "NOT_FOUND", message: `Route ${req.method} ${req.url.split("?")[0]} not found` },
    }),
  );
}
