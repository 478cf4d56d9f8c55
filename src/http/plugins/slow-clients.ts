import type { IncomingMessage } from "node:http";
import { PassThrough } from "node:stream";
import type { FastifyInstance } from "fastify";
import { validationError } from "../../lib/app-error.ts";

/**
 * A refused body still arriving is read and dropped while it comes at least this fast (16 KB/s)…
 * 64 KB per 500 ms cut real uploads: in a burst of 80 concurrent 10 MB uploads on a 2-core
 * machine, half the clients sent below it and got EPIPE instead of their 429/503.
 */
const LINGER_MIN_BYTES = 16 * 1024;
/** …per this window; slower (a trickle, a stall) and the connection is closed. */
const LINGER_WINDOW_MS = 1_000;
/** However fast it comes, a refused body is read for at most this long. */
const LINGER_MAX_MS = 30_000;

/**
 * A refusal answered while the request's body is still arriving (401, 429 or 503 from admission,
 * 404, 415): the answer is sent, then the rest of the body is read and dropped while it arrives
 * at the pace of a real upload, and the connection is closed as soon as it does not (a "lingering
 * close", as nginx does). Closing at once made a client still writing its 10 MB file lose the
 * answer: the server's kernel resets a connection that receives data after its close, and the
 * client's fetch failed with EPIPE instead of reading its 429 or 503 with Retry-After. Keeping the
 * connection until the body ends, as Node does by default, let an unauthenticated body sent
 * slowly hold its socket 136–146 s after its 401; now such a trickle is cut within a second.
 */
export function installCloseOnRefusal(app: FastifyInstance): void {
  app.addHook("onSend", async (req, reply, payload) => {
    // `complete` is Node's; inject()'s requests lack it and have their whole body at once.
    if (reply.statusCode >= 400 && req.raw.complete === false) {
      reply.raw.once("finish", () => lingerThenClose(req.raw));
    }
    return payload;
  });
}

function lingerThenClose(req: IncomingMessage): void {
  const socket = req.socket;
  if (req.complete || socket.destroyed) return;
  const started = Date.now();
  let seen = socket.bytesRead;
  const timer = setInterval(() => {
    const read = socket.bytesRead - seen;
    seen = socket.bytesRead;
    if (req.complete) stop();
    else if (read < LINGER_MIN_BYTES || Date.now() - started > LINGER_MAX_MS) {
      stop();
      socket.destroy();
    }
  }, LINGER_WINDOW_MS);
  timer.unref();
  const stop = (): void => {
    clearInterval(timer);
    req.removeListener("end", stop);
    socket.removeListener("close", stop);
  };
  // Node reads and drops the body (the request was not consumed); a body that ends leaves a
  // connection as good as any other for the next request.
  req.once("end", stop);
  socket.once("close", stop);
}

const isJson = (contentType: string | undefined): boolean =>
  (contentType ?? "").split(";", 1)[0]!.trim().toLowerCase() === "application/json";

/**
 * A JSON body must arrive within `timeoutMs` of the first read (after admission); past it the
 * request is answered 400 VALIDATION_ERROR and the connection closed (Fastify closes it after a
 * body-parsing error). Multipart uploads are not JSON and keep the server's request timeout.
 */
export function installJsonBodyDeadline(app: FastifyInstance, timeoutMs: number): void {
  const seconds = Math.round(timeoutMs / 100) / 10;
  app.addHook("preParsing", async (req, reply, payload) => {
    if (req.raw.complete !== false || !isJson(req.headers["content-type"])) return payload;
    const guarded = new PassThrough();
    // Fastify listens once it reads the body; until then an error must not go unheard (a crash).
    guarded.on("error", () => {});
    const onSourceError = (error: Error): void => {
      guarded.destroy(error);
    };
    const timer = setTimeout(() => {
      payload.unpipe(guarded);
      guarded.destroy(
        validationError("The request body did not arrive in time", [
          { field: "body", reason: `must arrive within ${seconds} s (BODY_TIMEOUT_MS)` },
        ]),
      );
    }, timeoutMs);
    const stop = (): void => {
      clearTimeout(timer);
      payload.removeListener("error", onSourceError);
    };
    payload.once("end", stop);
    payload.once("error", onSourceError);
    reply.raw.once("close", stop);
    payload.pipe(guarded);
    return guarded;
  });
}
