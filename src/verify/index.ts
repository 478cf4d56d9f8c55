// The verification engine's public API. Everything else in verify/ is internal.
export { createEngine, createIdleConnections, type Engine, type EnginePorts } from "./engine.ts";
export { IdleConnections } from "./smtp/idle-connections.ts";
export { KeyedSemaphore } from "./host-limit.ts";
export { chunkGroups, groupByDomain, groupDomainOf } from "./group-by-domain.ts";
export { decidedByEvidence } from "./evidence.ts";
export { defaultEngineOptions, type EngineOptions } from "./options.ts";
export {
  type AddressPolicy,
  type ConnectPort,
  type DnsAnswer,
  type DnsPort,
  type HostGate,
  type HostSlot,
  type PaceAnswer,
  type PaceGrant,
  type PaceUsage,
  type ProviderPace,
  type SlotWish,
} from "./ports.ts";
export { PaceRefusal, providerLabel } from "./pace.ts";
export {
  afterRetrip,
  budgetOf,
  firstProbeOffsetMs,
  forgetAt,
  nextProbeOffsetMs,
  PROBE_RCPTS,
  ratePerMinute,
} from "./pace-rules.ts";
export { createNodeDns, expandIpv6, type NodeDnsOptions } from "./dns.ts";
export { resolveMailHosts, type DomainResolution } from "./resolve-domain.ts";
// The SMTP client itself, for a diagnostic conversation of one's own (doctor/).
export { AbortedError } from "./abort.ts";
export { SmtpClosedError, SmtpConnection, SmtpTimeoutError } from "./smtp/connection.ts";
export { SmtpProtocolError, type SmtpReply } from "./smtp/reply-reader.ts";
export { DEFAULT_EGRESS, egressName, isProxySpec, providerOf } from "./smtp/egress.ts";
export { createDirectConnect, directConnect, ConnectError } from "./smtp/connect.ts";
export { createSocksConnect } from "./smtp/socks-connect.ts";
export { checkSyntax } from "./syntax.ts";
export { isRoleAccount } from "./lists/role-accounts.ts";
export { SANDBOX_DOMAIN, isSandboxAddress } from "./sandbox.ts";
export { isDisposableDomain } from "./lists/disposable.ts";
export { classifyReply } from "./smtp/replies.ts";
export {
  CHECK_NAMES,
  CHECK_STATUSES,
  isUnknownReason,
  VERIFICATION_STATUSES,
  type DependencyFailure,
  type UnknownReason,
  type VerificationResult,
  type VerificationStatus,
} from "./types.ts";
export {
  FILE_COLUMNS,
  RESULT_FIELDS,
  cellsInOrder,
  columnsNamed,
  pickResultFields,
  resultCells,
  resultFieldsJson,
  type ResultCells,
  type ResultColumnName,
  type ResultField,
  type ResultFieldKind,
  type ResultFieldValues,
} from "./result-fields.ts";
export { allSkippedAfterSyntax, checksOfLegacyResult, isResultChecks } from "./checks.ts";
