import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { requireKeyManagement, requireRecentSignIn } from "../../auth/principal.ts";
import { validationError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import {
  CreateApiKeyBody,
  CreateApiKeyBodyDocumented,
  CreatedApiKeyReply,
  ListApiKeysQuery,
  ListApiKeysReply,
  toApiKeyListItem,
  toCreatedApiKeyReply,
} from "../schemas/api-keys.ts";
import { errorResponses, IdParams, ref } from "../schemas/common.ts";
import { documentRequest, TAG } from "../schemas/openapi.ts";

export const apiKeyRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  // Key management is for `custom` keys and sessions only (DESIGN §5 "Key scopes"). An onRequest
  // hook of this plugin runs after authentication and before validation: 403 whatever the body.
  app.addHook("onRequest", async (req) => requireKeyManagement(principalOf(req)));

  app.post(
    "/api/v1/api-keys",
    {
      schema: {
        operationId: "createApiKey",
        summary: "Create an API key",
        description:
          "Returns the plaintext key once (it can be revealed again with `GET /api/v1/api-keys?reveal=true`). Needs a `custom` key or a session signed in within SESSION_REAUTH_SECONDS (10 min; an older session gets 403: sign in again); 409 when the user has as many keys as allowed.",
        tags: [TAG.apiKeys],
        body: CreateApiKeyBody,
        response: {
          201: ref(CreatedApiKeyReply, "The new key, with its plaintext"),
          ...errorResponses(400, 401, 403, 404, 409, 429, 500),
        },
      },
      // The purpose is validated as a union of literals (errors.ts names the options); the document
      // references the ApiKeyPurpose component.
      config: { swaggerTransform: documentRequest({ body: CreateApiKeyBodyDocumented }) },
    },
    async (req, reply) => {
      const p = principalOf(req);
      requireRecentSignIn(p, deps.clock.now(), deps.settings.sessionReauthMs);
      const name = req.body.name.trim();
      // minLength counts spaces, so "   " passes the schema but would be stored as an empty name.
      if (!name)
        throw validationError("Request validation failed", [{ field: "name", reason: "must not be blank" }]);
      const created = await deps.apiKeys.create(p.userId, name, req.body.purpose);
      return reply.status(201).send(toCreatedApiKeyReply(created));
    },
  );

  app.get(
    "/api/v1/api-keys",
    {
      schema: {
        operationId: "listApiKeys",
        summary: "List API keys",
        description:
          "The caller's keys, active and deactivated; with `reveal=true` each active key's plaintext. Needs a `custom` key or a session; `reveal=true` from a session needs a sign-in within SESSION_REAUTH_SECONDS (10 min; older: 403, sign in again).",
        tags: [TAG.apiKeys],
        querystring: ListApiKeysQuery,
        response: { 200: ref(ListApiKeysReply, "The keys"), ...errorResponses(400, 401, 403, 429, 500) },
      },
    },
    async (req) => {
      const p = principalOf(req);
      if (req.query.reveal === true) requireRecentSignIn(p, deps.clock.now(), deps.settings.sessionReauthMs);
      const keys = await deps.apiKeys.list(p.userId, req.query.reveal === true);
      return { api_keys: keys.map(toApiKeyListItem) };
    },
  );

  app.delete(
    "/api/v1/api-keys/:id",
    {
      schema: {
        operationId: "deleteApiKey",
        summary: "Delete (deactivate) an API key",
        description:
          "The key stops working at once, and so do the sessions it opened. The last active key cannot be deleted (409). Needs a `custom` key or a session.",
        tags: [TAG.apiKeys],
        params: IdParams,
        response: {
          204: Type.Null({ description: "Deactivated" }),
          ...errorResponses(400, 401, 403, 404, 409, 429, 500),
        },
      },
    },
    async (req, reply) => {
      await deps.apiKeys.deactivate(principalOf(req).userId, req.params.id);
      return reply.status(204).send(null);
    },
  );
};
