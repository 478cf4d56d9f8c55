import type { JobRecord } from "../db/queries/jobs.ts";
import { HostBusyError, SlotsUnavailableError } from "../politeness/host-gate.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../observability/logger.ts";
import {
  decidedByEvidence,
  PaceRefusal,
  providerOf,
  type Engine,
  type VerificationResult,
} from "../verify/index.ts";
import type { RetrySchedules } from "./backoff.ts";
import { canaryVerdict, outcomesOfHeldBack, splitCanary } from "./deferral-canary.ts";
import type { DomainHosts } from "./domain-hosts.ts";
import { CROWDED_HOST_DOMAINS, FIRST_TOUCH_SIZE, mayCutToFirstTouch } from "./first-touch.ts";
import type { HostLearning } from "./host-learning.ts";
import type { IdleWait } from "./idle-wait.ts";
import {
  outcomeOfResult,
  outcomesOfFailure,
  outcomesOfUntried,
  type GroupFailure,
  type JobOutcome,
} from "./outcomes.ts";

export interface GroupVerifierDeps {
  engine: Engine;
  clock: Clock;
  log: Logger;
  learning: HostLearning;
  hosts: DomainHosts;
  /** Woken when a session frees a host: that host has a slot for the domains a claim skipped. */
  idle: IdleWait;
  schedules: RetrySchedules;
  maxAttempts: number;
  /** Aborted when the pool's drain deadline passes: running sessions are cut short. */
  sessions: AbortSignal;
}

/**
 * Verifies a claimed group in SMTP sessions and says what became of each job; records nothing.
 * What it learns on the way (where each domain is served, which host just freed a slot) goes to
 * the pool's shared HostLearning and DomainHosts.
 */
export class GroupVerifier {
  constructor(private readonly deps: GroupVerifierDeps) {}

  /**
   * Every job's outcome: a first touch at a crowded host asks only its first addresses and hands
   * the rest back (first-touch.ts); a deferring domain's retry asks its canaries first, and the
   * others follow them, take the step unasked, or wait untried (deferral-canary.ts).
   */
  async outcomesOf(jobs: JobRecord[]): Promise<JobOutcome[]> {
    const { clock, schedules } = this.deps;
    const later =
      mayCutToFirstTouch(jobs) && (await this.atCrowdedHost(jobs[0]!.domain))
        ? jobs.slice(FIRST_TOUCH_SIZE)
        : [];
    const { ask, held } = splitCanary(later.length > 0 ? jobs.slice(0, FIRST_TOUCH_SIZE) : jobs);
    const asked = await this.verify(ask);
    const verdict = held.length > 0 ? canaryVerdict(asked) : "inconclusive";
    const heldOutcomes =
      verdict === "through"
        ? await this.verify(held)
        : verdict === "held_back"
          ? outcomesOfHeldBack(held, clock.now(), schedules)
          : outcomesOfUntried(held);
    return [
      ...asked,
      ...heldOutcomes,
      ...outcomesOfUntried(later, { runAfter: clock.now(), countClaim: true }),
    ];
  }

  /**
   * Whether the domain's mail host serves at least CROWDED_HOST_DOMAINS other domains we know of
   * (first-touch.ts). The resolution is the engine's cached one, which the session reads next.
   */
  private async atCrowdedHost(domain: string): Promise<boolean> {
    const host = await this.deps.learning.learn(domain);
    return host !== null && this.deps.hosts.otherDomainsAt(host, domain) >= CROWDED_HOST_DOMAINS;
  }

  private async verify(jobs: JobRecord[]): Promise<JobOutcome[]> {
    const { engine, clock, schedules, learning, log } = this.deps;
    const domain = jobs[0]!.domain;
    const askedAt = clock.now();
    try {
      const results = await engine.verifyGroup(
        domain,
        jobs.map((j) => j.emailAddress),
        { signal: this.deps.sessions },
      );
      const now = clock.now();
      this.learnFrom(domain, results);
      return jobs.map((job, i) => outcomeOfResult(job, results[i]!, now, schedules, askedAt));
    } catch (error) {
      if (error instanceof HostBusyError) learning.taught(domain, error.host, null);
      if (error instanceof PaceRefusal) learning.taught(domain, error.host, error.provider);
      const failure = this.failureOf(error);
      if (failure.kind === "internal")
        log.error({ err: error, domain, jobs: jobs.length }, "verifying a group failed");
      return outcomesOfFailure(jobs, failure, clock.now(), this.deps.maxAttempts);
    }
  }

  /** Where the session found the domain served, and that its host has a slot free now. */
  private learnFrom(domain: string, results: readonly VerificationResult[]): void {
    for (const r of results) {
      // The wording alone would have said unknown: keep a trace of what decided instead.
      if (decidedByEvidence(r.evidence))
        this.deps.log.info({ domain, email: r.email, evidence: r.evidence }, "decided by evidence");
    }
    const asked = results.find((r) => r.hostAddress);
    const host = asked?.hostAddress;
    if (!host) return;
    this.deps.learning.taught(domain, host, providerOf(asked.hostName, host));
    this.deps.hosts.markFreed(host);
    // That host has a slot (and an idle connection) for the domains a claim skipped.
    this.deps.idle.wake();
  }

  private failureOf(error: unknown): GroupFailure {
    if (error instanceof HostBusyError)
      return error.isLocal
        ? { kind: "host_busy_locally" }
        : { kind: "host_busy_in_cluster", retryAt: error.retryAt };
    if (error instanceof SlotsUnavailableError) return { kind: "slots_unavailable" };
    // The provider's pace has no room: back when it has, untried and unbilled like at a busy host.
    if (error instanceof PaceRefusal) return { kind: "host_busy_in_cluster", retryAt: error.roomAt };
    if (this.deps.sessions.aborted) return { kind: "stopping" };
    return { kind: "internal", message: error instanceof Error ? error.message : String(error) };
  }
}
