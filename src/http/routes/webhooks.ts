import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Services } from "../../app/services.ts";
import { webhookSecretOf } from "../../webhooks/secret.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses } from "../schemas/common.ts";

/** The caller's Standard Webhooks signing secret. */
export const WebhookSecretReply = Type.Object({
  secret: Type.String({
    pattern: "^whsec_",
    description: "Standard Webhooks secret for verifying deliveries",
  }),
});

export const webhookRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/api/v1/webhooks/secret",
    {
      schema: {
        tags: ["webhooks"],
        response: { 200: WebhookSecretReply, ...errorResponses(401, 404, 429, 500) },
      },
    },
    async (req) => ({ secret: await webhookSecretOf(services.db, principalOf(req).userId) }),
  );
};
