// The engine's entry point: syntax → disposable list → DNS → (PTR ∥ SMTP) → classification,
// cheapest first, returning as soon as a stage decides. A same-domain group shares one DNS
// resolution and one SMTP session.
import { setMaxListeners } from "node:events";
import { AbortedError, linkSignals, raceSignal } from "./abort.ts";
import { classifyMailbox, type CatchAllVerdict } from "./classify.ts";
import { createNodeDns } from "./dns.ts";
import { isDisposableDomain } from "./lists/disposable.ts";
import { isRoleAccount } from "./lists/role-accounts.ts";
import { defaultEngineOptions, type EngineOptions } from "./options.ts";
import { openHostGate, systemClock, type EnginePorts } from "./ports.ts";
import { detectServerType, providerTraits, type ServerType } from "./providers.ts";
import { DomainResolver, type DomainResolution } from "./resolve-domain.ts";
import { directConnect } from "./smtp/connect.ts";
import { classifyReply, type ReplyVerdict } from "./smtp/replies.ts";
import { runSession, type SessionReport } from "./smtp/session.ts";
import { createSocksConnect } from "./smtp/socks-connect.ts";
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
  /** Cancels running verifications (reason `cancelled`) and waits for open sessions to QUIT. */
  close(): Promise<void>;
}

const PROBE_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const PROBE_LENGTH = 20;

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
  const hostGate = ports.hostGate ?? openHostGate;
  const resolver = new DomainResolver({ dns, nowMs, random, cacheTtlMs: opts.dnsCacheTtlMs });
  const catchAllCache = new TtlCache<string, Exclude<CatchAllVerdict, "undecided">>(
    opts.catchallCacheTtlMs,
    nowMs,
  );
  const closing = new AbortController();
  // Every running verification listens on it; hundreds at once are normal for a worker.
  setMaxListeners(0, closing.signal);
  const winding = new Set<Promise<void>>();

  const sessionConfig = {
    port: opts.smtpPort,
    heloName: opts.smtpHeloName,
    mailFrom: opts.smtpMailFrom,
    connectTimeoutMs: opts.smtpConnectTimeoutMs,
    greetingTimeoutMs: opts.smtpGreetingTimeoutMs,
    commandTimeoutMs: opts.smtpCommandTimeoutMs,
    maxRcpt: opts.smtpMaxRcpt,
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

  /** Verifies unique canonical addresses of one syntactically valid domain. */
  async function verifyDomain(
    domain: string,
    canonicals: readonly string[],
    signal: AbortSignal,
  ): Promise<Map<string, VerificationResult>> {
    const results = new Map<string, VerificationResult>();
    const isDisposable = isDisposableDomain(domain);
    const facts = { hasMxRecords: false, hasReverseDns: false, hostName: "", serverType: "unknown" };
    const finish = (
      address: string,
      c: Pick<VerificationResult, "status" | "unknownReason" | "isCatchall" | "needsPhysicalVerify">,
    ): void => {
      results.set(address, {
        email: address,
        isRoleBased: isRoleAccount(address.slice(0, address.lastIndexOf("@"))),
        isDisposable,
        domainName: domain,
        ...facts,
        ...c,
        validatedAt: clock.now(),
      });
    };
    const finishAll = (
      status: VerificationResult["status"],
      unknownReason: UnknownReason | null,
    ): Map<string, VerificationResult> => {
      for (const a of canonicals)
        finish(a, { status, unknownReason, isCatchall: false, needsPhysicalVerify: false });
      return results;
    };

    if (isDisposable) return finishAll("disposable_domain", null);

    let resolution: DomainResolution;
    try {
      resolution = await raceSignal(resolver.resolve(domain), signal);
    } catch (error) {
      if (error instanceof AbortedError) return finishAll("unknown", abortReason("timeout_dns"));
      throw error;
    }
    facts.hasMxRecords = resolution.hasMxRecords;
    switch (resolution.kind) {
      case "no_mail":
        return finishAll("invalid", null);
      case "dns_error":
        return finishAll("unknown", "dns_error");
      case "dns_timeout":
        return finishAll("unknown", "dns_timeout");
      case "mail_hosts":
        break;
    }

    const hosts = resolution.hosts;
    const firstAddress = hosts[0]?.addresses[0];
    // PTR runs alongside SMTP: it never changes the verdict, so it shouldn't cost a round trip.
    const firstPtr =
      firstAddress === undefined ? Promise.resolve(false) : resolver.hasReverseDns(firstAddress);
    const ptrSeen: { value?: boolean } = {};
    firstPtr.then((v) => (ptrSeen.value = v)).catch(() => undefined);

    const cachedCatchAll = catchAllCache.get(domain);
    const probe = cachedCatchAll === undefined ? probeAddress(domain) : null;
    const recipients = probe === null ? canonicals : [probe, ...canonicals];
    const report = await runSession({ hosts, recipients, signal }, sessionConfig, { connect, hostGate });
    track(report.done);

    facts.hostName = report.hostName ?? "";
    const serverType: ServerType = detectServerType(
      [...(report.hostName === null ? [] : [report.hostName]), ...hosts.map((h) => h.name)],
      [report.greeting, report.ehlo],
    );
    facts.serverType = serverType;
    const verdicts = new Map<string, ReplyVerdict>();
    for (const [address, reply] of report.replies) verdicts.set(address, classifyReply(reply));
    const catchAll =
      cachedCatchAll ??
      decideCatchAll(
        probe === null ? undefined : verdicts.get(probe),
        canonicals.map((a) => verdicts.get(a)),
      );
    if (cachedCatchAll === undefined && catchAll !== "undecided") catchAllCache.set(domain, catchAll);

    facts.hasReverseDns = await reverseDnsOf(report, firstAddress, firstPtr, signal, ptrSeen.value);
    const failure = report.failure === null ? null : relabelAbort(report.failure.reason);
    const provider = providerTraits(serverType);
    for (const address of canonicals) {
      finish(
        address,
        classifyMailbox({
          verdict: verdicts.get(address) ?? null,
          sessionFailure: failure,
          catchAll,
          provider,
        }),
      );
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
        if (!p.ok) continue;
        const list = byDomain.get(p.domain) ?? [];
        if (!list.includes(p.canonical)) list.push(p.canonical);
        byDomain.set(p.domain, list);
      }
      const answers = new Map<string, VerificationResult>();
      for (const [d, canonicals] of byDomain) {
        if (canonicals.length === 0) continue;
        for (const [address, result] of await verifyDomain(d, canonicals, linked.signal))
          answers.set(address, result);
      }
      return parsed.map((p, i) => {
        if (!p.ok) return syntaxFailure(addresses[i] ?? "");
        const answer = answers.get(p.canonical);
        if (answer === undefined) throw new Error(`no result for ${p.canonical}`);
        return { ...answer };
      });
    } finally {
      linked.dispose();
    }
  }

  function syntaxFailure(input: string): VerificationResult {
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
    };
  }

  return {
    async verifyOne(address, callOptions) {
      const parsed = checkSyntax(address);
      if (!parsed.ok) return syntaxFailure(address);
      const [result] = await verifyGroup(parsed.domain, [parsed.canonical], callOptions);
      if (result === undefined) throw new Error("verifyGroup returned no result");
      return { ...result };
    },
    verifyGroup,
    checkSyntax,
    resolveDomain: (domain) => {
      const d = checkDomainSyntax(domain);
      return resolver.resolve(d.ok ? d.domain : domain.trim().toLowerCase());
    },
    async close() {
      closing.abort();
      await Promise.all([...winding]);
      resolver.clear();
      catchAllCache.clear();
    },
  };
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
