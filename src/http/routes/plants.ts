import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyError } from "fastify";
import type { HttpDeps } from "../deps.ts";
import { NewPlantBody, PlantErrorReply, PlantReply } from "../schemas/plants.ts";

class PlantError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The spec's sample endpoint: bearer-authenticated, with its own flat error body. */
export const plantRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.setErrorHandler(async (error: FastifyError | PlantError, req, reply) => {
    if (error instanceof PlantError)
      return reply.status(error.status).send({ error: error.status, message: error.message });
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

  app.addHook("onRequest", async (req) => {
    const header = req.headers.authorization;
    if (!header || !/^Bearer\s+\S+$/i.test(header))
      throw new PlantError(401, "Bearer authentication required");
    const outcome = await deps.authenticator.authenticate({ authorization: header });
    if (!outcome.ok) throw new PlantError(401, "Invalid bearer credentials");
  });

  app.post(
    "/plants",
    {
      schema: {
        tags: ["sample"],
        security: [{ bearerAuth: [] }],
        body: NewPlantBody,
        response: { 200: PlantReply, 400: PlantErrorReply, 401: PlantErrorReply, 500: PlantErrorReply },
      },
    },
    async (req) => ({ name: req.body.name, ...(req.body.tag !== undefined ? { tag: req.body.tag } : {}) }),
  );
};
