import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { HttpDeps } from "../deps.ts";
import {
  AdminFindUserBody,
  AdminSignInLinkBody,
  AdminSignInLinkReply,
  AdminListUsersBody,
  AdminUserIdBody,
  DeactivateUserReply,
  ListUsersReply,
  OperatorUserSchema,
  toOperatorUserReply,
} from "../schemas/operator.ts";

/**
 * `mailprobe users list|show|deactivate|sign-in-link` while `serve` owns the embedded data
 * directory: the operator service (and the sign-in links) behind the loopback admin API
 * (registered inside adminRoutes, whose token hook guards it). Same answers as the operator API's.
 */
export const adminUserRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.post(
    "/admin/v1/users/list",
    {
      schema: { hide: true, body: AdminListUsersBody, response: { 200: ListUsersReply } },
      config: { writesNothing: true },
    },
    async (req) => {
      const page = await deps.operator.listUsers(req.body);
      return {
        users: page.users.map(toOperatorUserReply),
        total: page.total,
        limit: req.body.limit,
        offset: req.body.offset,
      };
    },
  );

  app.post(
    "/admin/v1/users/show",
    {
      schema: { hide: true, body: AdminFindUserBody, response: { 200: OperatorUserSchema } },
      config: { writesNothing: true },
    },
    async (req) => toOperatorUserReply(await deps.operator.findUser(req.body)),
  );

  app.post(
    "/admin/v1/users/deactivate",
    { schema: { hide: true, body: AdminUserIdBody, response: { 200: DeactivateUserReply } } },
    async (req) => {
      const r = await deps.operator.deactivateUser(req.body.id);
      return { user: toOperatorUserReply(r.user), deactivated_key_ids: r.deactivatedKeyIds };
    },
  );

  app.post(
    "/admin/v1/users/sign-in-link",
    {
      schema: { hide: true, body: AdminSignInLinkBody, response: { 201: AdminSignInLinkReply } },
      config: { writesNothing: true },
    },
    async (req, reply) => {
      const link = await deps.signInLinks.mint(req.body.id, req.body.api_key_id);
      return reply.status(201).send({
        token: link.token,
        user_id: link.userId,
        api_key_id: link.apiKeyId,
        expires_at: link.expiresAt.toISOString(),
      });
    },
  );
};
