import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { ApiKeyListing } from "../../keys/service.ts";
import type { Services } from "../../app/services.ts";
import { validationError } from "../../lib/app-error.ts";
import { principalOf } from "../plugins/auth.ts";
import {
  CreateApiKeyBody,
  CreatedApiKeyReply,
  ListApiKeysQuery,
  ListApiKeysReply,
} from "../schemas/api-keys.ts";
import { errorResponses, IdParams } from "../schemas/common.ts";
import { Type } from "typebox";

const toListItem = ({ record, plaintext }: ApiKeyListing) => ({
  id: record.id,
  name: record.name,
  purpose: record.purpose,
  is_active: record.isActive,
  created_at: record.createdAt.toISOString(),
  last_used_at: record.lastUsedAt?.toISOString() ?? null,
  prefix: record.keyPrefix,
  ...(plaintext !== undefined ? { key: plaintext } : {}),
});

export const apiKeyRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/api/v1/api-keys",
    {
      schema: {
        tags: ["api-keys"],
        body: CreateApiKeyBody,
        response: { 201: CreatedApiKeyReply, ...errorResponses(400, 401, 429, 500) },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const name = req.body.name.trim();
      // minLength counts spaces, so "   " passes the schema but would be stored as an empty name.
      if (!name)
        throw validationError("Request validation failed", [{ field: "name", reason: "must not be blank" }]);
      const { record, plaintext } = await services.apiKeys.create(p.userId, name, req.body.purpose);
      return reply.status(201).send({
        id: record.id,
        user_id: record.userId,
        key: plaintext,
        name: record.name,
        purpose: record.purpose,
        created_at: record.createdAt.toISOString(),
      });
    },
  );

  app.get(
    "/api/v1/api-keys",
    {
      schema: {
        tags: ["api-keys"],
        querystring: ListApiKeysQuery,
        response: { 200: ListApiKeysReply, ...errorResponses(400, 401, 429, 500) },
      },
    },
    async (req) => {
      const keys = await services.apiKeys.list(principalOf(req).userId, req.query.reveal === true);
      return { api_keys: keys.map(toListItem) };
    },
  );

  app.delete(
    "/api/v1/api-keys/:id",
    {
      schema: {
        tags: ["api-keys"],
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(400, 401, 404, 429, 500) },
      },
    },
    async (req, reply) => {
      await services.apiKeys.deactivate(principalOf(req).userId, req.params.id);
      return reply.status(204).send(null);
    },
  );
};
