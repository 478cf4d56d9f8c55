// The pipeline of one domain after syntax: disposable list → DNS → (PTR ∥ SMTP) → classification,
// cheapest first, returning as soon as a stage decides. A plain function over the engine's ports
// and caches (DomainRun); engine.ts owns their lifetime, batching and deadlines.
import type { Clock } from "../lib/clock.ts";
import { AbortedError, raceSignal } from "./abort.ts";
import { baseResult } from "./base-result.ts";
import {
  checkError,
  dnsCodeReason,
  failed,
  passed,
  skipped,
  smtpCheckOf,
  type Check,
  type ResultChecks,
} from "./checks.ts";
import { settleAddress, type CatchAllVerdict } from "./classify.ts";
import { decideReply, serverEvidenceOf, sessionRecipients, type KnownDomainAnswers } from "./evidence.ts";
import { refusalEvidence, vetEach, type RefusedAddress } from "./host-policy.ts";
import { isDisposableDomain } from "./lists/disposable.ts";
import { isRoleAccount } from "./lists/role-accounts.ts";
import type { RecipientSource } from "./micro-batch.ts";
import { providerLabel, type PacedBy } from "./pace.ts";
import type { AddressPolicy } from "./ports.ts";
import { detectServerType, isFreeProviderDomain, providerTraits, type ServerType } from "./providers.ts";
import { DomainResolver, MX_LIMIT_CODE, type DomainResolution, type NoMailCause } from "./resolve-domain.ts";
import type { ConnectPort } from "./smtp/connect.ts";
import type { SmtpReply } from "./smtp/reply-reader.ts";
import type { ReplyVerdict } from "./smtp/replies.ts";
import { runSession, type SessionConfig, type SessionDeps, type SessionReport } from "./smtp/session.ts";
import { suggestAddress, type DeadDomainCause } from "./suggest.ts";
import type { TtlCache } from "./ttl-cache.ts";
import type { DependencyFailure, UnknownReason, VerificationResult } from "./types.ts";

/** What verifyDomain works with: the engine's ports, settings and caches, and its closing signal. */
export interface DomainRun {
  clock: Clock;
  /** Uniform in [0, 1): the catch-all probe's local part. */
  random: () => number;
  resolver: DomainResolver;
  addressPolicy: AddressPolicy;
  /** Probe mail hosts whatever their address (smtpAllowPrivateHosts: test worlds, labs). */
  allowPrivateHosts: boolean;
  sessionConfig: SessionConfig;
  session: SessionDeps & { connect: ConnectPort };
  domainFacts: TtlCache<string, DomainFacts>;
  /** Hosts that accepted an ordinary recipient from us: their unrecognised rejections are about the recipient. */
  hostAccepts: TtlCache<string, true>;
  /** Aborted when the engine closes: a deadline then reads `cancelled`. */
  closing: AbortSignal;
  /** Keeps a session's wind-down (QUIT) for the engine's close to wait on. */
  track(done: Promise<void>): void;
}

// The deadline ran out (caller) or the engine is closing: name the step, or say cancelled.
export const abortReason = (
  run: Pick<DomainRun, "closing">,
  step: "timeout_dns" | "timeout_smtp",
): UnknownReason => (run.closing.aborted ? "cancelled" : step);

const PROBE_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const PROBE_LENGTH = 20;

/** A random local part no mailbox has: the catch-all probe. */
function probeAddress(domain: string, random: () => number): string {
  let local = "";
  for (let i = 0; i < PROBE_LENGTH; i++)
    local += PROBE_ALPHABET[Math.floor(random() * PROBE_ALPHABET.length)] ?? "x";
  return `${local}@${domain}`;
}

/** What a session taught about a domain, reused for later sessions within the catch-all TTL. */
export interface DomainFacts extends KnownDomainAnswers {
  catchAll: Exclude<CatchAllVerdict, "undecided">;
}

/** The checks a domain's addresses share (syntax passed, and smtp is per address). */
export type DomainChecks = Pick<ResultChecks, "dns" | "mx" | "reverse_dns">;

/** How far a domain's verification got: what a caller whose deadline ran out is told. */
export interface Progress {
  stage: "dns" | "smtp";
  facts: {
    hasMxRecords: boolean;
    hasReverseDns: boolean;
    hostName: string;
    hostAddress: string;
    serverType: string;
  };
  checks: DomainChecks;
}

/** dns, mx and reverse_dns skipped for one reason; smtp goes with them. */
export const domainSkipped = (reason: string): DomainChecks => ({
  dns: skipped(reason),
  mx: skipped(reason),
  reverse_dns: skipped(reason),
});

/** What the domain lookup says of the dns and mx checks (reverse_dns waits for a host). */
function lookupChecks(resolution: DomainResolution, failureReason: string | null): DomainChecks {
  const noHost = skipped("no_mail_host");
  switch (resolution.kind) {
    case "mail_hosts":
      return {
        dns: passed(),
        mx: passed(resolution.hasMxRecords ? "mx_records" : "implicit_mx"),
        reverse_dns: skipped("not_reached"),
      };
    case "no_mail":
      if (resolution.cause === "nxdomain")
        return { dns: failed("nxdomain"), mx: skipped("nxdomain"), reverse_dns: noHost };
      return { dns: passed(), mx: failed(resolution.cause), reverse_dns: noHost };
    case "dns_error":
    case "dns_timeout": {
      const reason =
        failureReason ??
        (resolution.kind === "dns_timeout"
          ? "timeout"
          : resolution.code === MX_LIMIT_CODE
            ? "mx_limit"
            : dnsCodeReason(resolution.code));
      // The MX answer came back but no host address did: the domain resolves, its hosts don't.
      if (resolution.hasMxRecords) return { dns: passed(), mx: checkError(reason), reverse_dns: noHost };
      return { dns: checkError(reason), mx: skipped("dns_error"), reverse_dns: noHost };
    }
  }
}

/** The spec's DEPENDENCY_* kind of our resolvers' or proxy's health, when it is a failure. */
const dependencyKindOf = (health: string): DependencyFailure["kind"] | null =>
  health === "timeout"
    ? "timeout"
    : health === "unavailable"
      ? "unavailable"
      : health === "rate_limit"
        ? "rate_limit"
        : null;

// Session failures that a dead proxy also produces (every connection through it fails alike).
const PROXY_SUSPECT_FAILURES: ReadonlySet<UnknownReason> = new Set([
  "proxy_error",
  "port25_blocked",
  "connection_failed",
  "connection_dropped",
]);

const NO_MAIL_EVIDENCE: Readonly<Record<NoMailCause, string>> = {
  nxdomain: "dns: the domain does not exist (NXDOMAIN)",
  no_records: "dns: no MX and no address records",
  null_mx: "dns: null MX (RFC 7505): the domain accepts no mail",
  no_host_address: "dns: no MX host has an address",
};

export function resultOf(
  run: Pick<DomainRun, "clock">,
  address: string,
  domain: string,
  progress: Progress,
  c: Pick<
    VerificationResult,
    "status" | "unknownReason" | "isCatchall" | "needsPhysicalVerify" | "evidence" | "retryAfterMs"
  > &
    Partial<Pick<VerificationResult, "didYouMean" | "isFreeProvider" | "dependencyFailure" | "pacedBy">> & {
      smtp: Check;
    },
): VerificationResult {
  const { smtp, ...rest } = c;
  return {
    ...baseResult(address, domain, run.clock.now(), { syntax: passed(), ...progress.checks, smtp }),
    isRoleBased: isRoleAccount(address.slice(0, address.lastIndexOf("@"))),
    isDisposable: isDisposableDomain(domain),
    ...progress.facts,
    isFreeProvider: isFreeProviderDomain(domain),
    ...rest,
  };
}

/** Verifies unique canonical addresses of one syntactically valid domain: the pipeline after syntax. */
export async function verifyDomain(
  run: DomainRun,
  domain: string,
  source: RecipientSource,
  signal: AbortSignal,
  progress: Progress,
): Promise<Map<string, VerificationResult>> {
  const results = new Map<string, VerificationResult>();
  const facts = progress.facts;
  const finishAll = (
    status: VerificationResult["status"],
    unknownReason: UnknownReason | null,
    evidence: string,
    smtp: Check,
    dead: DeadDomainCause | null = null,
    dependencyFailure: DependencyFailure | null = null,
  ): Map<string, VerificationResult> => {
    for (const a of source.take())
      results.set(
        a,
        resultOf(run, a, domain, progress, {
          status,
          unknownReason,
          isCatchall: false,
          needsPhysicalVerify: false,
          evidence,
          smtp,
          ...(dependencyFailure === null ? {} : { dependencyFailure }),
          // A domain that takes no mail is nobody's mailbox provider, whatever a list says.
          ...(dead === null ? {} : { didYouMean: suggestAddress(a, domain, dead), isFreeProvider: false }),
        }),
      );
    return results;
  };

  if (isDisposableDomain(domain)) {
    progress.checks = domainSkipped("disposable_domain");
    return finishAll(
      "disposable_domain",
      null,
      "list: disposable domain",
      skipped("disposable_domain"),
      "disposable",
    );
  }

  let resolution: DomainResolution;
  try {
    resolution = await raceSignal(run.resolver.resolve(domain), signal);
  } catch (error) {
    if (error instanceof AbortedError) {
      progress.checks = { ...domainSkipped("deadline"), dns: checkError("deadline") };
      return finishAll(
        "unknown",
        abortReason(run, "timeout_dns"),
        "dns: deadline reached",
        skipped("deadline"),
      );
    }
    throw error;
  }
  facts.hasMxRecords = resolution.hasMxRecords;
  // A failure that could be our resolvers' own: ask them whether they answer at all.
  const resolverDown =
    resolution.kind === "dns_timeout" ||
    (resolution.kind === "dns_error" &&
      (resolution.code === "ECONNREFUSED" || resolution.code === "EREFUSED"))
      ? dependencyKindOf(await run.resolver.resolverHealth())
      : null;
  progress.checks = lookupChecks(resolution, resolverDown === null ? null : `resolver_${resolverDown}`);
  const resolverFailure: DependencyFailure | null =
    resolverDown === null
      ? null
      : {
          dependency: "dns_resolver",
          kind: resolverDown,
          detail:
            resolverDown === "timeout"
              ? "our DNS resolvers did not answer (DNS_SERVERS, after DNS_TRIES tries)"
              : "our DNS resolvers refused the query or could not be reached (DNS_SERVERS)",
        };
  switch (resolution.kind) {
    case "no_mail": {
      const skip = skipped(resolution.cause === "nxdomain" ? "nxdomain" : "no_mail_host");
      return finishAll("invalid", null, NO_MAIL_EVIDENCE[resolution.cause], skip, resolution.cause);
    }
    case "dns_error":
      return finishAll(
        "unknown",
        "dns_error",
        `dns: lookup failed (${resolution.code})${resolverFailure === null ? "" : `; ${resolverFailure.detail}`}`,
        skipped("dns_error"),
        null,
        resolverFailure,
      );
    case "dns_timeout":
      return finishAll(
        "unknown",
        "dns_timeout",
        `dns: lookup timed out${resolverFailure === null ? "" : `; ${resolverFailure.detail}`}`,
        skipped("dns_error"),
        null,
        resolverFailure,
      );
    case "mail_hosts":
      break;
  }
  // Hosts are looked up one at a time, as far as the session falls back; only hosts with a
  // public address are probed (unless allowed: test worlds, labs).
  const refused: RefusedAddress[] = [];
  const candidates = run.resolver.mailHosts(resolution, signal);
  const hosts = run.allowPrivateHosts ? candidates : vetEach(candidates, run.addressPolicy, refused);
  const first = await hosts.next();
  if (first.done === true) {
    if (signal.aborted) {
      progress.checks.reverse_dns = skipped("deadline");
      return finishAll(
        "unknown",
        abortReason(run, "timeout_dns"),
        "dns: deadline reached",
        skipped("deadline"),
      );
    }
    progress.checks.reverse_dns = skipped("private_host_refused");
    return finishAll(
      "unknown",
      "private_host_refused",
      refusalEvidence(refused),
      skipped("private_host_refused"),
    );
  }
  progress.stage = "smtp";

  const firstAddress = first.value.addresses[0];
  // PTR runs alongside SMTP: it never changes the verdict, so it shouldn't cost a round trip.
  const firstPtr: Promise<Check> =
    firstAddress === undefined
      ? Promise.resolve(skipped("no_address"))
      : run.resolver.reverseDns(firstAddress);
  const ptrSeen: { value?: Check } = {};
  firstPtr.then((v) => (ptrSeen.value = v)).catch(() => undefined);

  const known = run.domainFacts.get(domain);
  const probe = known === undefined ? probeAddress(domain, run.random) : null;
  const control = `postmaster@${domain}`;
  let canonicals: readonly string[] = [];
  const recipients = (): string[] => {
    canonicals = source.take();
    return sessionRecipients(canonicals, control, probe, known?.control != null);
  };
  const report = await runSession(
    { hosts: prepend(first.value, hosts), recipients, signal },
    run.sessionConfig,
    run.session,
  );
  run.track(report.done);

  facts.hostName = report.hostName ?? "";
  facts.hostAddress = report.hostAddress ?? "";
  const serverType: ServerType = detectServerType(
    [
      ...(report.hostName === null ? [] : [report.hostName]),
      ...[...resolution.hosts, ...resolution.fallbacks].map((h) => h.name),
    ],
    [report.greeting, report.ehlo],
    [...report.replies.values()].map((r) => r.text),
  );
  facts.serverType = serverType;

  const host = report.hostName;
  const server = serverEvidenceOf({
    replies: report.replies,
    control,
    probe,
    known,
    hostAcceptedRecently: host !== null && run.hostAccepts.get(host) === true,
  });
  if (server.acceptedOrdinary === "session" && host !== null) run.hostAccepts.set(host, true);
  const decided = new Map<string, { verdict: ReplyVerdict; evidence: string; reply: SmtpReply }>();
  for (const [address, reply] of report.replies) {
    decided.set(address, { ...decideReply(address, reply, server), reply });
  }
  const catchAll =
    known?.catchAll ??
    decideCatchAll(
      probe === null ? undefined : decided.get(probe)?.verdict,
      canonicals.map((a) => decided.get(a)?.verdict),
    );
  if (known === undefined && catchAll !== "undecided") {
    run.domainFacts.set(domain, { catchAll, control: server.control, probeRejection: server.probeRejection });
  }

  progress.checks.reverse_dns = await reverseDnsOf(
    run,
    report,
    firstAddress,
    firstPtr,
    signal,
    ptrSeen.value,
  );
  facts.hasReverseDns = progress.checks.reverse_dns.status === "passed";
  const failure =
    report.failure === null ? null : { ...report.failure, reason: relabelAbort(run, report.failure.reason) };
  const provider = providerTraits(serverType);
  const proxyFailure = await proxyFailureOf(run.session.connect, report, failure?.reason);
  for (const address of canonicals) {
    const settled = settleAddress({ decided: decided.get(address), failure, catchAll, provider });
    const verdict = decided.get(address)?.verdict.kind;
    const smtp = smtpCheckOf(settled.status, settled.unknownReason, verdict);
    const dependencyFailure = settled.status === "unknown" && verdict === undefined ? proxyFailure : null;
    const pacedBy = settled.unknownReason === "rate_limited" ? pacedByOf(report.paced, address) : null;
    results.set(
      address,
      resultOf(run, address, domain, progress, {
        ...settled,
        ...(pacedBy === null ? {} : { pacedBy, evidence: pacedEvidence(pacedBy, settled.evidence) }),
        smtp: dependencyFailure === null ? smtp : checkError(`proxy_${dependencyFailure.kind}`),
        ...(dependencyFailure === null ? {} : { dependencyFailure }),
      }),
    );
  }
  return results;
}

/** Why `address` is unknown because of its provider's pace, when it is. */
function pacedByOf(paced: SessionReport["paced"], address: string): PacedBy | null {
  if (paced === null) return null;
  return { provider: paced.provider, retryAt: paced.retryAt, unasked: paced.unasked.includes(address) };
}

/** The evidence of a paced address: what the provider said, or that the pace left it unasked. */
function pacedEvidence(paced: PacedBy, said: string): string {
  const until = paced.retryAt === null ? "" : ` until ${paced.retryAt.toISOString()}`;
  const label = providerLabel(paced.provider);
  return paced.unasked
    ? `not asked: ${label} asked us to slow down, and its pace has no room${until}`
    : `${said}; ${label} asked us to slow down: paced${until}`;
}

/**
 * When no mail host could be reached through our SOCKS proxy, whether the proxy itself is the
 * cause: asked of the proxy's own greeting, so a mail host that is merely down stays a result.
 */
async function proxyFailureOf(
  connect: ConnectPort,
  report: SessionReport,
  reason: UnknownReason | undefined,
): Promise<DependencyFailure | null> {
  if (report.greeted || reason === undefined || !PROXY_SUSPECT_FAILURES.has(reason)) return null;
  if (connect.dependencyHealth === undefined) return null;
  const kind = dependencyKindOf(await connect.dependencyHealth());
  if (kind === null) return null;
  const detail = {
    timeout: "our SOCKS proxy did not answer (SMTP_PROXY)",
    unavailable: "our SOCKS proxy refused us or could not be reached (SMTP_PROXY)",
    rate_limit: "our SOCKS proxy closed our connections at once: it is throttling us (SMTP_PROXY)",
  }[kind];
  return { dependency: "smtp_proxy", kind, detail };
}

function relabelAbort(run: DomainRun, reason: UnknownReason): UnknownReason {
  return reason === "timeout_smtp" ? abortReason(run, "timeout_smtp") : reason;
}

/** PTR of the host the session used; after a deadline, whatever the lookup already knew. */
async function reverseDnsOf(
  run: DomainRun,
  report: SessionReport,
  firstAddress: string | undefined,
  firstPtr: Promise<Check>,
  signal: AbortSignal,
  firstPtrSeen: Check | undefined,
): Promise<Check> {
  const used = report.hostAddress;
  const sameHost = used === null || used === firstAddress;
  if (signal.aborted) return (sameHost ? firstPtrSeen : undefined) ?? skipped("deadline");
  try {
    return await raceSignal(sameHost ? firstPtr : run.resolver.reverseDns(used), signal);
  } catch (error) {
    if (error instanceof AbortedError) return skipped("deadline");
    return checkError("lookup_failed");
  }
}

export const newProgress = (): Progress => ({
  stage: "dns",
  facts: {
    hasMxRecords: false,
    hasReverseDns: false,
    hostName: "",
    hostAddress: "",
    serverType: "unknown",
  },
  checks: domainSkipped("not_reached"),
});

async function* prepend<T>(first: T, rest: AsyncIterable<T>): AsyncGenerator<T> {
  yield first;
  yield* rest;
}

/**
 * Catch-all from the probe first (only a clear 2xx makes a domain catch-all); otherwise a
 * missing/disabled answer for any address — probe or real — proves the server tells mailboxes
 * apart. 4xx and errors decide nothing.
 */
export function decideCatchAll(
  probe: ReplyVerdict | undefined,
  others: readonly (ReplyVerdict | undefined)[],
): CatchAllVerdict {
  const rejects = (v: ReplyVerdict | undefined): boolean =>
    v?.kind === "mailbox_missing" || v?.kind === "mailbox_disabled";
  if (probe?.kind === "accepted") return "catchall";
  if (rejects(probe) || others.some(rejects)) return "not_catchall";
  return "undecided";
}
