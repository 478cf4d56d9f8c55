import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses } from "../schemas/common.ts";
import { WebhookSecretReply } from "../schemas/webhooks.ts";

export const webhookRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get(
    "/api/v1/webhooks/secret",
    {
      schema: {
        tags: ["webhooks"],
        response: { 200: WebhookSecretReply, ...errorResponses(401, 404, 429, 500) },
      },
    },
    async (req) => ({ secret: await deps.webhooks.secretOf(principalOf(req).userId) }),
  );
};
