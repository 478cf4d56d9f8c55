import type { Database } from "../db/client.ts";
import { lastChargeOf } from "../db/queries/address-charges.ts";
import { findCachedVerification, type VerificationRecord } from "../db/queries/verifications.ts";
import type { RecentResults } from "./recent-results.ts";

/** What this node remembers of recent results and charges, backed by the tables. */
export class RealtimeMemory {
  constructor(
    private readonly db: Database,
    private readonly recent: RecentResults,
    private readonly cacheTtlMs: number,
  ) {}

  /**
   * When the user last paid for this address: from memory when that falls after `windowStart`,
   * else one indexed read.
   */
  async lastPaidAt(userId: string, email: string, windowStart: Date): Promise<Date | undefined> {
    const known = this.recent.lastCharge(userId, email);
    if (known !== undefined && known > windowStart) return known;
    const last = await lastChargeOf(this.db, userId, email);
    if (last) this.recent.rememberCharge(userId, email, last);
    return last ?? undefined;
  }

  /**
   * Memory first, then the table: the user's newest definitive result within the cache window,
   * and when the user last paid for the address (if known).
   */
  async cachedResult(
    userId: string,
    email: string,
    now: Date,
  ): Promise<{ record: VerificationRecord | null; lastChargedAt: Date | undefined }> {
    const since = new Date(now.getTime() - this.cacheTtlMs);
    const remembered = this.recent.result(userId, email, since);
    if (remembered) return { record: remembered, lastChargedAt: this.recent.lastCharge(userId, email) };
    const mark = this.recent.mark();
    const { record, lastChargedAt } = await findCachedVerification(this.db, userId, email, since);
    if (lastChargedAt) this.recent.rememberCharge(userId, email, lastChargedAt);
    if (record) this.recent.rememberResult(email, record, mark);
    return { record, lastChargedAt: lastChargedAt ?? undefined };
  }
}
