import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AppError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses } from "../schemas/common.ts";
import {
  ApiKeyUsageQuery,
  ApiKeyUsageReply,
  CreditUsageQuery,
  CreditUsageReply,
  MetricsQuery,
  toApiKeyUsageReply,
  toCreditUsageReply,
  toVerificationMetricsReply,
  VerificationMetricsReply,
} from "../schemas/reports.ts";

export const reportRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get(
    "/api/v1/credits/usage",
    {
      schema: {
        tags: ["credits"],
        querystring: CreditUsageQuery,
        response: { 200: CreditUsageReply, ...errorResponses(400, 401, 429, 500) },
      },
    },
    async (req) => toCreditUsageReply(await deps.reports.creditUsage(principalOf(req).userId, req.query)),
  );

  app.get(
    "/api/v1/credits/usage/api-keys",
    {
      schema: {
        tags: ["credits"],
        querystring: ApiKeyUsageQuery,
        response: { 200: ApiKeyUsageReply, ...errorResponses(400, 401, 429, 500) },
      },
    },
    async (req) => {
      const { from, to, api_key_id: apiKeyId } = req.query;
      return toApiKeyUsageReply(
        await deps.reports.apiKeyUsage(principalOf(req).userId, { from, to, apiKeyId }),
      );
    },
  );

  app.get(
    "/api/v1/metrics/verifications",
    {
      schema: {
        tags: ["metrics"],
        querystring: MetricsQuery,
        response: { 200: VerificationMetricsReply, ...errorResponses(400, 401, 429, 500) },
      },
    },
    async (req) => {
      const principal = principalOf(req);
      // Spec, Authentication rule 4: this endpoint takes an API key, not a dashboard session.
      if (principal.source !== "api_key") {
        throw new AppError(
          "UNAUTHORIZED",
          "This endpoint requires an API key; session tokens (JWT) are not accepted",
        );
      }
      return toVerificationMetricsReply(await deps.reports.verificationMetrics(principal.userId, req.query));
    },
  );
};
