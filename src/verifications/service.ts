import type { Principal } from "../auth/principal.ts";
import { attributionOf } from "../auth/principal.ts";
import { deductCredits } from "../credits/ledger.ts";
import type { Database, Queryable } from "../db/client.ts";
import { findUser, lockUserBalance } from "../db/queries/users.ts";
import {
  findCachedVerification,
  hasPaidVerificationSince,
  insertVerification,
  type VerificationRecord,
} from "../db/queries/verifications.ts";
import { AppError, notFound } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import {
  decidedByEvidence,
  isSandboxAddress,
  type Engine,
  type VerificationResult,
} from "../verify/index.ts";
import { freeRepeatWindowStart, realtimeChargeKey } from "./charge-rules.ts";
import { createInFlightLimiter } from "./in-flight.ts";
import { readRealtimeEmail } from "./realtime-input.ts";
import { recordOfResult, resultOfRecord } from "./record-of-result.ts";

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
}

/** A finished verification, or one cut short by the deadline (its partial, unbilled record). */
export type RealtimeOutcome =
  { kind: "done"; record: VerificationRecord } | { kind: "timed_out"; record: VerificationRecord };

export interface VerificationsService {
  /** Verifies one address for the caller and bills it per the spec's rules. */
  verifyRealtime(principal: Principal, rawEmail: string): Promise<RealtimeOutcome>;
}

const TIMEOUT_REASONS = new Set(["timeout_dns", "timeout_smtp"]);

/** Retry-After of a request refused for too many in flight: most verifications end within seconds. */
const IN_FLIGHT_RETRY_AFTER_SECONDS = 1;

export function createVerificationsService(
  db: Database,
  clock: Clock,
  engine: Engine,
  opts: RealtimeVerificationOptions,
): VerificationsService {
  const inFlight = createInFlightLimiter(opts.maxInFlightPerUser);

  /** What the engine would call this address: the canonical key of caches, windows and charges. */
  const canonicalOf = (email: string): string => {
    const syntax = engine.checkSyntax(email);
    return syntax.ok ? syntax.canonical : email.toLowerCase();
  };

  async function assertCanPay(userId: string, email: string, now: Date): Promise<void> {
    const user = await findUser(db, userId);
    if (!user) throw notFound("User");
    if (user.balance >= 1) return;
    // A free repeat needs no balance; everything else would end in a refused charge anyway, so
    // refuse before spending an SMTP session on it.
    if (!(await hasPaidVerificationSince(db, userId, email, freeRepeatWindowStart(now)))) {
      throw new AppError("INSUFFICIENT_CREDITS", "Insufficient credits: a verification costs 1 credit");
    }
  }

  /**
   * A cached answer costs no SMTP, so it goes straight to the charging transaction (which refuses
   * an unpaid charge itself); a fresh verification is only started for a caller who can pay.
   */
  async function obtainResult(
    principal: Principal,
    input: string,
    canonical: string,
    now: Date,
  ): Promise<{ result: VerificationResult; cached: VerificationRecord | null }> {
    // Sandbox addresses (verify/sandbox.ts) are free and answered without the network: no
    // balance needed, no cache, no in-flight slot.
    if (isSandboxAddress(canonical)) return { result: await engine.verifyOne(input), cached: null };
    if (opts.cacheTtlMs > 0 && engine.checkSyntax(input).ok) {
      const cached = await findCachedVerification(
        db,
        principal.userId,
        canonical,
        new Date(now.getTime() - opts.cacheTtlMs),
      );
      if (cached) return { result: resultOfRecord(cached), cached };
    }
    await assertCanPay(principal.userId, canonical, now);
    const release = inFlight.tryAcquire(principal.userId, canonical);
    if (!release) {
      throw new AppError(
        "RATE_LIMITED",
        `Too many verifications in progress: at most ${opts.maxInFlightPerUser.toString()} addresses per account ` +
          "at once (VERIFY_MAX_IN_FLIGHT_PER_USER); retry when one has finished",
        undefined,
        { headers: { "retry-after": IN_FLIGHT_RETRY_AFTER_SECONDS.toString() } },
      );
    }
    let result: VerificationResult;
    try {
      result = await engine.verifyOne(input, { signal: AbortSignal.timeout(opts.timeoutMs) });
    } finally {
      release();
    }
    if (decidedByEvidence(result.evidence)) opts.onEvidenceDecision?.(result);
    return { result, cached: null };
  }

  /** Charges (unless free) and stores, in one transaction under the user's ledger lock. */
  async function record(
    tx: Queryable,
    principal: Principal,
    canonical: string,
    result: VerificationResult,
    cached: VerificationRecord | null,
    now: Date,
  ): Promise<VerificationRecord> {
    const id = newId();
    let creditTransactionId: string | null = null;
    // Sandbox addresses are never charged: no ledger row, whatever their status.
    if (result.status !== "unknown" && !isSandboxAddress(canonical)) {
      // The lock makes the free-repeat check and the charge one atomic decision: of N concurrent
      // identical requests, the first charges and the others then see its paid verification.
      await lockUserBalance(tx, principal.userId);
      const isFreeRepeat = await hasPaidVerificationSince(
        tx,
        principal.userId,
        canonical,
        freeRepeatWindowStart(now),
      );
      // A free repeat served from the user's own stored result is that result: nothing to store.
      if (isFreeRepeat && cached) return cached;
      if (!isFreeRepeat) {
        const outcome = await deductCredits(tx, {
          userId: principal.userId,
          amount: 1,
          reason: "verification",
          metadata: { ...attributionOf(principal), verification_id: id },
          idempotencyKey: realtimeChargeKey(canonical, now),
          at: now,
        });
        switch (outcome.kind) {
          case "applied":
          case "replayed":
            creditTransactionId = outcome.transaction.id;
            break;
          case "insufficient":
            throw new AppError("INSUFFICIENT_CREDITS", "Insufficient credits: a verification costs 1 credit");
          case "user_not_found":
            throw notFound("User");
        }
      }
    }
    return insertVerification(
      tx,
      recordOfResult(result, {
        id,
        userId: principal.userId,
        origin: "realtime",
        source: principal.source,
        apiKeyId: principal.apiKeyId,
        taskId: null,
        creditTransactionId,
        fromCache: cached !== null,
        createdAt: now,
      }),
    );
  }

  return {
    async verifyRealtime(principal, rawEmail) {
      const input = readRealtimeEmail(rawEmail);
      const canonical = canonicalOf(input);
      const { result, cached } = await obtainResult(principal, input, canonical, clock.now());
      const stored = await db.transaction((tx) =>
        record(tx, principal, canonical, result, cached, clock.now()),
      );
      const timedOut = stored.unknownReason !== null && TIMEOUT_REASONS.has(stored.unknownReason);
      return { kind: timedOut ? "timed_out" : "done", record: stored };
    },
  };
}
