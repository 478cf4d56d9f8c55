import { constraintOf, SQLSTATE, sqlState, type Queryable } from "../client.ts";
import {
  toVerificationRecord,
  verificationInsertParts,
  type VerificationRecord,
  type VerificationRow,
} from "./verifications.ts";

export interface RealtimeCharge {
  userId: string;
  /** The canonical address: the key of the free-repeat window. */
  email: string;
  at: Date;
  /** A charge is due only if the user's last payment for the address is at or before this. */
  freeRepeatWindowStart: Date;
  transactionId: string;
  /** Ledger attribution (who asked). */
  metadata: Record<string, string>;
  /** The rule-5 key: one charge per user, address and 5-minute window, whatever else happens. */
  idempotencyKey: string;
  /** The verification to store; its credit_transaction_id is set here when charged. */
  record: VerificationRecord;
  /** Store the record even when no charge is due (a fresh result), or only with a charge (cached). */
  storeWhenFree: boolean;
}

export type RealtimeChargeOutcome =
  /** Charged: balance, ledger row and verification written. */
  | { kind: "charged"; record: VerificationRecord }
  /** Paid within the window (here or on another node): no charge; `record` if it was stored. */
  | { kind: "free"; record: VerificationRecord | null }
  | { kind: "insufficient" };

/**
 * The whole charge in ONE statement (one round trip, atomic on its own): claim the address in
 * address_charges (only if its last payment is outside the window), take 1 credit, write the
 * ledger row with its idempotency key, and store the verification linked to it.
 *
 * Why it is exact: INSERT … ON CONFLICT DO UPDATE … WHERE decides on the newest committed version
 * of the row (a concurrent claimer's insert is waited for), so of N identical requests on any
 * nodes one claims and the others see its charged_at. The claim is only tried when the balance
 * the statement's snapshot shows is at least 1, so an empty balance is answered without an error.
 * The debit's UPDATE locks the balance row and re-reads it (newest version) before it writes; it
 * has no `balance >= 1` guard on purpose: should the balance have been spent meanwhile, it
 * violates the users balance check and the statement rolls back, claim included, so "claimed but
 * could not pay" never commits. A repeated idempotency key (a claim the table forgot, e.g. a
 * hand-edited row) likewise aborts the statement; it is answered as free, since that charge was
 * made.
 *
 * The UPDATE is the statement's only lock on the users row. An earlier version also read the
 * balance `FOR NO KEY UPDATE` first, to keep users before address_charges in the global lock
 * order. Under concurrency that deadlocked the statement with its own copies: the row lock
 * follows the update chain to the newest version, while the UPDATE starts again from the version
 * the snapshot saw and queues for that version's tuple lock, held by a copy waiting for us
 * (test/integration/faults/realtime-charge-contention.test.ts: 24–41 of 240 charges of one user
 * failed while batch writes share-locked the row). The price is the order: the claim now comes
 * before the balance lock. A transaction that holds a user's balance and then upserts one of that
 * user's address_charges rows (a result write with a late charge, through the email_verifications
 * trigger) closes a cycle with a realtime charge of that very address; PostgreSQL aborts one of the
 * two, the write is re-run by Database.transaction and the charge here (docs/locking.md).
 *
 * "Free" (not charged, and no reason to refuse): the claim found a payment within the window, or
 * the claim was not tried (no balance) and the snapshot shows such a payment.
 */
export async function chargeRealtime(q: Queryable, c: RealtimeCharge): Promise<RealtimeChargeOutcome> {
  try {
    return await chargeOnce(q, c);
  } catch (error) {
    // The rare cycle with a late-charging result write (above): the whole statement rolled back,
    // so running it once more is safe.
    if (sqlState(error) !== SQLSTATE.deadlockDetected) throw error;
    return chargeOnce(q, c);
  }
}

async function chargeOnce(q: Queryable, c: RealtimeCharge): Promise<RealtimeChargeOutcome> {
  const parts = verificationInsertParts(c.record, 9, {
    credit_transaction_id: "(select id from ledger)",
  });
  try {
    const { rows } = await q.query<VerificationRow & { mp_charged: number; mp_free: boolean }>(
      `with funded as (
         select coalesce((select balance >= 1 from users where id = $1), false) as ok
       ), claim as (
         insert into address_charges (user_id, email, charged_at)
         select $1, $2, $3 from funded where funded.ok
         on conflict (user_id, email) do update set charged_at = excluded.charged_at
           where address_charges.charged_at <= $4
         returning 1
       ), debit as (
         update users set balance = balance - 1, updated_at = $3
          where id = $1 and exists (select 1 from claim)
         returning balance
       ), ledger as (
         insert into credit_transactions
           (id, user_id, type, amount, balance_after, reason, metadata, idempotency_key, created_at)
         select $5, $1, 'deduction', -1, balance, 'verification', $6::jsonb, $7, $3 from debit
         returning id
       ), free as (
         select (funded.ok and not exists (select 1 from claim))
             or exists (select 1 from address_charges
                         where user_id = $1 and email = $2 and charged_at > $4) as yes
           from funded
       ), stored as (
         insert into email_verifications (${parts.columns})
         select ${parts.selectList}
          where exists (select 1 from ledger) or ($8::boolean and (select yes from free))
         returning *
       )
       select stored.*, (select count(*)::int from debit) as mp_charged, (select yes from free) as mp_free
         from (values (1)) as one (x) left join stored on true`,
      [
        c.userId,
        c.email,
        c.at,
        c.freeRepeatWindowStart,
        c.transactionId,
        JSON.stringify(c.metadata),
        c.idempotencyKey,
        c.storeWhenFree,
        ...parts.params,
      ],
    );
    const row = rows[0]!;
    const record = row.id ? toVerificationRecord(row) : null;
    if (row.mp_charged === 1) return { kind: "charged", record: record! };
    return row.mp_free ? { kind: "free", record } : { kind: "insufficient" };
  } catch (error) {
    const state = sqlState(error);
    if (state === SQLSTATE.checkViolation && /balance/.test(constraintOf(error) ?? ""))
      return { kind: "insufficient" };
    if (state === SQLSTATE.uniqueViolation && /idempotency/.test(constraintOf(error) ?? ""))
      return { kind: "free", record: null };
    throw error;
  }
}
