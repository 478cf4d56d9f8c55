// The engine's entry point: syntax → disposable list → DNS → (PTR ∥ SMTP) → classification,
// cheapest first, returning as soon as a stage decides. A same-domain group shares one DNS
// resolution and one SMTP session; concurrent verifyOne calls for one domain join one group.
import { setMaxListeners } from "node:events";
import { AbortedError, linkSignals, raceSignal } from "./abort.ts";
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
import { createNodeDns } from "./dns.ts";
import { decideReply, serverEvidenceOf, sessionRecipients, type KnownDomainAnswers } from "./evidence.ts";
import { createLocalHostGate } from "./host-limit.ts";
import { refusalEvidence, vetEach, type RefusedAddress } from "./host-policy.ts";
import { DomainBatch, type RecipientSource } from "./micro-batch.ts";
import { isDisposableDomain } from "./lists/disposable.ts";
import { isRoleAccount } from "./lists/role-accounts.ts";
import { defaultEngineOptions, type EngineOptions } from "./options.ts";
import { noAddressPolicy, systemClock, type EnginePorts } from "./ports.ts";
import { detectServerType, isFreeProviderDomain, providerTraits, type ServerType } from "./providers.ts";
import { DomainResolver, MX_LIMIT_CODE, type DomainResolution, type NoMailCause } from "./resolve-domain.ts";
import { directConnect } from "./smtp/connect.ts";
import type { SmtpReply } from "./smtp/reply-reader.ts";
import { type ReplyVerdict } from "./smtp/replies.ts";
import { isSandboxDomain, SANDBOX_HOST, sandboxResult } from "./sandbox.ts";
import { IdleConnections } from "./smtp/idle-connections.ts";
import { runSession, SERVER_SETTLE_MS, type SessionReport } from "./smtp/session.ts";
import { sleep } from "../lib/sleep.ts";
import { createSocksConnect } from "./smtp/socks-connect.ts";
import { suggestAddress, type DeadDomainCause } from "./suggest.ts";
import { checkDomainSyntax, checkSyntax, extractDomainPart, type SyntaxResult } from "./syntax.ts";
import { TtlCache } from "./ttl-cache.ts";
import type { DependencyFailure, UnknownReason, VerificationResult } from "./types.ts";

export interface VerifyCallOptions {
  /** Caller's deadline: on abort the engine returns a partial `unknown` result (timeout_dns / timeout_smtp). */
  signal?: AbortSignal;
}

export interface Engine {
  verifyOne(address: string, options?: VerifyCallOptions): Promise<VerificationResult>;
  /**
   * Verifies addresses of one domain with one DNS resolution and (when the server allows) one
   * SMTP session. One result per input, in input order, duplicates included. Addresses that
   * fail syntax are answered without SMTP; addresses of another domain are verified in their
   * own group.
   */
  verifyGroup(
    domain: string,
    addresses: readonly string[],
    options?: VerifyCallOptions,
  ): Promise<VerificationResult[]>;
  checkSyntax(address: string): SyntaxResult;
  /** Domain facts (cached): lets workers learn the MX host to schedule per-host politeness. */
  resolveDomain(domain: string): Promise<DomainResolution>;
  /**
   * Idle connections this engine keeps open to a server IP address, ready for the next domain
   * served there: the batch scheduler treats such an address as having a free slot.
   */
  idleConnections(address: string): number;
  /** Cancels running verifications (reason `cancelled`) and waits for open sessions to QUIT. */
  close(): Promise<void>;
}

const PROBE_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const PROBE_LENGTH = 20;

/** What a session taught about a domain, reused for later sessions within the catch-all TTL. */
interface DomainFacts extends KnownDomainAnswers {
  catchAll: Exclude<CatchAllVerdict, "undecided">;
}

/** The checks a domain's addresses share (syntax passed, and smtp is per address). */
type DomainChecks = Pick<ResultChecks, "dns" | "mx" | "reverse_dns">;

/** How far a domain's verification got: what a caller whose deadline ran out is told. */
interface Progress {
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
const domainSkipped = (reason: string): DomainChecks => ({
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

/** Builds an engine. Missing options take `defaultEngineOptions`; missing ports their defaults. */
export function createEngine(options: Partial<EngineOptions> = {}, ports: Partial<EnginePorts> = {}): Engine {
  const opts: EngineOptions = { ...defaultEngineOptions, ...options };
  const clock = ports.clock ?? systemClock;
  const random = ports.random ?? Math.random;
  const nowMs = (): number => clock.now().getTime();
  const dns =
    ports.dns ??
    createNodeDns({ servers: opts.dnsServers, timeoutMs: opts.dnsTimeoutMs, tries: opts.dnsTries });
  const connect =
    ports.connect ??
    (opts.smtpProxy !== null ? createSocksConnect(opts.smtpProxy, opts.smtpConnectTimeoutMs) : directConnect);
  // No host ever sees more than maxSessionsPerHost sessions from an engine without a gate of its own.
  const hostGate = ports.hostGate ?? createLocalHostGate(opts.maxSessionsPerHost);
  // The outbound guard: without a policy plugged in, no mail host is known to be public (fail closed).
  const addressPolicy = ports.addressPolicy ?? noAddressPolicy;
  const resolver = new DomainResolver({ dns, nowMs, random, cacheTtlMs: opts.dnsCacheTtlMs });
  const domainFacts = new TtlCache<string, DomainFacts>(opts.catchallCacheTtlMs, nowMs);
  // Hosts that accepted an ordinary recipient from us: their unrecognised rejections are about the recipient.
  const hostAccepts = new TtlCache<string, true>(opts.hostEvidenceTtlMs, nowMs);
  const batches = new Map<string, { batch: DomainBatch<VerificationResult>; progress: Progress }>();
  const closing = new AbortController();
  // Every running verification listens on it; hundreds at once are normal for a worker.
  setMaxListeners(0, closing.signal);
  const winding = new Set<Promise<void>>();
  // Shared with other engines of the process when given (realtime and batch reach the same IPs).
  const idle = ports.idleConnections ?? createIdleConnections(opts);

  const sessionConfig = {
    port: opts.smtpPort,
    heloName: opts.smtpHeloName,
    mailFrom: opts.smtpMailFrom,
    connectTimeoutMs: opts.smtpConnectTimeoutMs,
    greetingTimeoutMs: opts.smtpGreetingTimeoutMs,
    commandTimeoutMs: opts.smtpCommandTimeoutMs,
    maxRcpt: opts.smtpMaxRcpt,
    errorBudget: opts.smtpErrorBudget,
    startTls: opts.smtpStartTls,
  };

  const probeAddress = (domain: string): string => {
    let local = "";
    for (let i = 0; i < PROBE_LENGTH; i++)
      local += PROBE_ALPHABET[Math.floor(random() * PROBE_ALPHABET.length)] ?? "x";
    return `${local}@${domain}`;
  };

  // The deadline ran out (caller) or the engine is closing: name the step, or say cancelled.
  const abortReason = (step: "timeout_dns" | "timeout_smtp"): UnknownReason =>
    closing.signal.aborted ? "cancelled" : step;

  function resultOf(
    address: string,
    domain: string,
    progress: Progress,
    c: Pick<
      VerificationResult,
      "status" | "unknownReason" | "isCatchall" | "needsPhysicalVerify" | "evidence" | "retryAfterMs"
    > &
      Partial<Pick<VerificationResult, "didYouMean" | "isFreeProvider" | "dependencyFailure">> & {
        smtp: Check;
      },
  ): VerificationResult {
    const { smtp, ...rest } = c;
    return {
      email: address,
      isRoleBased: isRoleAccount(address.slice(0, address.lastIndexOf("@"))),
      isDisposable: isDisposableDomain(domain),
      domainName: domain,
      ...progress.facts,
      didYouMean: null,
      isFreeProvider: isFreeProviderDomain(domain),
      ...rest,
      checks: { syntax: passed(), ...progress.checks, smtp },
      validatedAt: clock.now(),
    };
  }

  /** Verifies unique canonical addresses of one syntactically valid domain. */
  async function verifyDomain(
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
          resultOf(a, domain, progress, {
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
      resolution = await raceSignal(resolver.resolve(domain), signal);
    } catch (error) {
      if (error instanceof AbortedError) {
        progress.checks = { ...domainSkipped("deadline"), dns: checkError("deadline") };
        return finishAll("unknown", abortReason("timeout_dns"), "dns: deadline reached", skipped("deadline"));
      }
      throw error;
    }
    facts.hasMxRecords = resolution.hasMxRecords;
    // A failure that could be our resolvers' own: ask them whether they answer at all.
    const resolverDown =
      resolution.kind === "dns_timeout" ||
      (resolution.kind === "dns_error" &&
        (resolution.code === "ECONNREFUSED" || resolution.code === "EREFUSED"))
        ? dependencyKindOf(await resolver.resolverHealth())
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
    const candidates = resolver.mailHosts(resolution, signal);
    const hosts = opts.smtpAllowPrivateHosts ? candidates : vetEach(candidates, addressPolicy, refused);
    const first = await hosts.next();
    if (first.done === true) {
      if (signal.aborted) {
        progress.checks.reverse_dns = skipped("deadline");
        return finishAll("unknown", abortReason("timeout_dns"), "dns: deadline reached", skipped("deadline"));
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
      firstAddress === undefined ? Promise.resolve(skipped("no_address")) : resolver.reverseDns(firstAddress);
    const ptrSeen: { value?: Check } = {};
    firstPtr.then((v) => (ptrSeen.value = v)).catch(() => undefined);

    const known = domainFacts.get(domain);
    const probe = known === undefined ? probeAddress(domain) : null;
    const control = `postmaster@${domain}`;
    let canonicals: readonly string[] = [];
    const recipients = (): string[] => {
      canonicals = source.take();
      return sessionRecipients(canonicals, control, probe, known?.control != null);
    };
    const report = await runSession(
      { hosts: prepend(first.value, hosts), recipients, signal },
      sessionConfig,
      { connect, hostGate, idle },
    );
    track(report.done);

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
      hostAcceptedRecently: host !== null && hostAccepts.get(host) === true,
    });
    if (server.acceptedOrdinary === "session" && host !== null) hostAccepts.set(host, true);
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
      domainFacts.set(domain, { catchAll, control: server.control, probeRejection: server.probeRejection });
    }

    progress.checks.reverse_dns = await reverseDnsOf(report, firstAddress, firstPtr, signal, ptrSeen.value);
    facts.hasReverseDns = progress.checks.reverse_dns.status === "passed";
    const failure =
      report.failure === null ? null : { ...report.failure, reason: relabelAbort(report.failure.reason) };
    const provider = providerTraits(serverType);
    const proxyFailure = await proxyFailureOf(report, failure?.reason);
    for (const address of canonicals) {
      const settled = settleAddress({ decided: decided.get(address), failure, catchAll, provider });
      const verdict = decided.get(address)?.verdict.kind;
      const smtp = smtpCheckOf(settled.status, settled.unknownReason, verdict);
      const dependencyFailure = settled.status === "unknown" && verdict === undefined ? proxyFailure : null;
      results.set(
        address,
        resultOf(address, domain, progress, {
          ...settled,
          smtp: dependencyFailure === null ? smtp : checkError(`proxy_${dependencyFailure.kind}`),
          ...(dependencyFailure === null ? {} : { dependencyFailure }),
        }),
      );
    }
    return results;
  }

  /**
   * When no mail host could be reached through our SOCKS proxy, whether the proxy itself is the
   * cause: asked of the proxy's own greeting, so a mail host that is merely down stays a result.
   */
  async function proxyFailureOf(
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

  function relabelAbort(reason: UnknownReason): UnknownReason {
    return reason === "timeout_smtp" ? abortReason("timeout_smtp") : reason;
  }

  /** PTR of the host the session used; after a deadline, whatever the lookup already knew. */
  async function reverseDnsOf(
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
      return await raceSignal(sameHost ? firstPtr : resolver.reverseDns(used), signal);
    } catch (error) {
      if (error instanceof AbortedError) return skipped("deadline");
      return checkError("lookup_failed");
    }
  }

  function track(done: Promise<void>): void {
    const p = done.catch(() => undefined);
    winding.add(p);
    void p.then(() => winding.delete(p));
  }

  const newProgress = (): Progress => ({
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

  async function verifyGroup(
    domain: string,
    addresses: readonly string[],
    callOptions: VerifyCallOptions = {},
  ): Promise<VerificationResult[]> {
    const linked = linkSignals(callOptions.signal, closing.signal);
    try {
      const groupDomain = checkDomainSyntax(domain);
      const parsed = addresses.map((a) => checkSyntax(a));
      // The group's own domain first, then any stray domains, each as its own group.
      const byDomain = new Map<string, string[]>();
      if (groupDomain.ok) byDomain.set(groupDomain.domain, []);
      for (const p of parsed) {
        if (!p.ok || p.addressLiteral || isSandboxDomain(p.domain)) continue;
        const list = byDomain.get(p.domain) ?? [];
        if (!list.includes(p.canonical)) list.push(p.canonical);
        byDomain.set(p.domain, list);
      }
      const answers = new Map<string, VerificationResult>();
      for (const [d, canonicals] of byDomain) {
        if (canonicals.length === 0) continue;
        const source = { take: () => canonicals };
        for (const [address, result] of await verifyDomain(d, source, linked.signal, newProgress()))
          answers.set(address, result);
      }
      return parsed.map((p, i) => {
        if (!p.ok) return syntaxFailure(addresses[i] ?? "", p.reason);
        if (p.addressLiteral) return literalResult(p.canonical, p.domain);
        if (isSandboxDomain(p.domain)) return sandboxResult(p.canonical, clock.now());
        const answer = answers.get(p.canonical);
        if (answer === undefined) throw new Error(`no result for ${p.canonical}`);
        return { ...answer };
      });
    } finally {
      linked.dispose();
    }
  }

  async function verifyOneBatched(
    canonical: string,
    domain: string,
    callOptions: VerifyCallOptions,
  ): Promise<VerificationResult> {
    const current = batches.get(domain);
    if (current === undefined || !current.batch.open) {
      const progress = newProgress();
      const created: DomainBatch<VerificationResult> = new DomainBatch({
        windowMs: opts.microBatchWindowMs,
        closing: closing.signal,
        run: (source, signal) => verifyDomain(domain, source, signal, progress),
        onClosed: () => {
          if (batches.get(domain)?.batch === created) batches.delete(domain);
        },
      });
      batches.set(domain, { batch: created, progress });
    }
    const { batch, progress } = batches.get(domain)!;
    batch.join(canonical);
    const linked = linkSignals(callOptions.signal, closing.signal);
    try {
      const results = await raceSignal(batch.results, linked.signal);
      const result = results.get(canonical);
      if (result === undefined) throw new Error(`no result for ${canonical}`);
      return { ...result };
    } catch (error) {
      if (!(error instanceof AbortedError)) throw error;
      batch.leave(canonical);
      // Alone in its batch, the caller gets the session's own partial result (with what it learnt).
      if (batch.abandoned) {
        const own = (await batch.results.catch(() => null))?.get(canonical);
        if (own !== undefined) return { ...own };
      }
      const step = progress.stage === "smtp" ? "timeout_smtp" : "timeout_dns";
      // The checks as far as they got; the one running when the deadline came is an error.
      const cut: Progress = {
        ...progress,
        checks:
          step === "timeout_dns"
            ? { ...domainSkipped("deadline"), dns: checkError("deadline") }
            : {
                ...progress.checks,
                reverse_dns:
                  progress.checks.reverse_dns.reason === "not_reached"
                    ? skipped("deadline")
                    : progress.checks.reverse_dns,
              },
      };
      return resultOf(canonical, domain, cut, {
        status: "unknown",
        unknownReason: abortReason(step),
        isCatchall: false,
        needsPhysicalVerify: false,
        evidence: `${step === "timeout_dns" ? "dns" : "session"}: deadline reached`,
        retryAfterMs: null,
        smtp: step === "timeout_dns" ? skipped("deadline") : checkError(abortReason(step)),
      });
    } finally {
      linked.dispose();
    }
  }

  function syntaxFailure(input: string, reason: string): VerificationResult {
    return {
      email: input.trim(),
      status: "invalid_syntax",
      isRoleBased: false,
      isDisposable: false,
      hasMxRecords: false,
      hasReverseDns: false,
      domainName: extractDomainPart(input),
      hostName: "",
      serverType: "unknown",
      isCatchall: false,
      validatedAt: clock.now(),
      unknownReason: null,
      needsPhysicalVerify: false,
      didYouMean: null,
      isFreeProvider: false,
      checks: {
        syntax: failed(reason),
        dns: skipped("invalid_syntax"),
        mx: skipped("invalid_syntax"),
        reverse_dns: skipped("invalid_syntax"),
        smtp: skipped("invalid_syntax"),
      },
      evidence: `syntax: ${reason}`,
    };
  }

  /** user@[192.0.2.1]: legal SMTP, but probing an arbitrary IP's port 25 is not ours to do. */
  function literalResult(canonical: string, domain: string): VerificationResult {
    return {
      ...resultOf(
        canonical,
        domain,
        { ...newProgress(), checks: domainSkipped("address_literal") },
        {
          status: "unknown",
          unknownReason: "address_literal",
          isCatchall: false,
          needsPhysicalVerify: false,
          evidence: "syntax: address literal; not probed by policy",
          smtp: skipped("address_literal"),
        },
      ),
      isDisposable: false,
    };
  }

  return {
    async verifyOne(address, callOptions = {}) {
      const parsed = checkSyntax(address);
      if (!parsed.ok) return syntaxFailure(address, parsed.reason);
      if (parsed.addressLiteral) return literalResult(parsed.canonical, parsed.domain);
      // Sandbox addresses (sandbox.ts): fixed answers, before any DNS or SMTP.
      if (isSandboxDomain(parsed.domain)) return sandboxResult(parsed.canonical, clock.now());
      return verifyOneBatched(parsed.canonical, parsed.domain, callOptions);
    },
    verifyGroup,
    checkSyntax,
    resolveDomain: (domain) => {
      const d = checkDomainSyntax(domain);
      // An address literal has no DNS: nothing to resolve, nothing to probe.
      if (d.ok && d.addressLiteral)
        return Promise.resolve({ kind: "no_mail", hasMxRecords: false, cause: "no_records" });
      if (d.ok && isSandboxDomain(d.domain))
        return Promise.resolve({
          kind: "mail_hosts",
          hasMxRecords: true,
          hosts: [{ name: SANDBOX_HOST, preference: 10, addresses: [] }],
          fallbacks: [],
        });
      return resolver.resolve(d.ok ? d.domain : domain.trim().toLowerCase());
    },
    idleConnections: (address) => idle.count(address),
    async close() {
      closing.abort();
      await Promise.all([...winding]);
      await idle.closeAll();
      resolver.clear();
      domainFacts.clear();
      hostAccepts.clear();
    },
  };
}

/**
 * The idle connections of an engine, or of several engines of one process (ports.idleConnections):
 * kept for `smtpIdleReuseMs`, then closed with QUIT and the server's settle time before the slot
 * is freed.
 */
export function createIdleConnections(
  opts: Pick<EngineOptions, "smtpIdleReuseMs" | "smtpCommandTimeoutMs">,
): IdleConnections {
  return new IdleConnections({
    idleMs: opts.smtpIdleReuseMs,
    retire: (conn) => conn.quit(opts.smtpCommandTimeoutMs).then(() => sleep(SERVER_SETTLE_MS)),
  });
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
