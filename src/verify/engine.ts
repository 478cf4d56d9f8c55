// The engine's entry point: syntax → disposable list → DNS → (PTR ∥ SMTP) → classification,
// cheapest first, returning as soon as a stage decides. A same-domain group shares one DNS
// resolution and one SMTP session; concurrent verifyOne calls for one domain join one group.
import { setMaxListeners } from "node:events";
import { AbortedError, linkSignals, raceSignal } from "./abort.ts";
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
import { DomainResolver, type DomainResolution, type NoMailCause } from "./resolve-domain.ts";
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
import type { UnknownReason, VerificationResult } from "./types.ts";

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
}

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
    facts: Progress["facts"],
    c: Pick<
      VerificationResult,
      "status" | "unknownReason" | "isCatchall" | "needsPhysicalVerify" | "evidence" | "retryAfterMs"
    > &
      Partial<Pick<VerificationResult, "didYouMean" | "isFreeProvider">>,
  ): VerificationResult {
    return {
      email: address,
      isRoleBased: isRoleAccount(address.slice(0, address.lastIndexOf("@"))),
      isDisposable: isDisposableDomain(domain),
      domainName: domain,
      ...facts,
      didYouMean: null,
      isFreeProvider: isFreeProviderDomain(domain),
      ...c,
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
      dead: DeadDomainCause | null = null,
    ): Map<string, VerificationResult> => {
      for (const a of source.take())
        results.set(
          a,
          resultOf(a, domain, facts, {
            status,
            unknownReason,
            isCatchall: false,
            needsPhysicalVerify: false,
            evidence,
            // A domain that takes no mail is nobody's mailbox provider, whatever a list says.
            ...(dead === null ? {} : { didYouMean: suggestAddress(a, domain, dead), isFreeProvider: false }),
          }),
        );
      return results;
    };

    if (isDisposableDomain(domain))
      return finishAll("disposable_domain", null, "list: disposable domain", "disposable");

    let resolution: DomainResolution;
    try {
      resolution = await raceSignal(resolver.resolve(domain), signal);
    } catch (error) {
      if (error instanceof AbortedError)
        return finishAll("unknown", abortReason("timeout_dns"), "dns: deadline reached");
      throw error;
    }
    facts.hasMxRecords = resolution.hasMxRecords;
    switch (resolution.kind) {
      case "no_mail":
        return finishAll("invalid", null, NO_MAIL_EVIDENCE[resolution.cause], resolution.cause);
      case "dns_error":
        return finishAll("unknown", "dns_error", `dns: lookup failed (${resolution.code})`);
      case "dns_timeout":
        return finishAll("unknown", "dns_timeout", "dns: lookup timed out");
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
      if (signal.aborted) return finishAll("unknown", abortReason("timeout_dns"), "dns: deadline reached");
      return finishAll("unknown", "private_host_refused", refusalEvidence(refused));
    }
    progress.stage = "smtp";

    const firstAddress = first.value.addresses[0];
    // PTR runs alongside SMTP: it never changes the verdict, so it shouldn't cost a round trip.
    const firstPtr =
      firstAddress === undefined ? Promise.resolve(false) : resolver.hasReverseDns(firstAddress);
    const ptrSeen: { value?: boolean } = {};
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

    facts.hasReverseDns = await reverseDnsOf(report, firstAddress, firstPtr, signal, ptrSeen.value);
    const failure =
      report.failure === null ? null : { ...report.failure, reason: relabelAbort(report.failure.reason) };
    const provider = providerTraits(serverType);
    for (const address of canonicals) {
      const settled = settleAddress({ decided: decided.get(address), failure, catchAll, provider });
      results.set(address, resultOf(address, domain, facts, settled));
    }
    return results;
  }

  function relabelAbort(reason: UnknownReason): UnknownReason {
    return reason === "timeout_smtp" ? abortReason("timeout_smtp") : reason;
  }

  /** PTR of the host the session used; after a deadline, whatever the lookup already knew. */
  async function reverseDnsOf(
    report: SessionReport,
    firstAddress: string | undefined,
    firstPtr: Promise<boolean>,
    signal: AbortSignal,
    firstPtrSeen: boolean | undefined,
  ): Promise<boolean> {
    const used = report.hostAddress;
    const sameHost = used === null || used === firstAddress;
    if (signal.aborted) return sameHost ? (firstPtrSeen ?? false) : false;
    try {
      return await raceSignal(sameHost ? firstPtr : resolver.hasReverseDns(used), signal);
    } catch {
      return false;
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
      return resultOf(canonical, domain, progress.facts, {
        status: "unknown",
        unknownReason: abortReason(step),
        isCatchall: false,
        needsPhysicalVerify: false,
        evidence: `${step === "timeout_dns" ? "dns" : "session"}: deadline reached`,
        retryAfterMs: null,
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
      evidence: `syntax: ${reason}`,
    };
  }

  /** user@[192.0.2.1]: legal SMTP, but probing an arbitrary IP's port 25 is not ours to do. */
  function literalResult(canonical: string, domain: string): VerificationResult {
    return {
      ...resultOf(canonical, domain, newProgress().facts, {
        status: "unknown",
        unknownReason: "address_literal",
        isCatchall: false,
        needsPhysicalVerify: false,
        evidence: "syntax: address literal; not probed by policy",
      }),
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
