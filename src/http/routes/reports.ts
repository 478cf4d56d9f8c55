import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AppError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses, ref } from "../schemas/common.ts";
import { documentRequest, TAG } from "../schemas/openapi.ts";
import {
  ApiKeyUsageQuery,
  ApiKeyUsageQueryDocumented,
  ApiKeyUsageReply,
  CreditUsageQuery,
  CreditUsageQueryDocumented,
  CreditUsageReply,
  MetricsQuery,
  MetricsQueryDocumented,
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
        operationId: "getCreditUsage",
        summary: "Credit usage per day",
        description:
          "Credits used and granted over [from, to) (both required, at most 90 days), in total and per UTC day; `source` keeps only API-key or dashboard activity.",
        tags: [TAG.reports],
        querystring: CreditUsageQuery,
        response: { 200: ref(CreditUsageReply, "The usage report"), ...errorResponses(400, 401, 429, 500) },
      },
      config: { swaggerTransform: documentRequest({ querystring: CreditUsageQueryDocumented }) },
    },
    async (req) => toCreditUsageReply(await deps.reports.creditUsage(principalOf(req).userId, req.query)),
  );

  app.get(
    "/api/v1/credits/usage/api-keys",
    {
      schema: {
        operationId: "getApiKeyUsage",
        summary: "Credit usage per API key",
        description:
          "Credits used and granted over [from, to) (both required, at most 90 days) per API key, each with a daily series. Dashboard activity is left out; rows without a valid key id share one `is_unknown` bucket.",
        tags: [TAG.reports],
        querystring: ApiKeyUsageQuery,
        response: {
          200: ref(ApiKeyUsageReply, "The per-key usage report"),
          ...errorResponses(400, 401, 429, 500),
        },
      },
      config: { swaggerTransform: documentRequest({ querystring: ApiKeyUsageQueryDocumented }) },
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
        operationId: "getVerificationMetrics",
        summary: "Verification counters",
        description:
          "The caller's verification counters over [from, to): with both `from` and `to` (at most 90 days) also a daily series; with only one, the counters are bounded on that side and there is no series; with neither, the whole history. Needs an API key: a session token is a 401.",
        tags: [TAG.reports],
        querystring: MetricsQuery,
        response: {
          200: ref(VerificationMetricsReply, "The counters"),
          ...errorResponses(400, 401, 429, 500),
        },
      },
      config: { swaggerTransform: documentRequest({ querystring: MetricsQueryDocumented }) },
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
