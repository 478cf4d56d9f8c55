import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses, ref } from "../schemas/common.ts";
import { TAG } from "../schemas/openapi.ts";
import {
  BalanceReply,
  toTransactionReply,
  TransactionsQuery,
  TransactionsReply,
} from "../schemas/credits.ts";

export const creditRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get(
    "/api/v1/credits/balance",
    {
      schema: {
        operationId: "getCreditBalance",
        summary: "Get the credit balance",
        tags: [TAG.credits],
        response: { 200: ref(BalanceReply, "The balance"), ...errorResponses(400, 401, 404, 429, 500) },
      },
    },
    async (req) => {
      const { userId, balance } = await deps.credits.balance(principalOf(req).userId);
      return { user_id: userId, balance };
    },
  );

  app.get(
    "/api/v1/credits/transactions",
    {
      schema: {
        operationId: "listCreditTransactions",
        summary: "List credit transactions",
        description:
          "The ledger, newest first: reservations and charges (deductions), refunds and grants. `amount` is signed and `balance_after` exact.",
        tags: [TAG.credits],
        querystring: TransactionsQuery,
        response: {
          200: ref(TransactionsReply, "A page of transactions"),
          ...errorResponses(400, 401, 404, 429, 500),
        },
      },
    },
    async (req) => {
      const { limit, offset, task_id: taskId } = req.query;
      const page = await deps.credits.transactions(principalOf(req).userId, {
        limit,
        offset,
        taskId: taskId ?? null,
      });
      return { transactions: page.transactions.map(toTransactionReply), total: page.total, limit, offset };
    },
  );
};
