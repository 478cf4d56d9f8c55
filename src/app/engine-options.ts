import type { VerifyConfig } from "../config/index.ts";
import type { Database } from "../db/client.ts";
import { createPgProviderPace } from "../politeness/provider-pace.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../observability/logger.ts";
import {
  DEFAULT_EGRESS,
  defaultEngineOptions,
  egressName,
  type EngineOptions,
  type EnginePorts,
  type ProviderPace,
} from "../verify/index.ts";
import { classifyAddress } from "../net/address-policy.ts";

/** VerifyConfig's fields that are not engine options: the realtime service's and the doctor's. */
const NOT_ENGINE_OPTIONS = [
  "smtpHeloNameSource",
  "verifyTimeoutMs",
  "resultCacheTtlMs",
  "maxInFlightPerUser",
  "smtpEgressRestMs",
  "providerPaceQuietMs",
] as const satisfies ReadonlyArray<keyof VerifyConfig>;
type NotEngineOption = (typeof NOT_ENGINE_OPTIONS)[number];

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
  const configured: Partial<VerifyConfig> = { ...v };
  for (const name of NOT_ENGINE_OPTIONS) delete configured[name];
  // The unconfigured options keep their defaults; the spread checks each configured field's type.
  const options: EngineOptions = {
    ...defaultEngineOptions,
    ...(configured as Omit<VerifyConfig, NotEngineOption>),
  };
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

/**
 * The providers' paces an engine asks (docs/pacing.md): kept in the database, so every worker and
 * the realtime API share them. `whenNoRoom`: "defer" for the worker pool, "answer" for realtime.
 */
export function paceFrom(
  s: { db: Database; clock: Clock; logger: Logger; config: { verify: Readonly<VerifyConfig> } },
  whenNoRoom: "defer" | "answer",
): ProviderPace {
  return createPgProviderPace({
    db: s.db,
    clock: s.clock,
    quietMs: s.config.verify.providerPaceQuietMs,
    whenNoRoom,
    onError: (err) => s.logger.warn({ err }, "a provider's pace could not be read or written"),
  });
}
