// The engine's entry point: syntax, address literals and sandbox addresses here, then the
// domain pipeline (verify-domain.ts). A same-domain group shares one DNS resolution and one SMTP
// session; concurrent verifyOne calls for one domain join one group (micro-batch.ts).
import { setMaxListeners } from "node:events";
import { systemClock } from "../lib/clock.ts";
import { sleep } from "../lib/sleep.ts";
import { AbortedError, linkSignals, raceSignal } from "./abort.ts";
import { baseResult } from "./base-result.ts";
import { checkError, failed, skipped } from "./checks.ts";
import { createNodeDns } from "./dns.ts";
import { createLocalHostGate } from "./host-limit.ts";
import { groupByDomain } from "./group-by-domain.ts";
import { DomainBatch } from "./micro-batch.ts";
import { defaultEngineOptions, type EngineOptions } from "./options.ts";
import { noAddressPolicy, type EnginePorts } from "./ports.ts";
import { DomainResolver, type DomainResolution } from "./resolve-domain.ts";
import { isSandboxDomain, SANDBOX_HOST, sandboxResult } from "./sandbox.ts";
import { directConnect } from "./smtp/connect.ts";
import { IdleConnections } from "./smtp/idle-connections.ts";
import { SERVER_SETTLE_MS } from "./smtp/session.ts";
import { egressIdentities } from "./smtp/egress.ts";
import { createSocksConnect } from "./smtp/socks-connect.ts";
import { checkDomainSyntax, checkSyntax, extractDomainPart, type SyntaxResult } from "./syntax.ts";
import { TtlCache } from "./ttl-cache.ts";
import type { VerificationResult } from "./types.ts";
import {
  abortReason,
  domainSkipped,
  newProgress,
  resultOf,
  verifyDomain,
  type DomainFacts,
  type DomainRun,
  type Progress,
} from "./verify-domain.ts";

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
  const egress = ports.egress ?? egressIdentities(opts.smtpEgress, opts.smtpConnectTimeoutMs, connect);
  // No host ever sees more than maxSessionsPerHost sessions per identity from an engine without
  // a gate of its own.
  const hostGate =
    ports.hostGate ??
    createLocalHostGate(
      opts.maxSessionsPerHost,
      egress.map((e) => e.id),
    );
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

  const run: DomainRun = {
    clock,
    random,
    resolver,
    addressPolicy,
    allowPrivateHosts: opts.smtpAllowPrivateHosts,
    sessionConfig,
    session: {
      connect,
      egress,
      hostGate,
      idle,
      ...(ports.pace === undefined ? {} : { pace: { port: ports.pace, clock } }),
    },
    domainFacts,
    hostAccepts,
    closing: closing.signal,
    track(done) {
      const p = done.catch(() => undefined);
      winding.add(p);
      void p.then(() => winding.delete(p));
    },
  };

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
      const probed = new Set<string>();
      for (const p of parsed)
        if (p.ok && !p.addressLiteral && !isSandboxDomain(p.domain)) probed.add(p.canonical);
      const byDomain = groupByDomain(
        probed,
        (canonical) => canonical.slice(canonical.lastIndexOf("@") + 1),
        groupDomain.ok ? [groupDomain.domain] : [],
      );
      const answers = new Map<string, VerificationResult>();
      for (const [d, canonicals] of byDomain) {
        if (canonicals.length === 0) continue;
        const source = { take: () => canonicals };
        for (const [address, result] of await verifyDomain(run, d, source, linked.signal, newProgress()))
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
        run: (source, signal) => verifyDomain(run, domain, source, signal, progress),
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
      return resultOf(run, canonical, domain, cut, {
        status: "unknown",
        unknownReason: abortReason(run, step),
        isCatchall: false,
        needsPhysicalVerify: false,
        evidence: `${step === "timeout_dns" ? "dns" : "session"}: deadline reached`,
        retryAfterMs: null,
        smtp: step === "timeout_dns" ? skipped("deadline") : checkError(abortReason(run, step)),
      });
    } finally {
      linked.dispose();
    }
  }

  function syntaxFailure(input: string, reason: string): VerificationResult {
    return {
      ...baseResult(input.trim(), extractDomainPart(input), clock.now(), {
        syntax: failed(reason),
        dns: skipped("invalid_syntax"),
        mx: skipped("invalid_syntax"),
        reverse_dns: skipped("invalid_syntax"),
        smtp: skipped("invalid_syntax"),
      }),
      status: "invalid_syntax",
      evidence: `syntax: ${reason}`,
    };
  }

  /** user@[192.0.2.1]: legal SMTP, but probing an arbitrary IP's port 25 is not ours to do. */
  function literalResult(canonical: string, domain: string): VerificationResult {
    return {
      ...resultOf(
        run,
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
