import { Type } from "typebox";
import type { ApiKeyUsageBucket, ApiKeyUsageReport } from "../../reports/api-key-usage.ts";
import type { CreditUsageReport, UsagePoint, UsageTotals } from "../../reports/credit-usage.ts";
import type { MetricsCounts, VerificationMetricsReport } from "../../reports/verification-metrics.ts";
import { DateTime, documented, ref, Uuid } from "./common.ts";
import { ApiKeyPurposeSchema } from "./enums.ts";

// Query strings carry from/to as plain strings: reports/date-range.ts owns the RFC 3339, order and
// 90-day rules, so every date problem gets the same field-named reasons.
const From = Type.String({
  description: "Start of the range, RFC 3339 with offset (inclusive). Range is [from, to), at most 90 days.",
  examples: ["2026-01-01T00:00:00Z"],
});
const To = Type.String({
  description: "End of the range, RFC 3339 with offset (exclusive). Range is [from, to), at most 90 days.",
  examples: ["2026-01-31T00:00:00Z"],
});

// As the document states them: parseRfc3339 accepts exactly the RFC 3339 date-time (with an offset).
const FromDocumented = Type.String({ ...From, format: "date-time" });
const ToDocumented = Type.String({ ...To, format: "date-time" });
const documentedRange = { from: FromDocumented, to: ToDocumented };

export const CreditUsageQuery = Type.Object(
  {
    from: From,
    to: To,
    source: Type.Optional(
      Type.Enum(["all", "frontend", "api_key", "operator"], {
        default: "all",
        description:
          "all: every ledger row; frontend / api_key / operator: rows whose metadata.source is that value (operator: grants made by the service's operator)",
      }),
    ),
  },
  { additionalProperties: false },
);

export const CreditUsageQueryDocumented = documented(CreditUsageQuery, {
  ...documentedRange,
  source: Type.Unsafe({ ...CreditUsageQuery.properties.source, type: "string" }),
});

export const ApiKeyUsageQuery = Type.Object(
  {
    from: From,
    to: To,
    api_key_id: Type.Optional(Type.String({ format: "uuid", description: "Only this key's bucket" })),
  },
  { additionalProperties: false },
);

export const ApiKeyUsageQueryDocumented = documented(ApiKeyUsageQuery, documentedRange);

export const MetricsQuery = Type.Object(
  {
    from: Type.Optional(From),
    to: Type.Optional(To),
  },
  { additionalProperties: false },
);

export const MetricsQueryDocumented = documented(MetricsQuery, documentedRange);

const Count = Type.Integer({ minimum: 0 });

export const UsageTotalsSchema = Type.Object(
  {
    used_credits: Type.Integer({ description: "Sum of |amount| of deductions" }),
    granted_credits: Type.Integer({ description: "Sum of amount of grants (refunds included)" }),
    net_credits: Type.Integer({ description: "used_credits - granted_credits" }),
  },
  { $id: "UsageTotals", description: "Credits used and granted over a range" },
);

export const UsagePointSchema = Type.Object(
  {
    date: Type.String({ format: "date", description: "UTC day, YYYY-MM-DD" }),
    used_credits: Type.Integer(),
    granted_credits: Type.Integer(),
    net_credits: Type.Integer(),
  },
  { $id: "UsagePoint", description: "The usage totals of one UTC day" },
);

export const CreditUsageReply = Type.Object(
  {
    user_id: Uuid,
    from: DateTime,
    to: DateTime,
    totals: ref(UsageTotalsSchema),
    series: Type.Array(ref(UsagePointSchema)),
  },
  { $id: "CreditUsage", description: "Credit usage over [from, to), with one point per UTC day" },
);

export const ApiKeyUsageBucketSchema = Type.Object(
  {
    api_key_id: Type.Optional(Uuid),
    api_key_name: Type.Optional(Type.String()),
    // Typed string like KnownKeyFacts; the keys table's check keeps it one of the purposes.
    api_key_purpose: Type.Optional(Type.Unsafe<string>(ref(ApiKeyPurposeSchema))),
    is_active: Type.Optional(Type.Boolean()),
    is_unknown: Type.Boolean({
      description: "true for the one bucket of rows without a valid api_key_id (it has no key fields)",
    }),
    totals: ref(UsageTotalsSchema),
    series: Type.Array(ref(UsagePointSchema)),
  },
  {
    $id: "ApiKeyUsageBucket",
    description: "One key's usage; name, purpose and is_active come from the key while it exists",
  },
);

export const ApiKeyUsageReply = Type.Object(
  {
    user_id: Uuid,
    from: DateTime,
    to: DateTime,
    keys: Type.Array(ref(ApiKeyUsageBucketSchema)),
  },
  { $id: "ApiKeyUsage", description: "Credit usage over [from, to) per API key" },
);

const JobStatusSchema = Type.Object({ pending: Count, processing: Count, completed: Count, failed: Count });

const VerificationStatusSchema = Type.Object({
  valid: Count,
  invalid: Count,
  catchall: Count,
  invalid_syntax: Count,
  disposable_domain: Count,
  unknown: Count,
});

const metricsCounters = {
  total_verifications: Count,
  total_tasks: Count,
  unique_email_addresses: Count,
  job_status: JobStatusSchema,
  verification_status: VerificationStatusSchema,
  total_catchall: Count,
  total_role_based: Count,
  total_disposable_domain_emails: Count,
  // Beyond the spec: optional for clients made from an older document, always sent.
  total_free_provider_emails: Type.Optional(
    Type.Integer({
      minimum: 0,
      description:
        "Verification records whose domain is a free mailbox provider (is_free_provider: gmail.com, outlook.com, yahoo.com, …)",
    }),
  ),
};

export const MetricsPointSchema = Type.Object(
  {
    date: Type.String({ format: "date", description: "UTC day, YYYY-MM-DD" }),
    ...metricsCounters,
  },
  { $id: "VerificationMetricsPoint", description: "The verification counters of one UTC day" },
);

export const VerificationMetricsReply = Type.Object(
  {
    user_id: Uuid,
    ...metricsCounters,
    last_verification_requested_at: Type.Union([DateTime, Type.Null()]),
    last_verification_completed_at: Type.Union([DateTime, Type.Null()]),
    series: Type.Optional(
      Type.Array(ref(MetricsPointSchema), { description: "Only when both from and to are given" }),
    ),
  },
  { $id: "VerificationMetrics", description: "The caller's verification counters" },
);

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
  verification_status: c.verificationStatus,
  total_catchall: c.totalCatchall,
  total_role_based: c.totalRoleBased,
  total_disposable_domain_emails: c.totalDisposableDomainEmails,
  total_free_provider_emails: c.totalFreeProviderEmails,
});

export const toCreditUsageReply = (r: CreditUsageReport) => ({
  user_id: r.userId,
  from: r.from.toISOString(),
  to: r.to.toISOString(),
  totals: toTotals(r.totals),
  series: r.series.map(toPoint),
});

export const toApiKeyUsageReply = (r: ApiKeyUsageReport) => ({
  user_id: r.userId,
  from: r.from.toISOString(),
  to: r.to.toISOString(),
  keys: r.keys.map(toBucket),
});

export const toVerificationMetricsReply = (r: VerificationMetricsReport) => ({
  user_id: r.userId,
  ...toCounters(r),
  last_verification_requested_at: r.lastVerificationRequestedAt?.toISOString() ?? null,
  last_verification_completed_at: r.lastVerificationCompletedAt?.toISOString() ?? null,
  ...(r.series ? { series: r.series.map((p) => ({ date: p.date, ...toCounters(p) })) } : {}),
});
