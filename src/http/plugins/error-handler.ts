import { maxHeaderSize, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { mapClientError, mapError } from "../errors.ts";
import { methodNotAllowed, type RouteMethods } from "./method-not-allowed.ts";

export interface ErrorHandlerOptions {
  /** The storage adapter's "database out of reach" classifier (mapError's isDatabaseOutage). */
  isDatabaseOutage?: (error: unknown) => boolean;
  /** The declared routes' methods: a known path asked with another method is a 405, not a 404. */
  routes?: RouteMethods;
}

export function installErrorHandlers(app: FastifyInstance, opts: ErrorHandlerOptions = {}): void {
  app.setErrorHandler(async (error, req, reply) => {
    const mapped = mapError(error, opts.isDatabaseOutage);
    const summary = { code: mapped.body.error.code, status: mapped.status };
    if (mapped.isServerFault) req.log.error({ err: error }, "request failed");
    // Every request fails alike while the database is away: one line each, no stack.
    else if (mapped.isOutage)
      req.log.warn({ ...summary, cause: messageOf(error) }, mapped.body.error.message);
    else req.log.info(summary, mapped.body.error.message);
    if (mapped.headers) reply.headers(mapped.headers);
    return reply.status(mapped.status).send(mapped.body);
  });

  app.setNotFoundHandler(async (req, reply) => {
    const path = req.url.split("?")[0] ?? "";
    const refused = opts.routes ? methodNotAllowed(opts.routes, req.method, path) : null;
    if (refused) throw refused;
    return reply.status(404).send({
      error: { code: "NOT_FOUND", message: `Route ${req.method} ${path} not found` },
    });
  });
}

/**
 * Fastify's `frameworkErrors` option: router failures (a malformed percent-encoding, a path
 * parameter over maxParamLength) happen before any route or hook, so the error handler never sees
 * them and Fastify's default answer is not the spec's envelope.
 */
export function frameworkErrorHandler(error: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const mapped = mapError(error);
  req.log.info({ code: mapped.body.error.code, status: mapped.status }, mapped.body.error.message);
  void reply.status(mapped.status).header("x-request-id", req.id).send(mapped.body);
}

/**
 * Fastify's `clientErrorHandler` option, for what Node's parser refuses before a request exists
 * (e.g. headers over 16 KiB, which Node answers 431 with a non-spec body): the spec's envelope,
 * written on the raw socket, then the connection is closed.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const mapped = mapClientError(error, maxHeaderSize);
  const json = JSON.stringify(mapped.body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${mapped.status} ${STATUS_CODES[mapped.status] ?? ""}\r\n` +
        "Content-Type: application/json; charset=utf-8\r\n" +
        `Content-Length: ${Buffer.byteLength(json)}\r\n` +
        "Connection: close\r\n\r\n" +
        json,
    );
  }
  socket.destroy(error);
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
