import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses, ref } from "../schemas/common.ts";
import { TAG } from "../schemas/openapi.ts";
import { WebhookSecretReply } from "../schemas/webhooks.ts";

export const webhookRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get(
    "/api/v1/webhooks/secret",
    {
      schema: {
        operationId: "getWebhookSecret",
        summary: "Get the webhook signing secret",
        description:
          "The `whsec_…` secret that signs the caller's task-completion webhooks (see `webhooks` in this document).",
        tags: [TAG.webhooks],
        response: { 200: ref(WebhookSecretReply, "The secret"), ...errorResponses(401, 404, 429, 500) },
      },
    },
    async (req) => ({ secret: await deps.webhooks.secretOf(principalOf(req).userId) }),
  );
};
