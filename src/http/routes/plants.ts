import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyError } from "fastify";
import { AppError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { admitRequest } from "../plugins/auth.ts";
import { ref } from "../schemas/common.ts";
import { TAG } from "../schemas/openapi.ts";
import { NewPlantBody, PlantErrorReply, PlantReply } from "../schemas/plants.ts";

class PlantError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The spec's sample endpoint: bearer-authenticated, with its own flat error body. */
export const plantRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.setErrorHandler(async (error: FastifyError | PlantError, req, reply) => {
    if (error instanceof PlantError)
      return reply
        .status(error.status)
        .headers(error.headers)
        .send({ error: error.status, message: error.message });
    if (
      error.validation ||
      (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500)
    ) {
      const message = error.validation ? `Invalid plant: ${error.message}` : error.message;
      return reply.status(400).send({ error: 400, message });
    }
    req.log.error({ err: error }, "plants request failed");
    return reply.status(500).send({ error: 500, message: "An internal error occurred" });
  });

  // The same admission as the API (per-address failed-auth limit, per-credential and per-user
  // limits): before, this hook called the authenticator alone, so guessing here was unthrottled.
  // Bearer only, as the spec declares: X-API-Key is not read, a missing header counts as a failure.
  app.addHook("onRequest", async (req) => {
    const header = req.headers.authorization;
    try {
      await admitRequest(deps.authenticator, deps.rateLimiter, { authorization: header }, req.ip);
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      if (e.code === "RATE_LIMITED") throw new PlantError(429, e.message, e.options.headers);
      throw new PlantError(
        401,
        header && /^Bearer\s+\S+$/i.test(header)
          ? "Invalid bearer credentials"
          : "Bearer authentication required",
      );
    }
  });

  app.post(
    "/plants",
    {
      schema: {
        operationId: "createPlant",
        summary: "Add a plant (sample)",
        description:
          "The spec's sample endpoint: validates a NewPlant and returns the Plant. Bearer authentication only; errors use the flat PlantError body.",
        tags: [TAG.sample],
        security: [{ bearerAuth: [] }],
        body: NewPlantBody,
        response: {
          200: ref(PlantReply, "The plant"),
          400: ref(PlantErrorReply, "Invalid plant"),
          401: ref(PlantErrorReply, "Missing or invalid bearer credentials"),
          429: ref(PlantErrorReply, "Rate limited: retry after the `Retry-After` seconds"),
          500: ref(PlantErrorReply, "Internal error"),
        },
      },
    },
    async (req) => ({ name: req.body.name, ...(req.body.tag !== undefined ? { tag: req.body.tag } : {}) }),
  );
};
