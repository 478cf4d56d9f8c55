// The pipeline of one domain after syntax: disposable list → DNS → (PTR ∥ SMTP) → classification,
// cheapest first, returning as soon as a stage decides. A plain function over the engine's ports
// and caches (DomainRun); engine.ts owns their lifetime, batching and deadlines.
//
// Each stage returns what it found; only verifyDomain writes it into the caller's `Progress`
// (what a caller whose deadline runs out is told), right after the stage, so that a deadline
// between two stages sees every fact learnt before it. Results are put together in
// assemble-result.ts.
import type { Clock } from "../lib/clock.ts";
import { AbortedError, raceSignal } from "./abort.ts";
import {
  abortReason,
  domainSkipped,
  sameForAll,
  settledResult,
  type DomainChecks,
  type Progress,
  type SameAnswer,
} from "./assemble-result.ts";
import { checkError, dnsCodeReason, failed, passed, skipped } from "./checks.ts";
import { settleAddress, type CatchAllVerdict } from "./classify.ts";
import {
  decideReply,
  serverEvidenceOf,
  sessionRecipients,
  type KnownDomainAnswers,
  type ServerEvidence,
} from "./evidence.ts";
import { refusalEvidence, vetEach, type RefusedAddress } from "./host-policy.ts";
import { isDisposableDomain } from "./lists/disposable.ts";
import type { RecipientSource } from "./micro-batch.ts";
import type { AddressPolicy, ConnectPort } from "./ports.ts";
import { detectServerType, providerTraits, type ServerType } from "./providers.ts";
import {
  DomainResolver,
  MX_LIMIT_CODE,
  type DomainResolution,
  type MailHost,
  type MailHostsResolution,
  type NoMailCause,
} from "./resolve-domain.ts";
import type { SmtpReply } from "./smtp/reply-reader.ts";
import type { ReplyVerdict } from "./smtp/replies.ts";
import { runSession } from "./smtp/session.ts";
import type { SessionConfig, SessionDeps, SessionReport } from "./smtp/session-types.ts";
import type { TtlCache } from "./ttl-cache.ts";
import type { Check, DependencyFailure, UnknownReason, VerificationResult } from "./types.ts";

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

/** Verifies unique canonical addresses of one syntactically valid domain: the pipeline after syntax. */
export async function verifyDomain(
  run: DomainRun,
  domain: string,
  source: RecipientSource,
  signal: AbortSignal,
  progress: Progress,
): Promise<Map<string, VerificationResult>> {
  const facts = progress.facts;
  const answerAll = (answer: SameAnswer): Map<string, VerificationResult> =>
    sameForAll(run, domain, source.take(), progress, answer);

  if (isDisposableDomain(domain)) {
    progress.checks = domainSkipped("disposable_domain");
    return answerAll({
      status: "disposable_domain",
      unknownReason: null,
      evidence: "list: disposable domain",
      smtp: skipped("disposable_domain"),
      dead: "disposable",
    });
  }

  const resolution = await lookUp(run, domain, signal);
  if (resolution === null) {
    progress.checks = { ...domainSkipped("deadline"), dns: checkError("deadline") };
    return answerAll(dnsDeadline(run));
  }
  facts.hasMxRecords = resolution.hasMxRecords;
  // A failure that could be our resolvers' own: ask them whether they answer at all.
  const resolverDown = mayBeOurResolvers(resolution)
    ? dependencyKindOf(await run.resolver.resolverHealth())
    : null;
  progress.checks = lookupChecks(resolution, resolverDown === null ? null : `resolver_${resolverDown}`);
  if (resolution.kind !== "mail_hosts")
    return answerAll(noMailAnswer(resolution, resolverFailureOf(resolverDown)));

  const reached = await firstHost(run, resolution, signal);
  if (reached.kind === "none") {
    progress.checks.reverse_dns = reached.reverseDns;
    return answerAll(reached.answer);
  }
  progress.stage = "smtp";
  const ptr = startReverseDns(run, reached.first);
  const probed = await probeDomain(run, domain, source, reached, signal);
  const { report } = probed;
  facts.hostName = report.hostName ?? "";
  facts.hostAddress = report.hostAddress ?? "";
  const serverType = serverTypeOf(report, resolution);
  facts.serverType = serverType;
  const judged = judgeReplies(run, domain, probed);

  progress.checks.reverse_dns = await reverseDnsOf(run, report, ptr, signal);
  facts.hasReverseDns = progress.checks.reverse_dns.status === "passed";
  return settleEach(run, domain, progress, probed, judged, serverType);
}

/** The domain's mail hosts, or why it has none; null when the deadline came first. */
async function lookUp(run: DomainRun, domain: string, signal: AbortSignal): Promise<DomainResolution | null> {
  try {
    return await raceSignal(run.resolver.resolve(domain), signal);
  } catch (error) {
    if (error instanceof AbortedError) return null;
    throw error;
  }
}

const dnsDeadline = (run: DomainRun): SameAnswer => ({
  status: "unknown",
  unknownReason: abortReason(run, "timeout_dns"),
  evidence: "dns: deadline reached",
  smtp: skipped("deadline"),
});

/** A timeout, or a refusal to resolve for us: our resolvers may be the ones down. */
const mayBeOurResolvers = (resolution: DomainResolution): boolean =>
  resolution.kind === "dns_timeout" ||
  (resolution.kind === "dns_error" && (resolution.code === "ECONNREFUSED" || resolution.code === "EREFUSED"));

function resolverFailureOf(resolverDown: DependencyFailure["kind"] | null): DependencyFailure | null {
  return resolverDown === null
    ? null
    : {
        dependency: "dns_resolver",
        kind: resolverDown,
        detail:
          resolverDown === "timeout"
            ? "our DNS resolvers did not answer (DNS_SERVERS, after DNS_TRIES tries)"
            : "our DNS resolvers refused the query or could not be reached (DNS_SERVERS)",
      };
}

/** The answer for every address of a domain the lookup found no mail host for. */
function noMailAnswer(
  resolution: Exclude<DomainResolution, { kind: "mail_hosts" }>,
  resolverFailure: DependencyFailure | null,
): SameAnswer {
  const ours = resolverFailure === null ? "" : `; ${resolverFailure.detail}`;
  switch (resolution.kind) {
    case "no_mail": {
      const skip = skipped(resolution.cause === "nxdomain" ? "nxdomain" : "no_mail_host");
      const evidence = NO_MAIL_EVIDENCE[resolution.cause];
      return { status: "invalid", unknownReason: null, evidence, smtp: skip, dead: resolution.cause };
    }
    case "dns_error":
      return {
        status: "unknown",
        unknownReason: "dns_error",
        evidence: `dns: lookup failed (${resolution.code})${ours}`,
        smtp: skipped("dns_error"),
        dependencyFailure: resolverFailure,
      };
    case "dns_timeout":
      return {
        status: "unknown",
        unknownReason: "dns_timeout",
        evidence: `dns: lookup timed out${ours}`,
        smtp: skipped("dns_error"),
        dependencyFailure: resolverFailure,
      };
  }
}

type Reached =
  | { kind: "host"; first: MailHost; hosts: AsyncGenerator<MailHost> }
  /** No host to probe: the reverse_dns check and the answer for every address. */
  | { kind: "none"; reverseDns: Check; answer: SameAnswer };

/**
 * The first mail host worth probing. Hosts are looked up one at a time, as far as the session
 * falls back; only hosts with a public address are probed (unless allowed: test worlds, labs).
 */
async function firstHost(
  run: DomainRun,
  resolution: MailHostsResolution,
  signal: AbortSignal,
): Promise<Reached> {
  const refused: RefusedAddress[] = [];
  const candidates = run.resolver.mailHosts(resolution, signal);
  const hosts = run.allowPrivateHosts ? candidates : vetEach(candidates, run.addressPolicy, refused);
  const first = await hosts.next();
  if (first.done !== true) return { kind: "host", first: first.value, hosts };
  if (signal.aborted) return { kind: "none", reverseDns: skipped("deadline"), answer: dnsDeadline(run) };
  return {
    kind: "none",
    reverseDns: skipped("private_host_refused"),
    answer: {
      status: "unknown",
      unknownReason: "private_host_refused",
      evidence: refusalEvidence(refused),
      smtp: skipped("private_host_refused"),
    },
  };
}

/** The PTR of the first host, looked up while the session runs: `seen` once it is in. */
interface FirstPtr {
  address: string | undefined;
  lookup: Promise<Check>;
  seen?: Check;
}

// PTR runs alongside SMTP: it never changes the verdict, so it shouldn't cost a round trip.
function startReverseDns(run: DomainRun, first: MailHost): FirstPtr {
  const address = first.addresses[0];
  const lookup: Promise<Check> =
    address === undefined ? Promise.resolve(skipped("no_address")) : run.resolver.reverseDns(address);
  const ptr: FirstPtr = { address, lookup };
  lookup.then((v) => (ptr.seen = v)).catch(() => undefined);
  return ptr;
}

/** What the session asked and heard: the domain's addresses, the postmaster control and the catch-all probe. */
interface Probed {
  report: SessionReport;
  canonicals: readonly string[];
  control: string;
  probe: string | null;
  known: DomainFacts | undefined;
}

async function probeDomain(
  run: DomainRun,
  domain: string,
  source: RecipientSource,
  reached: Extract<Reached, { kind: "host" }>,
  signal: AbortSignal,
): Promise<Probed> {
  const known = run.domainFacts.get(domain);
  const probe = known === undefined ? probeAddress(domain, run.random) : null;
  const control = `postmaster@${domain}`;
  let canonicals: readonly string[] = [];
  const recipients = (): string[] => {
    canonicals = source.take();
    return sessionRecipients(canonicals, control, probe, known?.control != null);
  };
  const report = await runSession(
    { hosts: prepend(reached.first, reached.hosts), recipients, signal },
    run.sessionConfig,
    run.session,
  );
  run.track(report.done);
  return { report, canonicals, control, probe, known };
}

function serverTypeOf(report: SessionReport, resolution: MailHostsResolution): ServerType {
  return detectServerType(
    [
      ...(report.hostName === null ? [] : [report.hostName]),
      ...[...resolution.hosts, ...resolution.fallbacks].map((h) => h.name),
    ],
    [report.greeting, report.ehlo],
    [...report.replies.values()].map((r) => r.text),
  );
}

type DecidedAnswer = { verdict: ReplyVerdict; evidence: string; reply: SmtpReply };

/** Each reply's verdict in the light of the server's other answers, and whether the domain is catch-all. */
function judgeReplies(
  run: DomainRun,
  domain: string,
  { report, canonicals, control, probe, known }: Probed,
): { decided: Map<string, DecidedAnswer>; catchAll: CatchAllVerdict } {
  const host = report.hostName;
  const server: ServerEvidence = serverEvidenceOf({
    replies: report.replies,
    control,
    probe,
    known,
    hostAcceptedRecently: host !== null && run.hostAccepts.get(host) === true,
  });
  if (server.acceptedOrdinary === "session" && host !== null) run.hostAccepts.set(host, true);
  const decided = new Map<string, DecidedAnswer>();
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
  return { decided, catchAll };
}

/** Each address's answer from its reply, or from the session's failure (and our proxy's health). */
async function settleEach(
  run: DomainRun,
  domain: string,
  progress: Progress,
  { report, canonicals }: Probed,
  { decided, catchAll }: { decided: Map<string, DecidedAnswer>; catchAll: CatchAllVerdict },
  serverType: ServerType,
): Promise<Map<string, VerificationResult>> {
  const failure =
    report.failure === null ? null : { ...report.failure, reason: relabelAbort(run, report.failure.reason) };
  const provider = providerTraits(serverType);
  const proxyFailure = await proxyFailureOf(run.session.connect, report, failure?.reason);
  const results = new Map<string, VerificationResult>();
  for (const address of canonicals) {
    const own = decided.get(address);
    const settled = settleAddress({ decided: own, failure, catchAll, provider });
    const answer = { settled, verdictKind: own?.verdict.kind };
    results.set(address, settledResult(run, address, domain, progress, answer, proxyFailure, report.paced));
  }
  return results;
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
  ptr: FirstPtr,
  signal: AbortSignal,
): Promise<Check> {
  const used = report.hostAddress;
  const sameHost = used === null || used === ptr.address;
  if (signal.aborted) return (sameHost ? ptr.seen : undefined) ?? skipped("deadline");
  try {
    return await raceSignal(sameHost ? ptr.lookup : run.resolver.reverseDns(used), signal);
  } catch (error) {
    if (error instanceof AbortedError) return skipped("deadline");
    return checkError("lookup_failed");
  }
}

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
