import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Services } from "../../app/services.ts";
import { AppError } from "../../lib/app-error.ts";
import { safeEqual } from "../../lib/tokens.ts";
import { Uuid } from "../schemas/common.ts";

const LOOPBACK = new Set(["127.0.0.1", "::1", "::ffff:127.0.0.1"]);

/**
 * The local admin API the CLI uses while `serve` owns an embedded data directory (PGlite allows
 * one process). Reachable only from this machine, with the token the server wrote to DATA_DIR.
 */
export const adminRoutes: FastifyPluginAsyncTypebox<{ services: Services; token: string }> = async (
  app,
  { services, token },
) => {
  app.addHook("onRequest", async (req) => {
    const given = req.headers["x-admin-token"];
    if (
      !LOOPBACK.has(req.socket.remoteAddress ?? "") ||
      typeof given !== "string" ||
      !safeEqual(given, token)
    ) {
      throw new AppError("UNAUTHORIZED", "Admin token required");
    }
  });

  app.post(
    "/admin/v1/users",
    {
      schema: {
        hide: true,
        body: Type.Object({
          credits: Type.Integer({ minimum: 0 }),
          email: Type.Union([Type.String({ format: "email" }), Type.Null()]),
        }),
        response: {
          201: Type.Object({
            user_id: Uuid,
            balance: Type.Integer(),
            api_key: Type.String(),
            api_key_id: Uuid,
          }),
        },
      },
    },
    async (req, reply) => {
      const created = await services.users.create({ email: req.body.email, credits: req.body.credits });
      return reply.status(201).send({
        user_id: created.user.id,
        balance: created.user.balance,
        api_key: created.apiKey.plaintext,
        api_key_id: created.apiKey.id,
      });
    },
  );

  app.post(
    "/admin/v1/credits/grant",
    {
      schema: {
        hide: true,
        body: Type.Object({
          user_id: Uuid,
          amount: Type.Integer({ minimum: 1 }),
          reason: Type.String({ minLength: 1 }),
        }),
        response: { 201: Type.Object({ transaction_id: Uuid, balance_after: Type.Integer() }) },
      },
    },
    async (req, reply) => {
      const t = await services.credits.grant(req.body.user_id, req.body.amount, req.body.reason);
      return reply.status(201).send({ transaction_id: t.id, balance_after: t.balanceAfter });
    },
  );
};
