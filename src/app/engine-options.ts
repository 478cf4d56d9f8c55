import type { VerifyConfig } from "../config/index.ts";
import { defaultEngineOptions, type EngineOptions, type EnginePorts } from "../verify/index.ts";
import { classifyAddress } from "../webhooks/address-policy.ts";

/** The engine never reads configuration itself; this is the one mapping from Config to it. */
export function engineOptionsFrom(v: Readonly<VerifyConfig>): EngineOptions {
  return {
    dnsServers: v.dnsServers,
    dnsTimeoutMs: v.dnsTimeoutMs,
    dnsTries: v.dnsTries,
    dnsCacheTtlMs: v.dnsCacheTtlMs,
    smtpPort: v.smtpPort,
    smtpHeloName: v.smtpHeloName,
    smtpMailFrom: v.smtpMailFrom,
    smtpConnectTimeoutMs: v.smtpConnectTimeoutMs,
    smtpGreetingTimeoutMs: v.smtpGreetingTimeoutMs,
    smtpCommandTimeoutMs: v.smtpCommandTimeoutMs,
    smtpMaxRcpt: v.smtpMaxRcpt,
    smtpErrorBudget: v.smtpErrorBudget,
    smtpStartTls: v.smtpStartTls,
    maxSessionsPerHost: v.maxSessionsPerHost,
    smtpIdleReuseMs: v.smtpIdleReuseMs,
    hostEvidenceTtlMs: defaultEngineOptions.hostEvidenceTtlMs,
    microBatchWindowMs: defaultEngineOptions.microBatchWindowMs,
    catchallCacheTtlMs: v.catchallCacheTtlMs,
    smtpProxy: v.smtpProxy,
    smtpAllowPrivateHosts: v.smtpAllowPrivateHosts,
  };
}

/**
 * The outbound guard every engine (and the doctor) gets: the one webhooks use
 * (DESIGN.md §5 "Outbound guard"); SMTP_ALLOW_PRIVATE_HOSTS is the engine option above.
 */
export const guardPorts: Pick<EnginePorts, "addressPolicy"> = Object.freeze({
  addressPolicy: classifyAddress,
});
