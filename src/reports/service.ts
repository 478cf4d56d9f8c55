import type { Database } from "../db/client.ts";
import { reportApiKeyUsage, type ApiKeyUsageQuery, type ApiKeyUsageReport } from "./api-key-usage.ts";
import { reportCreditUsage, type CreditUsageQuery, type CreditUsageReport } from "./credit-usage.ts";
import type { DateRangeInput } from "./date-range.ts";
import { reportVerificationMetrics, type VerificationMetricsReport } from "./verification-metrics.ts";

/** Usage and metrics reports. Every method validates its raw query and throws VALIDATION_ERROR. */
export interface ReportsService {
  creditUsage(userId: string, query: CreditUsageQuery): Promise<CreditUsageReport>;
  apiKeyUsage(userId: string, query: ApiKeyUsageQuery): Promise<ApiKeyUsageReport>;
  verificationMetrics(userId: string, query: DateRangeInput): Promise<VerificationMetricsReport>;
}

export function createReportsService(db: Database): ReportsService {
  return {
    creditUsage: (userId, query) => reportCreditUsage(db, userId, query),
    apiKeyUsage: (userId, query) => reportApiKeyUsage(db, userId, query),
    verificationMetrics: (userId, query) => reportVerificationMetrics(db, userId, query),
  };
}
