// The engine's entry point: syntax, address literals and sandbox addresses here, then the
// domain pipeline (verify-domain.ts). A same-domain group shares one DNS resolution and one SMTP
// session; concurrent verifyOne calls for one domain join one group (micro-batch.ts).
import { setMaxListeners } from "node:events";
import { systemClock, type Clock } from "../lib/clock.ts";
import { sleep } from "../lib/sleep.ts";
import { AbortedError, linkSignals, raceSignal } from "./abort.ts";
import { createNodeDns } from "./dns.ts";
import { createLocalHostGate } from "./host-limit.ts";
import { groupByDomain } from "./group-by-domain.ts";
import { DomainBatch } from "./micro-batch.ts";
import { defaultEngineOptions, type EngineOptions } from "./options.ts";
import {
  noAddressPolicy,
  type AddressPolicy,
  type ConnectPort,
  type DnsPort,
  type EgressIdentity,
  type HostGate,
  type ProviderPace,
} from "./ports.ts";
import { DomainResolver, type DomainResolution } from "./resolve-domain.ts";
import { isSandboxDomain, SANDBOX_HOST, sandboxResult } from "./sandbox.ts";
import { directConnect } from "./smtp/connect.ts";
import { IdleConnections } from "./smtp/idle-connections.ts";
import { SERVER_SETTLE_MS } from "./smtp/session-types.ts";
import { egressIdentities } from "./smtp/egress.ts";
import { createSocksConnect } from "./smtp/socks-connect.ts";
import { checkDomainSyntax, checkSyntax, extractDomainPart, type SyntaxResult } from "./syntax.ts";
import { TtlCache } from "./ttl-cache.ts";
import type { VerificationResult } from "./types.ts";
import {
  deadlineResult,
  literalResult,
  newProgress,
  syntaxFailureResult,
  type Progress,
} from "./assemble-result.ts";
import { verifyDomain, type DomainFacts, type DomainRun } from "./verify-domain.ts";

/**
 * The ports an engine is built with (each port type is in ports.ts), and the idle connections it
 * shares with the other engines of the process.
 */
export interface EnginePorts {
  dns: DnsPort;
  /** The single identity's port when `egress` is absent (SMTP_PROXY or a direct connection). */
  connect: ConnectPort;
  /** Egress identities (SMTP_EGRESS); absent: built from the smtpEgress option, else `connect` alone. */
  egress: readonly EgressIdentity[];
  /** The service's clock (lib/clock.ts): one notion of "now" for tests to move. */
  clock: Clock;
  /** Uniform in [0, 1), like Math.random. */
  random: () => number;
  hostGate: HostGate;
  addressPolicy: AddressPolicy;
  /** Idle connections to share between the engines of one process (realtime and batch). */
  idleConnections: IdleConnections;
  /** Providers' paces (docs/pacing.md); absent: no provider is paced. */
  pace?: ProviderPace;
}

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
  const given = portsOrDefaults(opts, ports);
  const closing = new AbortController();
  // Every running verification listens on it; hundreds at once are normal for a worker.
  setMaxListeners(0, closing.signal);
  const winding = new Set<Promise<void>>();
  const run = domainRunOf(opts, given, ports.pace, closing.signal, winding);
  const batches: Batches = new Map();

  return {
    async verifyOne(address, callOptions = {}) {
      const parsed = checkSyntax(address);
      if (!parsed.ok) return syntaxFailure(run, address, parsed.reason);
      if (parsed.addressLiteral) return literalResult(run, parsed.canonical, parsed.domain);
      // Sandbox addresses (sandbox.ts): fixed answers, before any DNS or SMTP.
      if (isSandboxDomain(parsed.domain)) return sandboxResult(parsed.canonical, run.clock.now());
      return verifyOneBatched(run, { batches, windowMs: opts.microBatchWindowMs }, parsed, callOptions);
    },
    verifyGroup: (domain, addresses, callOptions = {}) => verifyGroup(run, domain, addresses, callOptions),
    checkSyntax,
    resolveDomain: (domain) => resolveDomain(run.resolver, domain),
    idleConnections: (address) => given.idleConnections.count(address),
    async close() {
      closing.abort();
      await Promise.all([...winding]);
      await given.idleConnections.closeAll();
      run.resolver.clear();
      run.domainFacts.clear();
      run.hostAccepts.clear();
    },
  };
}

/** The ports an engine was given, and the default of each one it was not. */
function portsOrDefaults(opts: EngineOptions, ports: Partial<EnginePorts>): Omit<EnginePorts, "pace"> {
  const connect =
    ports.connect ??
    (opts.smtpProxy !== null ? createSocksConnect(opts.smtpProxy, opts.smtpConnectTimeoutMs) : directConnect);
  const egress = ports.egress ?? egressIdentities(opts.smtpEgress, opts.smtpConnectTimeoutMs, connect);
  return {
    clock: ports.clock ?? systemClock,
    random: ports.random ?? Math.random,
    dns:
      ports.dns ??
      createNodeDns({ servers: opts.dnsServers, timeoutMs: opts.dnsTimeoutMs, tries: opts.dnsTries }),
    connect,
    egress,
    // No host ever sees more than maxSessionsPerHost sessions per identity from an engine without
    // a gate of its own.
    hostGate:
      ports.hostGate ??
      createLocalHostGate(
        opts.maxSessionsPerHost,
        egress.map((e) => e.id),
      ),
    // The outbound guard: without a policy plugged in, no mail host is known to be public (fail closed).
    addressPolicy: ports.addressPolicy ?? noAddressPolicy,
    // Shared with other engines of the process when given (realtime and batch reach the same IPs).
    idleConnections: ports.idleConnections ?? createIdleConnections(opts),
  };
}

/** What every domain verification of this engine works with: ports, settings, caches, closing. */
function domainRunOf(
  opts: EngineOptions,
  ports: Omit<EnginePorts, "pace">,
  pace: EnginePorts["pace"],
  closing: AbortSignal,
  winding: Set<Promise<void>>,
): DomainRun {
  const { clock, random } = ports;
  const nowMs = (): number => clock.now().getTime();
  return {
    clock,
    random,
    resolver: new DomainResolver({ dns: ports.dns, nowMs, random, cacheTtlMs: opts.dnsCacheTtlMs }),
    addressPolicy: ports.addressPolicy,
    allowPrivateHosts: opts.smtpAllowPrivateHosts,
    sessionConfig: {
      port: opts.smtpPort,
      heloName: opts.smtpHeloName,
      mailFrom: opts.smtpMailFrom,
      connectTimeoutMs: opts.smtpConnectTimeoutMs,
      greetingTimeoutMs: opts.smtpGreetingTimeoutMs,
      commandTimeoutMs: opts.smtpCommandTimeoutMs,
      maxRcpt: opts.smtpMaxRcpt,
      errorBudget: opts.smtpErrorBudget,
      startTls: opts.smtpStartTls,
    },
    session: {
      connect: ports.connect,
      egress: ports.egress,
      hostGate: ports.hostGate,
      idle: ports.idleConnections,
      ...(pace === undefined ? {} : { pace: { port: pace, clock } }),
    },
    domainFacts: new TtlCache<string, DomainFacts>(opts.catchallCacheTtlMs, nowMs),
    // Hosts that accepted an ordinary recipient from us: their unrecognised rejections are about the recipient.
    hostAccepts: new TtlCache<string, true>(opts.hostEvidenceTtlMs, nowMs),
    closing,
    track(done) {
      const p = done.catch(() => undefined);
      winding.add(p);
      void p.then(() => winding.delete(p));
    },
  };
}

const syntaxFailure = (run: DomainRun, input: string, reason: string): VerificationResult =>
  syntaxFailureResult(input, extractDomainPart(input), reason, run.clock.now());

async function verifyGroup(
  run: DomainRun,
  domain: string,
  addresses: readonly string[],
  callOptions: VerifyCallOptions,
): Promise<VerificationResult[]> {
  const linked = linkSignals(callOptions.signal, run.closing);
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
      if (!p.ok) return syntaxFailure(run, addresses[i] ?? "", p.reason);
      if (p.addressLiteral) return literalResult(run, p.canonical, p.domain);
      if (isSandboxDomain(p.domain)) return sandboxResult(p.canonical, run.clock.now());
      const answer = answers.get(p.canonical);
      if (answer === undefined) throw new Error(`no result for ${p.canonical}`);
      return { ...answer };
    });
  } finally {
    linked.dispose();
  }
}

/** The open micro-batch of each domain, and how far its verification got. */
type Batches = Map<string, { batch: DomainBatch<VerificationResult>; progress: Progress }>;

async function verifyOneBatched(
  run: DomainRun,
  { batches, windowMs }: { batches: Batches; windowMs: number },
  { canonical, domain }: { canonical: string; domain: string },
  callOptions: VerifyCallOptions,
): Promise<VerificationResult> {
  const current = batches.get(domain);
  if (current === undefined || !current.batch.open) {
    const progress = newProgress();
    const created: DomainBatch<VerificationResult> = new DomainBatch({
      windowMs,
      closing: run.closing,
      run: (source, signal) => verifyDomain(run, domain, source, signal, progress),
      onClosed: () => {
        if (batches.get(domain)?.batch === created) batches.delete(domain);
      },
    });
    batches.set(domain, { batch: created, progress });
  }
  const { batch, progress } = batches.get(domain)!;
  batch.join(canonical);
  const linked = linkSignals(callOptions.signal, run.closing);
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
    return deadlineResult(run, canonical, domain, progress);
  } finally {
    linked.dispose();
  }
}

function resolveDomain(resolver: DomainResolver, domain: string): Promise<DomainResolution> {
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
