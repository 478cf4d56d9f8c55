import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { mayManageKeys, type Principal } from "../../auth/principal.ts";
import { forbidden } from "../../lib/app-error.ts";
import { DEFAULT_ROTATION_GRACE_SECONDS } from "../../webhooks/secret.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses, IdParams, ref } from "../schemas/common.ts";
import { documentRequest, TAG } from "../schemas/openapi.ts";
import {
  checkPingUrl,
  ListWebhookDeliveriesQuery,
  RotateWebhookSecretBody,
  SendTestWebhookBody,
  SendTestWebhookBodyDocumented,
  toWebhookDeliveryItem,
  toWebhookSecretReply,
  WebhookDeliveryListReply,
  WebhookDeliverySchema,
  WebhookSecretReply,
} from "../schemas/webhooks.ts";

// Scopes (DESIGN §5 "Key scopes"): reading the secret and the log, redelivering and pinging are
// the integration's own work on its own data (an n8n or Zapier receiver needs the secret and a
// way to replay what it missed; a ping goes only where a task's webhook_url could go anyway), so
// integration keys may. Rotating the secret replaces a credential every receiver depends on,
// like key management: `custom` keys and sessions only, so a leaked integration key cannot take
// the signing over or lock the real receivers out.
function requireSecretRotation(p: Principal): void {
  if (!mayManageKeys(p))
    throw forbidden(
      `An integration key (purpose "${p.apiKeyPurpose}") cannot rotate the webhook secret; use a "custom" key or a session`,
    );
}

export const webhookRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get(
    "/api/v1/webhooks/secret",
    {
      schema: {
        operationId: "getWebhookSecret",
        summary: "Get the webhook signing secret",
        description:
          "The `whsec_…` secret that signs the caller's webhooks (see `webhooks` in this document), and, after a rotation, until when the previous secret signs too.",
        tags: [TAG.webhooks],
        response: { 200: ref(WebhookSecretReply, "The secret"), ...errorResponses(401, 404, 429, 500) },
      },
    },
    async (req) => toWebhookSecretReply(await deps.webhooks.secretOf(principalOf(req).userId)),
  );

  app.post(
    "/api/v1/webhooks/secret/rotate",
    {
      // 403 before the body is validated, as for key management.
      onRequest: async (req) => requireSecretRotation(principalOf(req)),
      // The body is optional: no body means the defaults.
      preValidation: async (req) => {
        req.body ??= {};
      },
      schema: {
        operationId: "rotateWebhookSecret",
        summary: "Rotate the webhook signing secret",
        description:
          "Makes a new secret current at once. During the grace period (`grace_seconds`, default 24 h) every delivery carries two `v1,` signatures, one per secret, so receivers verify with either while they switch; rotating again drops the older previous secret. Needs a `custom` key or a session.",
        tags: [TAG.webhooks],
        body: RotateWebhookSecretBody,
        response: {
          200: ref(WebhookSecretReply, "The new secret"),
          ...errorResponses(400, 401, 403, 404, 429, 500),
        },
      },
      config: { swaggerTransform: documentRequest({}, { optionalBody: true }) },
    },
    async (req) => {
      const grace = req.body?.grace_seconds ?? DEFAULT_ROTATION_GRACE_SECONDS;
      return toWebhookSecretReply(await deps.webhooks.rotateSecret(principalOf(req).userId, grace));
    },
  );

  app.get(
    "/api/v1/webhooks/deliveries",
    {
      schema: {
        operationId: "listWebhookDeliveries",
        summary: "List webhook deliveries",
        description:
          "The caller's deliveries (task completions and test pings), newest first: attempts, last status code and error, next attempt, delivery time.",
        tags: [TAG.webhooks],
        querystring: ListWebhookDeliveriesQuery,
        response: {
          200: ref(WebhookDeliveryListReply, "A page of deliveries"),
          ...errorResponses(400, 401, 429, 500),
        },
      },
    },
    async (req) => {
      const { limit, offset } = req.query;
      const page = await deps.webhooks.listDeliveries(principalOf(req).userId, { limit, offset });
      return { deliveries: page.deliveries.map(toWebhookDeliveryItem), count: page.total, limit, offset };
    },
  );

  app.post(
    "/api/v1/webhooks/deliveries/:id/redeliver",
    {
      schema: {
        operationId: "redeliverWebhook",
        summary: "Send a webhook delivery again",
        description:
          "Queues the delivery for an attempt now, whatever its state, with a fresh retry window: the same `webhook-id` and body (receivers deduplicate on the id), a new timestamp and signature. 404 for another user's delivery; 409 while an attempt is running.",
        tags: [TAG.webhooks],
        params: IdParams,
        response: {
          202: ref(WebhookDeliverySchema, "Queued"),
          ...errorResponses(400, 401, 404, 409, 429, 500),
        },
      },
    },
    async (req, reply) => {
      const delivery = await deps.webhooks.redeliver(principalOf(req).userId, req.params.id);
      return reply.status(202).send(toWebhookDeliveryItem(delivery));
    },
  );

  app.post(
    "/api/v1/webhooks/test",
    {
      schema: {
        operationId: "sendTestWebhook",
        summary: "Send a test webhook",
        description:
          'Queues a `{"type":"ping","timestamp":…,"data":{}}` delivery to `url`, signed and logged like every delivery; follow it in `GET /api/v1/webhooks/deliveries`. It gets one attempt (not retried; redeliver it to try again). The URL follows the rules of a task\'s `webhook_url`. At most 5 pings may wait for their attempt at once (429).',
        tags: [TAG.webhooks],
        body: SendTestWebhookBody,
        response: {
          202: ref(WebhookDeliverySchema, "Queued"),
          ...errorResponses(400, 401, 429, 500),
        },
      },
      config: { swaggerTransform: documentRequest({ body: SendTestWebhookBodyDocumented }) },
    },
    async (req, reply) => {
      const url = checkPingUrl(req.body.url, deps.settings.allowPrivateWebhooks);
      const delivery = await deps.webhooks.sendTestPing(principalOf(req).userId, url);
      return reply.status(202).send(toWebhookDeliveryItem(delivery));
    },
  );
};
