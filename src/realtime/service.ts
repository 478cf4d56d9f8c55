import type { Principal } from "../auth/principal.ts";
import { attributionOf } from "../auth/principal.ts";
import type { Database } from "../db/client.ts";
import { lastChargeOf } from "../db/queries/address-charges.ts";
import { chargeRealtime } from "../db/queries/realtime-charge.ts";
import { findUser } from "../db/queries/users.ts";
import { insertVerification, type VerificationRecord } from "../db/queries/verifications.ts";
import { notFound } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import {
  decidedByEvidence,
  isSandboxAddress,
  type DependencyFailure,
  type Engine,
  type VerificationResult,
} from "../verify/index.ts";
import { decideRealtimeCharge, freeRepeatWindowStart, realtimeChargeKey } from "./charge-rules.ts";
import { createInFlightLimiter } from "./in-flight.ts";
import { readRealtimeEmail } from "./realtime-input.ts";
import { recordOfResult, resultOfRecord } from "../db/verification-record.ts";
import { RealtimeMemory } from "./realtime-memory.ts";
import type { RecentResults } from "./recent-results.ts";

export interface RealtimeVerificationOptions {
  /** Deadline of one verification (VERIFY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Reuse window of a definitive result (0 = always verify afresh). */
  cacheTtlMs: number;
  /**
   * Distinct addresses one user may have in fresh verification at once, in this process
   * (VERIFY_MAX_IN_FLIGHT_PER_USER); beyond it 429 RATE_LIMITED. Cached answers do not count.
   */
  maxInFlightPerUser: number;
  /** Told of fresh results that the server's other answers, not their wording, decided. */
  onEvidenceDecision?: (result: VerificationResult) => void;
  /** This node's memory of recent results and charges (realtime/recent-results.ts). */
  recent: RecentResults;
  /**
   * True for the engine's "no free per-host session slot within the wait" (the cluster-wide
   * politeness gate, politeness/host-gate.ts). The composition root supplies it: jobs/ is above us.
   */
  isHostBusy?: (error: unknown) => boolean;
}

/**
 * A finished verification, one cut short by the deadline (its partial, unbilled record), or a
 * refusal: the caller cannot pay, has too many addresses in flight, or our own resolvers or proxy
 * failed (nothing charged, nothing stored). The HTTP route maps each to its status code.
 */
export type RealtimeOutcome =
  | { kind: "done"; record: VerificationRecord }
  | { kind: "timed_out"; record: VerificationRecord }
  | { kind: "insufficient_credits" }
  | { kind: "too_many_in_flight"; limit: number; retryAfterSeconds: number }
  | { kind: "dependency_failed"; failure: DependencyFailure };

/** The refusals of RealtimeOutcome. */
type Refusal = Exclude<RealtimeOutcome, { record: VerificationRecord }>;

const INSUFFICIENT: Refusal = { kind: "insufficient_credits" };

export interface RealtimeService {
  /** Verifies one address for the caller and bills it per the spec's rules. */
  verifyRealtime(principal: Principal, rawEmail: string): Promise<RealtimeOutcome>;
}

const TIMEOUT_REASONS = new Set(["timeout_dns", "timeout_smtp"]);

/** Retry-After of a request refused for too many in flight: most verifications end within seconds. */
const IN_FLIGHT_RETRY_AFTER_SECONDS = 1;

/** Bound on engine runs of one request; see runEngine (each one but the last waited out a slot). */
const MAX_ENGINE_RUNS = 4;

export function createRealtimeService(
  db: Database,
  clock: Clock,
  engine: Engine,
  opts: RealtimeVerificationOptions,
): RealtimeService {
  return new RealtimeVerifications(db, clock, engine, opts);
}

/** The realtime use case: sandbox, cached answer or fresh run, each billed per the spec's rules. */
class RealtimeVerifications implements RealtimeService {
  private readonly inFlight: ReturnType<typeof createInFlightLimiter>;
  private readonly memory: RealtimeMemory;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly engine: Engine,
    private readonly opts: RealtimeVerificationOptions,
  ) {
    this.inFlight = createInFlightLimiter(opts.maxInFlightPerUser);
    this.memory = new RealtimeMemory(db, opts.recent, opts.cacheTtlMs);
  }

  async verifyRealtime(principal: Principal, rawEmail: string): Promise<RealtimeOutcome> {
    const input = readRealtimeEmail(rawEmail);
    // Parsed once: the canonical form keys the cache, the free-repeat window and the charge.
    const syntax = this.engine.checkSyntax(input);
    const email = syntax.ok ? syntax.canonical : input.toLowerCase();
    let stored: VerificationRecord | Refusal;
    if (isSandboxAddress(email)) {
      stored = await this.verifySandbox(principal, input);
    } else {
      const cached =
        this.opts.cacheTtlMs > 0 && syntax.ok
          ? await this.memory.cachedResult(principal.userId, email, this.clock.now())
          : null;
      stored = cached?.record
        ? await this.serveCached(principal, email, cached.record, cached.lastChargedAt)
        : await this.verifyFresh(principal, input, email);
    }
    if (isRefusal(stored)) return stored;
    const timedOut = stored.unknownReason !== null && TIMEOUT_REASONS.has(stored.unknownReason);
    return { kind: timedOut ? "timed_out" : "done", record: stored };
  }

  /**
   * Sandbox addresses (verify/sandbox.ts) are free and answered without the network: no balance
   * needed, no cache, no in-flight slot, never a ledger row.
   */
  private async verifySandbox(principal: Principal, input: string): Promise<VerificationRecord> {
    const result = await this.engine.verifyOne(input);
    return insertVerification(this.db, recordOfResult(result, contextOf(principal, false, this.clock.now())));
  }

  /** A cached answer: free within the window (no write at all), else charged in one statement. */
  private async serveCached(
    principal: Principal,
    email: string,
    cached: VerificationRecord,
    lastChargedAt: Date | undefined,
  ): Promise<VerificationRecord | Refusal> {
    const now = this.clock.now();
    if (decideRealtimeCharge({ now, lastChargedAt }) === "free") return cached;
    const mark = this.opts.recent.mark();
    const record = recordOfResult(resultOfRecord(cached), contextOf(principal, true, now));
    const charged = await chargeRecord(this.db, this.opts.recent, principal, email, record, false);
    if (!charged) return cached;
    if (isRefusal(charged)) return charged;
    this.opts.recent.rememberResult(email, charged, mark);
    return charged;
  }

  /** A fresh verification, started only for a caller who can pay (or repeats a paid address). */
  private async verifyFresh(
    principal: Principal,
    input: string,
    email: string,
  ): Promise<VerificationRecord | Refusal> {
    const refusal = await this.refusalBeforeRun(principal.userId, email);
    if (refusal) return refusal;
    const release = this.inFlight.tryAcquire(principal.userId, email);
    if (!release) {
      const limit = this.opts.maxInFlightPerUser;
      return { kind: "too_many_in_flight", limit, retryAfterSeconds: IN_FLIGHT_RETRY_AFTER_SECONDS };
    }
    let result: VerificationResult;
    try {
      result = await runEngine(this.engine, input, this.opts);
    } finally {
      release();
    }
    // Our own resolvers or proxy failed, not the address's domain: the spec's 424, before any
    // charge or stored result, so a retry once they are back verifies afresh.
    if (result.dependencyFailure) return { kind: "dependency_failed", failure: result.dependencyFailure };
    if (decidedByEvidence(result.evidence)) this.opts.onEvidenceDecision?.(result);
    return this.storeFresh(principal, email, result);
  }

  /**
   * Everything but a free repeat would end in a refused charge: refused before the SMTP session.
   * When the user last paid matters only to a caller who cannot pay: only then is it looked up.
   */
  private async refusalBeforeRun(userId: string, email: string): Promise<Refusal | null> {
    const user = await findUser(this.db, userId);
    if (!user) throw notFound("User");
    const before = this.clock.now();
    const lastChargedAt =
      user.balance < 1
        ? await this.memory.lastPaidAt(userId, email, freeRepeatWindowStart(before))
        : undefined;
    return decideRealtimeCharge({ now: before, lastChargedAt, balance: user.balance }) === "refuse"
      ? INSUFFICIENT
      : null;
  }

  /** A fresh result stored, and charged unless it is unknown or a payment known here makes it free. */
  private async storeFresh(
    principal: Principal,
    email: string,
    result: VerificationResult,
  ): Promise<VerificationRecord | Refusal> {
    const { recent } = this.opts;
    const now = this.clock.now();
    const mark = recent.mark();
    const record = recordOfResult(result, contextOf(principal, false, now));
    const known = recent.lastCharge(principal.userId, email);
    const stored =
      decideRealtimeCharge({ now, lastChargedAt: known, status: result.status }) === "free"
        ? await insertVerification(this.db, record)
        : (await chargeRecord(this.db, recent, principal, email, record, true))!;
    if (isRefusal(stored)) return stored;
    recent.rememberResult(email, stored, mark);
    return stored;
  }
}

const contextOf = (principal: Principal, fromCache: boolean, at: Date) => ({
  id: newId(),
  userId: principal.userId,
  origin: "realtime" as const,
  source: principal.source,
  apiKeyId: principal.apiKeyId,
  taskId: null,
  creditTransactionId: null,
  fromCache,
  createdAt: at,
});

/**
 * Charges for `record` unless the address was paid within the window, in one statement
 * (db/queries/realtime-charge.ts). A fresh result is stored either way; a cached one only with
 * a charge (a free repeat of a stored result is that result, and writes nothing).
 */
async function chargeRecord(
  db: Database,
  recent: RecentResults,
  principal: Principal,
  email: string,
  record: VerificationRecord,
  fresh: boolean,
): Promise<VerificationRecord | null | Refusal> {
  const at = record.createdAt;
  const outcome = await chargeRealtime(db, {
    userId: principal.userId,
    email,
    at,
    freeRepeatWindowStart: freeRepeatWindowStart(at),
    transactionId: newId(),
    metadata: { ...attributionOf(principal), verification_id: record.id },
    idempotencyKey: realtimeChargeKey(email, at),
    record,
    storeWhenFree: fresh,
  });
  switch (outcome.kind) {
    case "insufficient":
      return INSUFFICIENT;
    case "charged":
      recent.rememberCharge(principal.userId, email, at);
      return outcome.record;
    case "free": {
      // Paid meanwhile (another request or node): learn when, so the next repeat stays in memory.
      const last = await lastChargeOf(db, principal.userId, email);
      if (last) recent.rememberCharge(principal.userId, email, last);
      if (outcome.record || !fresh) return outcome.record;
      return insertVerification(db, record);
    }
  }
}

/**
 * The engine within this request's deadline. The per-host slot gate gives up when its next pause
 * would pass its own wait limit (VERIFY_TIMEOUT_MS from when the domain's batch began waiting):
 * up to 250 ms before the first caller's deadline, and seconds before the deadline of a caller
 * who joined the batch later. Its HostBusyError used to surface as a 500 right after a restart,
 * when the dead process's slots stay held until their lease ends. Such a caller runs the engine
 * again with the time it has left, so it ends like any caller whose deadline passed while waiting
 * for a slot: the 408 partial result (`timeout_smtp`, not charged), or its result if a slot frees
 * meanwhile. Not a 429: the client did nothing too often, and the host is no less busy at once.
 */
async function runEngine(
  engine: Engine,
  input: string,
  opts: Pick<RealtimeVerificationOptions, "timeoutMs" | "isHostBusy">,
): Promise<VerificationResult> {
  const signal = AbortSignal.timeout(opts.timeoutMs);
  for (let run = 1; ; run++) {
    try {
      return await engine.verifyOne(input, { signal });
    } catch (error) {
      if (!(opts.isHostBusy?.(error) ?? false) || run >= MAX_ENGINE_RUNS) throw error;
    }
  }
}

// A record always has an id; a refusal never does.
const isRefusal = (x: VerificationRecord | Refusal): x is Refusal => !("id" in x);
