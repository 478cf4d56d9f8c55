import type { VerifyConfig } from "../config/index.ts";
import {
  DEFAULT_EGRESS,
  defaultEngineOptions,
  egressName,
  type EngineOptions,
  type EnginePorts,
} from "../verify/index.ts";
import { classifyAddress } from "../net/address-policy.ts";

/** VerifyConfig's fields that are not engine options: the realtime service's and the doctor's. */
type NotEngineOption =
  "smtpHeloNameSource" | "verifyTimeoutMs" | "resultCacheTtlMs" | "maxInFlightPerUser" | "smtpEgressRestMs";

/** Engine options that are no setting (the engine's defaults hold): not in VerifyConfig. */
type UnconfiguredOption = "hostEvidenceTtlMs" | "microBatchWindowMs";

// config/ and verify/ may not import each other, so each declares its fields; these two checks
// keep them one list: every other VerifyConfig field is an engine option of the same type, and
// every engine option but the unconfigured ones is configured (a compile error otherwise).
type ConfiguredOptions = Omit<VerifyConfig, NotEngineOption>;
const sameFields: [
  Exclude<keyof ConfiguredOptions, keyof EngineOptions>,
  Exclude<keyof EngineOptions, keyof ConfiguredOptions | UnconfiguredOption>,
] extends [never, never]
  ? true
  : never = true;
void sameFields;

/** The engine never reads configuration itself; this is the one mapping from Config to it. */
export function engineOptionsFrom(v: Readonly<VerifyConfig>): EngineOptions {
  const {
    smtpHeloNameSource,
    verifyTimeoutMs,
    resultCacheTtlMs,
    maxInFlightPerUser,
    smtpEgressRestMs,
    ...configured
  } = v;
  void [smtpHeloNameSource, verifyTimeoutMs, resultCacheTtlMs, maxInFlightPerUser, smtpEgressRestMs];
  // The unconfigured options keep their defaults; the spread checks each configured field's type.
  const options: EngineOptions = { ...defaultEngineOptions, ...configured };
  return options;
}

/**
 * The outbound guard every engine (and the doctor) gets: the one webhooks use
 * (DESIGN.md §5 "Outbound guard"); SMTP_ALLOW_PRIVATE_HOSTS is the engine option above.
 */
export const guardPorts: Pick<EnginePorts, "addressPolicy"> = Object.freeze({
  addressPolicy: classifyAddress,
});

/**
 * What a host gate must know of the egress identities (SMTP_EGRESS): their names, as the
 * engine's sessions name them, and how long a refused one rests.
 */
export function gateEgressFrom(v: Readonly<VerifyConfig>): { egress: string[]; restMs: number } {
  const egress = v.smtpEgress.length === 0 ? [DEFAULT_EGRESS] : v.smtpEgress.map(egressName);
  return { egress, restMs: v.smtpEgressRestMs };
}
