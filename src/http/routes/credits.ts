import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Services } from "../../app/services.ts";
import type { CreditTransaction } from "../../db/queries/credit-transactions.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses } from "../schemas/common.ts";
import { BalanceReply, TransactionsQuery, TransactionsReply } from "../schemas/credits.ts";

export const toTransactionReply = (t: CreditTransaction) => ({
  id: t.id,
  user_id: t.userId,
  type: t.type,
  amount: t.amount,
  balance_after: t.balanceAfter,
  ...(t.reason !== null ? { reason: t.reason } : {}),
  metadata: t.metadata,
  created_at: t.createdAt.toISOString(),
});

export const creditRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/api/v1/credits/balance",
    {
      schema: {
        tags: ["credits"],
        response: { 200: BalanceReply, ...errorResponses(400, 401, 404, 429, 500) },
      },
    },
    async (req) => {
      const { userId, balance } = await services.credits.balance(principalOf(req).userId);
      return { user_id: userId, balance };
    },
  );

  app.get(
    "/api/v1/credits/transactions",
    {
      schema: {
        tags: ["credits"],
        querystring: TransactionsQuery,
        response: { 200: TransactionsReply, ...errorResponses(400, 401, 404, 429, 500) },
      },
    },
    async (req) => {
      const { limit, offset } = req.query;
      const page = await services.credits.transactions(principalOf(req).userId, { limit, offset });
      return { transactions: page.transactions.map(toTransactionReply), total: page.total, limit, offset };
    },
  );
};
