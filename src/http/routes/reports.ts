import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Services } from "../../app/services.ts";
import { AppError } from "../../lib/app-error.ts";
import type { ApiKeyUsageBucket } from "../../reports/api-key-usage.ts";
import type { UsagePoint, UsageTotals } from "../../reports/credit-usage.ts";
import type { MetricsCounts } from "../../reports/verification-metrics.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses } from "../schemas/common.ts";
import {
  ApiKeyUsageQuery,
  ApiKeyUsageReply,
  CreditUsageQuery,
  CreditUsageReply,
  MetricsQuery,
  VerificationMetricsReply,
} from "../schemas/reports.ts";

const toTotals = (t: UsageTotals) => ({
  used_credits: t.usedCredits,
  granted_credits: t.grantedCredits,
  net_credits: t.netCredits,
});

const toPoint = (p: UsagePoint) => ({ date: p.date, ...toTotals(p) });

const toBucket = (b: ApiKeyUsageBucket) =>
  b.isUnknown
    ? { is_unknown: true, totals: toTotals(b.totals), series: b.series.map(toPoint) }
    : {
        api_key_id: b.apiKeyId,
        ...(b.key
          ? { api_key_name: b.key.name, api_key_purpose: b.key.purpose, is_active: b.key.isActive }
          : {}),
        is_unknown: false,
        totals: toTotals(b.totals),
        series: b.series.map(toPoint),
      };

const toCounters = (c: MetricsCounts) => ({
  total_verifications: c.totalVerifications,
  total_tasks: c.totalTasks,
  unique_email_addresses: c.uniqueEmailAddresses,
  job_status: c.jobStatus,
  verification_status: {
    valid: c.verificationStatus.valid,
    invalid: c.verificationStatus.invalid,
    catchall: c.verificationStatus.catchall,
    invalid_syntax: c.verificationStatus.invalidSyntax,
    disposable_domain: c.verificationStatus.disposableDomain,
    unknown: c.verificationStatus.unknown,
  },
  total_catchall: c.totalCatchall,
  total_role_based: c.totalRoleBased,
  total_disposable_domain_emails: c.totalDisposableDomainEmails,
});

export const reportRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/api/v1/credits/usage",
    {
      schema: {
        tags: ["credits"],
        querystring: CreditUsageQuery,
        response: { 200: CreditUsageReply, ...errorResponses(400, 401, 429, 500) },
      },
    },
    async (req) => {
      const r = await services.reports.creditUsage(principalOf(req).userId, req.query);
      return {
        user_id: r.userId,
        from: r.from.toISOString(),
        to: r.to.toISOString(),
        totals: toTotals(r.totals),
        series: r.series.map(toPoint),
      };
    },
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
      const r = await services.reports.apiKeyUsage(principalOf(req).userId, { from, to, apiKeyId });
      return {
        user_id: r.userId,
        from: r.from.toISOString(),
        to: r.to.toISOString(),
        keys: r.keys.map(toBucket),
      };
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
      const r = await services.reports.verificationMetrics(principal.userId, req.query);
      return {
        user_id: r.userId,
        ...toCounters(r),
        last_verification_requested_at: r.lastVerificationRequestedAt?.toISOString() ?? null,
        last_verification_completed_at: r.lastVerificationCompletedAt?.toISOString() ?? null,
        ...(r.series ? { series: r.series.map((p) => ({ date: p.date, ...toCounters(p) })) } : {}),
      };
    },
  );
};
