// The verification engine's public API. Everything else in verify/ is internal.
export {
  createEngine,
  createIdleConnections,
  type Engine,
  type EnginePorts,
  type VerifyCallOptions,
} from "./engine.ts";
export { IdleConnections, type IdleConnection, type ConnectionState } from "./smtp/idle-connections.ts";
export { KeyedSemaphore, createLocalHostGate } from "./host-limit.ts";
export { DOMAIN_GROUP_MAX, chunkGroups, groupByDomain, groupDomainOf } from "./group-by-domain.ts";
export { decidedByEvidence } from "./evidence.ts";
export { defaultEngineOptions, type EngineOptions } from "./options.ts";
export {
  noAddressPolicy,
  openHostGate,
  type AddressPolicy,
  type AddressVerdict,
  type ConnectPort,
  type DnsAnswer,
  type DnsPort,
  type EgressIdentity,
  type HostGate,
  type HostSlot,
  type MxRecord,
  type PaceAnswer,
  type PaceGrant,
  type PaceUsage,
  type ProviderPace,
  type RestReason,
  type SlotWish,
} from "./ports.ts";
export { PaceRefusal, providerLabel, type PacedBy } from "./pace.ts";
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
export {
  resolveMailHosts,
  type DomainResolution,
  type MailHost,
  type MxTarget,
  type NoMailCause,
} from "./resolve-domain.ts";
// The SMTP client itself, for a diagnostic conversation of one's own (doctor/).
export { AbortedError } from "./abort.ts";
export { SmtpClosedError, SmtpConnection, SmtpTimeoutError } from "./smtp/connection.ts";
export { SmtpProtocolError, type SmtpReply } from "./smtp/reply-reader.ts";
export { DEFAULT_EGRESS, egressIdentities, egressName, isProxySpec, providerOf } from "./smtp/egress.ts";
export { createDirectConnect, directConnect, ConnectError, type ConnectFailureKind } from "./smtp/connect.ts";
export { createSocksConnect, parseSocksUrl } from "./smtp/socks-connect.ts";
export { checkSyntax, checkDomainSyntax, type SyntaxResult, type SyntaxFailureReason } from "./syntax.ts";
export { isRoleAccount } from "./lists/role-accounts.ts";
export {
  SANDBOX_DOMAIN,
  SANDBOX_HOST,
  SANDBOX_MAILBOXES,
  isSandboxAddress,
  isSandboxDomain,
  sandboxMailboxOf,
  sandboxResult,
  type SandboxMailbox,
} from "./sandbox.ts";
export { isDisposableDomain } from "./lists/disposable.ts";
export { classifyReply, type ReplyVerdict } from "./smtp/replies.ts";
export { detectServerType, PROVIDER_TRAITS, type ServerType, type ProviderTraits } from "./providers.ts";
export {
  CHECK_NAMES,
  CHECK_STATUSES,
  UNKNOWN_REASONS,
  isUnknownReason,
  VERIFICATION_STATUSES,
  type Check,
  type CheckName,
  type CheckStatus,
  type DependencyFailure,
  type ResultChecks,
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
  type ResultCell,
  type ResultCells,
  type ResultColumn,
  type ResultColumnName,
  type ResultField,
  type ResultFieldKey,
  type ResultFieldKind,
  type ResultFieldName,
  type ResultFieldValues,
  type ResultJson,
} from "./result-fields.ts";
export { allSkippedAfterSyntax, checksOfLegacyResult, isResultChecks } from "./checks.ts";
