import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { requireKeyManagement } from "../../auth/principal.ts";
import { validationError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import {
  CreateApiKeyBody,
  CreatedApiKeyReply,
  ListApiKeysQuery,
  ListApiKeysReply,
  toApiKeyListItem,
  toCreatedApiKeyReply,
} from "../schemas/api-keys.ts";
import { errorResponses, IdParams } from "../schemas/common.ts";

export const apiKeyRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  // Key management is for `custom` keys and sessions only (DESIGN §5 "Key scopes"). An onRequest
  // hook of this plugin runs after authentication and before validation: 403 whatever the body.
  app.addHook("onRequest", async (req) => requireKeyManagement(principalOf(req)));

  app.post(
    "/api/v1/api-keys",
    {
      schema: {
        tags: ["api-keys"],
        body: CreateApiKeyBody,
        response: { 201: CreatedApiKeyReply, ...errorResponses(400, 401, 403, 409, 429, 500) },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
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
        tags: ["api-keys"],
        querystring: ListApiKeysQuery,
        response: { 200: ListApiKeysReply, ...errorResponses(400, 401, 403, 429, 500) },
      },
    },
    async (req) => {
      const keys = await deps.apiKeys.list(principalOf(req).userId, req.query.reveal === true);
      return { api_keys: keys.map(toApiKeyListItem) };
    },
  );

  app.delete(
    "/api/v1/api-keys/:id",
    {
      schema: {
        tags: ["api-keys"],
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409, 429, 500) },
      },
    },
    async (req, reply) => {
      await deps.apiKeys.deactivate(principalOf(req).userId, req.params.id);
      return reply.status(204).send(null);
    },
  );
};
